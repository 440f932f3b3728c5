// ferry's TypeScript SDK in one file: create a queue, publish orders, consume them over a watch (commit on success,
// a negative acknowledgement on a thrown error), stop, and delete the queue.
//
//   FERRY_ENDPOINT=http://127.0.0.1:8080 FERRY_TOKEN=… FERRY_COMPARTMENT=ocid1.tenancy… node build/examples/quickstart.js
//
// (`make run` prints a token; the tenancy's OCID is also its root compartment's.)

import { createClient, FerryError, NegativeError } from "@ferry-mq/sdk";

const compartmentId = process.env.FERRY_COMPARTMENT ?? "";
const ferry = createClient({
  endpoint: process.env.FERRY_ENDPOINT ?? "http://127.0.0.1:8080",
  token: process.env.FERRY_TOKEN,
});

// Queue changes answer 202 with the queue; creating is done when it answers.
const { data: queue } = await ferry.POST("/20210201/queues", {
  body: { compartmentId, displayName: `orders-${Date.now()}`, deadLetterQueueDeliveryCount: 3 },
});
console.log(`queue ${queue.displayName}: ${queue.id}`);

const orders = [{ sku: "apple", qty: 3 }, { sku: "pear", qty: 1 }, { qty: 2 }];
await ferry.POST("/20210201/queues/{queueId}/messages", {
  params: { path: { queueId: queue.id } },
  body: { messages: orders.map((o) => ({ content: JSON.stringify(o), attributes: { qty: o.qty } })) },
});

// Consume until the good orders are handled; Ctrl-C stops too. Aborting finishes the message in hand and releases
// the others (Shutdown).
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
const waiting = new Set(["apple", "pear"]);
await ferry.consume(
  queue.id,
  async (message) => {
    const order = JSON.parse(message.content) as { sku?: string; qty: number };
    // A thrown error releases the message at once (kept as its lastNegative); after 3 deliveries it goes to the DLQ.
    if (!order.sku) throw new NegativeError("Invalid.Order", "no sku");
    console.log(`order: ${order.qty} × ${order.sku} (delivery ${message.deliveryCount})`);
    waiting.delete(order.sku);
    if (waiting.size === 0) stop.abort();
  },
  { signal: stop.signal, window: 10 },
);

// Errors are FerryErrors: status, code, message and the opc-request-id to quote.
try {
  await ferry.GET("/20210201/queues/{queueId}", { params: { path: { queueId: `${queue.id}x` } } });
} catch (err) {
  if (!(err instanceof FerryError)) throw err;
  console.log(`as expected: ${err.status} ${err.code} (opc-request-id ${err.opcRequestId})`);
}

// Deleting is asynchronous: follow its work request.
const deleted = await ferry.DELETE("/20210201/queues/{queueId}", { params: { path: { queueId: queue.id } } });
const work = await ferry.waitForWorkRequest(deleted);
console.log(`deleted: ${work.operationType} ${work.status}`);
