// Retries of a real 429: a full queue (maxSizeInBytes) answers 429 TooManyRequests with retry-after 5.

import assert from "node:assert/strict";
import { test } from "node:test";

import { FerryError, type Client } from "@ferry-mq/sdk";

import { client, createQueue } from "./env.js";

const ferry = client();
const big = "x".repeat(200 * 1024);

async function put(c: Client, queueId: string, init: { signal?: AbortSignal } = {}) {
  return c.POST("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId } },
    body: { messages: [{ content: big }] },
    ...init,
  });
}

/** A queue of 1 MiB, filled until it answers 429. */
async function fullQueue(): Promise<string> {
  const queue = await createQueue(ferry, { maxSizeInBytes: 1 << 20 });
  const once = client({ retry: false });
  for (let i = 0; i < 20; i++) {
    try {
      await put(once, queue.id);
    } catch (err) {
      assert.ok(err instanceof FerryError && err.status === 429, String(err));
      return queue.id;
    }
  }
  throw new Error("the queue never filled");
}

test("429: thrown without retries, retried after retry-after until the queue has room", async () => {
  const queueId = await fullQueue();

  await assert.rejects(put(client({ retry: false }), queueId), (err) => {
    assert.ok(err instanceof FerryError);
    assert.equal(err.status, 429);
    assert.equal(err.code, "TooManyRequests");
    assert.equal(err.retryAfter, 5);
    assert.ok(err.opcRequestId);
    return true;
  });

  // A retrying put waits retry-after (5 s, far above its 100 ms backoff) before each new try; meanwhile a consumer
  // makes room. (ferry enforces a size it rescans in the background, at most every 2 s, when a put asks for it:
  // the probe below asks for it, so that the retry finds the room, or else the retry after it.)
  const answers: { status: number; at: number }[] = [];
  let first429: () => void;
  const refused = new Promise<void>((resolve) => (first429 = resolve));
  const retrying = client({
    fetch: async (request) => {
      const response = await globalThis.fetch(request);
      answers.push({ status: response.status, at: Date.now() });
      if (response.status === 429) first429();
      return response;
    },
  });
  const putting = put(retrying, queueId);
  await refused;
  const got = await ferry.GET("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId }, query: { limit: 10, timeoutInSeconds: 0 } },
  });
  await ferry.POST("/20210201/queues/{queueId}/messages/actions/deleteMessages", {
    params: { path: { queueId } },
    body: { entries: got.data.messages.map((m) => ({ receipt: m.receipt })) },
  });
  await new Promise((resolve) => setTimeout(resolve, 2100));
  await put(client({ retry: false }), queueId).catch(() => {});
  const { data } = await putting;
  assert.equal(data.messages.length, 1);
  const statuses = answers.map((a) => a.status);
  assert.equal(statuses.at(-1), 200);
  assert.ok(statuses.slice(0, -1).every((s) => s === 429) && statuses.length >= 2, String(statuses));
  for (let i = 1; i < answers.length; i++) {
    // The wait starts when the 429 arrives: the gap between answers is at least retry-after.
    assert.ok(answers[i]!.at - answers[i - 1]!.at >= 5000, `try ${i + 1} came ${answers[i]!.at - answers[i - 1]!.at} ms after a 429`);
  }
});

test("429: an abort ends the wait for retry-after", async () => {
  const queueId = await fullQueue();
  const started = Date.now();
  await assert.rejects(put(ferry, queueId, { signal: AbortSignal.timeout(300) }), (err) => {
    assert.equal((err as Error).name, "TimeoutError");
    return true;
  });
  assert.ok(Date.now() - started < 3000);
});
