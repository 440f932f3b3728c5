// The client against a real ferry server: resources, messages, consumer groups, paging, errors, retry tokens.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { FerryError, isCreate } from "@ferry-mq/sdk";

import { client, createQueue, endpoint, tenancy, token, unique } from "./env.js";

const ferry = client();

/** A fetch that records the requests it sends. */
function recording() {
  const requests: Request[] = [];
  const fetch = (request: Request) => {
    requests.push(request.clone());
    return globalThis.fetch(request);
  };
  return { requests, fetch };
}

test("a queue: created (202 and a SUCCEEDED work request), read, updated with if-match, deleted (waitForWorkRequest)", async () => {
  const displayName = unique("lifecycle");
  const created = await ferry.POST("/20210201/queues", { body: { compartmentId: tenancy, displayName } });
  assert.equal(created.response.status, 202);
  assert.equal(created.data.displayName, displayName);
  const createWork = await ferry.waitForWorkRequest(created);
  assert.equal(createWork.operationType, "CREATE_QUEUE");
  assert.equal(createWork.status, "SUCCEEDED");

  const queueId = created.data.id;
  const got = await ferry.GET("/20210201/queues/{queueId}", { params: { path: { queueId } } });
  assert.equal(got.data.lifecycleState, "ACTIVE");
  const etag = got.response.headers.get("etag");
  assert.ok(etag);

  const updated = await ferry.PUT("/20210201/queues/{queueId}", {
    params: { path: { queueId }, header: { "if-match": etag } },
    body: { visibilityInSeconds: 60 },
  });
  assert.equal(updated.response.status, 202);
  assert.equal(updated.data.visibilityInSeconds, 60);
  await assert.rejects(
    ferry.PUT("/20210201/queues/{queueId}", {
      params: { path: { queueId }, header: { "if-match": etag } },
      body: { visibilityInSeconds: 61 },
    }),
    (err) => err instanceof FerryError && err.status === 412 && err.code === "NoEtagMatch",
  );

  const deleted = await ferry.DELETE("/20210201/queues/{queueId}", { params: { path: { queueId } } });
  assert.equal(deleted.response.status, 202);
  const work = await ferry.waitForWorkRequest(deleted.response.headers.get("opc-work-request-id")!, { timeoutMs: 30_000 });
  assert.equal(work.operationType, "DELETE_QUEUE");
  assert.equal(work.status, "SUCCEEDED");
  assert.equal(work.resources[0]?.actionType, "DELETED");
});

test("messages: put, get, update visibility, delete, batch update and batch delete with their failures", async () => {
  const queue = await createQueue(ferry);
  const path = { queueId: queue.id };

  const put = await ferry.POST("/20210201/queues/{queueId}/messages", {
    params: { path },
    body: {
      messages: [
        { content: "one", attributes: { n: 1, kind: "a" } },
        { content: "two", metadata: { customProperties: { origin: "sdk" } } },
        { content: "three" },
      ],
    },
  });
  assert.equal(put.data.messages.length, 3);

  const got = await ferry.GET("/20210201/queues/{queueId}/messages", {
    params: { path, query: { limit: 3, timeoutInSeconds: 0 } },
  });
  const byContent = new Map(got.data.messages.map((m) => [m.content, m]));
  assert.deepEqual([...byContent.keys()].sort(), ["one", "three", "two"]);
  const [one, two, three] = ["one", "two", "three"].map((c) => byContent.get(c)!);
  assert.deepEqual(one!.attributes, { n: 1, kind: "a" });
  assert.deepEqual(two!.metadata?.customProperties, { origin: "sdk" });

  // Extend one's lease, then acknowledge it.
  const extended = await ferry.PUT("/20210201/queues/{queueId}/messages/{messageReceipt}", {
    params: { path: { ...path, messageReceipt: one!.receipt } },
    body: { visibilityInSeconds: 120 },
  });
  assert.ok(Date.parse(extended.data.visibleAfter) > Date.now() + 100_000);
  const deleted = await ferry.DELETE("/20210201/queues/{queueId}/messages/{messageReceipt}", {
    params: { path: { ...path, messageReceipt: one!.receipt } },
  });
  assert.equal(deleted.response.status, 204);

  // Release two at once (visibility 0); a malformed receipt fails on its own, as a client failure.
  const updated = await ferry.POST("/20210201/queues/{queueId}/messages/actions/updateMessages", {
    params: { path },
    body: {
      entries: [
        { receipt: two!.receipt, visibilityInSeconds: 0 },
        { receipt: "not-a-receipt", visibilityInSeconds: 0 },
      ],
    },
  });
  assert.equal(updated.data.clientFailures, 1);
  assert.equal(updated.data.serverFailures, 0);
  assert.equal(updated.data.entries[0]?.id, two!.id);
  assert.equal(updated.data.entries[1]?.errorCode, 400);
  assert.equal(updated.data.entries[1]?.code, "InvalidParameter");

  // two is delivered again, with a new receipt: the old one is stale.
  const again = await ferry.GET("/20210201/queues/{queueId}/messages", {
    params: { path, query: { limit: 5, timeoutInSeconds: 0 } },
  });
  assert.equal(again.data.messages.length, 1);
  const twoAgain = again.data.messages[0]!;
  assert.equal(twoAgain.id, two!.id);
  assert.equal(twoAgain.deliveryCount, 2);

  const batch = await ferry.POST("/20210201/queues/{queueId}/messages/actions/deleteMessages", {
    params: { path },
    body: { entries: [{ receipt: two!.receipt }, { receipt: three!.receipt }] },
  });
  assert.equal(batch.data.clientFailures, 1);
  assert.equal(batch.data.serverFailures, 0);
  assert.equal(batch.data.entries[0]?.errorCode, 409);
  assert.equal(batch.data.entries[0]?.code, "Conflict");
  assert.deepEqual(batch.data.entries[1], {});
  const last = await ferry.POST("/20210201/queues/{queueId}/messages/actions/deleteMessages", {
    params: { path },
    body: { entries: [{ receipt: twoAgain.receipt }] },
  });
  assert.deepEqual(last.data, { clientFailures: 0, serverFailures: 0, entries: [{}] });

  const stats = await ferry.GET("/20210201/queues/{queueId}/stats", { params: { path } });
  assert.equal(stats.data.queue.visibleMessages, 0);
  assert.equal(stats.data.queue.inFlightMessages, 0);
});

test("consumer groups: a filtered group receives only what its filter selects", async () => {
  const queue = await createQueue(ferry, { capabilities: [{ type: "CONSUMER_GROUPS" }] });
  const created = await ferry.POST("/20210201/consumerGroups", {
    body: { queueId: queue.id, displayName: "billing", filter: ':team = "billing" AND :amount > 100' },
  });
  assert.equal(created.response.status, 202);
  assert.equal((await ferry.waitForWorkRequest(created)).operationType, "CREATE_CONSUMER_GROUP");

  const put = await ferry.POST("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId: queue.id } },
    body: {
      messages: [
        { content: "big bill", attributes: { team: "billing", amount: 150 } },
        { content: "small bill", attributes: { team: "billing", amount: 50 } },
        { content: "ops", metadata: { customProperties: { team: "ops" } } },
      ],
    },
  });
  assert.deepEqual(
    put.data.messages.map((m) => m.consumerGroups),
    [2, 1, 1],
  );

  const billing = await ferry.GET("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId: queue.id }, query: { consumerGroupId: created.data.id, limit: 10, timeoutInSeconds: 0 } },
  });
  assert.deepEqual(
    billing.data.messages.map((m) => m.content),
    ["big bill"],
  );
  const primary = await ferry.GET("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId: queue.id }, query: { limit: 10, timeoutInSeconds: 0 } },
  });
  assert.equal(primary.data.messages.length, 3);

  const groups = [];
  for await (const g of ferry.paginate("/20210201/consumerGroups", { params: { query: { queueId: queue.id } } })) {
    groups.push(g.displayName);
  }
  assert.deepEqual(groups.sort(), ["billing", "primary"]);
});

test("paging: paginate follows opc-next-page through every page", async () => {
  const compartment = await ferry.POST("/20210201/compartments", {
    body: { compartmentId: tenancy, name: unique("paging"), description: "paging test" },
  });
  const names = ["a", "b", "c", "d", "e"].map((n) => `${n}-${unique("p")}`);
  for (const displayName of names) {
    await ferry.POST("/20210201/queues", { body: { compartmentId: compartment.data.id, displayName } });
  }
  const { requests, fetch } = recording();
  const paged = client({ fetch, token: async () => token }); // a token function, asked for each request
  const listed = [];
  for await (const q of paged.paginate("/20210201/queues", {
    params: { query: { compartmentId: compartment.data.id, limit: 2, sortBy: "displayName", sortOrder: "ASC" } },
  })) {
    listed.push(q.displayName);
  }
  assert.deepEqual(listed, names);
  assert.equal(requests.length, 3);
  assert.equal(requests[2]!.headers.get("authorization"), `Bearer ${token}`);
  assert.equal(new URL(requests[0]!.url).searchParams.get("page"), null);
  assert.ok(new URL(requests[1]!.url).searchParams.get("page"));

  const work = [];
  for await (const w of ferry.paginate("/20210201/workRequests", {
    params: { query: { compartmentId: compartment.data.id, limit: 2 } },
  })) {
    work.push(w.operationType);
  }
  assert.deepEqual(work, Array(5).fill("CREATE_QUEUE"));

  // Stopping early fetches no further page.
  requests.length = 0;
  for await (const _ of paged.paginate("/20210201/queues", {
    params: { query: { compartmentId: compartment.data.id, limit: 2 } },
  })) {
    break;
  }
  assert.equal(requests.length, 1);
});

test("errors are FerryErrors with status, code, message and opcRequestId, and 4xx are not retried", async () => {
  const { requests, fetch } = recording();
  const counted = client({ fetch });
  const missing = "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  await assert.rejects(
    counted.GET("/20210201/queues/{queueId}", {
      params: { path: { queueId: missing }, header: { "opc-request-id": "sdk-test-404" } },
    }),
    (err) => {
      assert.ok(err instanceof FerryError);
      assert.equal(err.status, 404);
      assert.equal(err.code, "NotAuthorizedOrNotFound");
      assert.equal(err.opcRequestId, "sdk-test-404");
      assert.ok(err.message.length > 0);
      return true;
    },
  );
  assert.equal(requests.length, 1);

  await assert.rejects(
    ferry.POST("/20210201/queues", { body: { compartmentId: tenancy, displayName: unique("bad"), retentionInSeconds: 1 } }),
    (err) => {
      assert.ok(err instanceof FerryError);
      assert.equal(err.status, 400);
      assert.equal(err.code, "InvalidParameter");
      assert.match(err.message, /retentionInSeconds/);
      assert.ok(err.opcRequestId);
      return true;
    },
  );

  await assert.rejects(
    client({ token: "not-a-jwt" }).GET("/20210201/queues", { params: { query: { compartmentId: tenancy } } }),
    (err) => err instanceof FerryError && err.status === 401 && err.code === "NotAuthenticated",
  );

  // A consumer group on a queue without CONSUMER_GROUPS: 409 IncorrectState, answered once.
  const queue = await createQueue(ferry);
  requests.length = 0;
  await assert.rejects(
    counted.POST("/20210201/consumerGroups", { body: { queueId: queue.id, displayName: "g" } }),
    (err) => err instanceof FerryError && err.status === 409 && err.code === "IncorrectState",
  );
  assert.equal(requests.length, 1);
});

test("opc-retry-token: sent on every create and only there, as isCreate says from openapi.yaml", async () => {
  // Every operation of the spec whose parameters include OpcRetryTokenHeader is a create, and nothing else is.
  const spec = readFileSync(new URL("../../../openapi.yaml", import.meta.url), "utf8").split("\n");
  const operations: { method: string; path: string; retryToken: boolean }[] = [];
  let path = "";
  for (const line of spec) {
    const p = /^  (\/\S+):$/.exec(line);
    if (p) path = p[1]!;
    const m = /^    (get|put|post|delete|patch):$/.exec(line);
    if (m && path) operations.push({ method: m[1]!.toUpperCase(), path, retryToken: false });
    if (line.includes("OpcRetryTokenHeader") && operations.length > 0 && !line.startsWith("    OpcRetryTokenHeader")) {
      operations[operations.length - 1]!.retryToken = true;
    }
  }
  assert.ok(operations.length > 40, `read ${operations.length} operations`);
  assert.equal(operations.filter((o) => o.retryToken).length, 5);
  for (const o of operations) {
    const url = endpoint + o.path.replace(/\{[^}]+\}/g, "x");
    assert.equal(isCreate(o.method, url), o.retryToken, `${o.method} ${o.path}`);
  }

  const { requests, fetch } = recording();
  const recorded = client({ fetch });
  const queue = await createQueue(recorded);
  await recorded.GET("/20210201/queues/{queueId}", { params: { path: { queueId: queue.id } } });
  assert.match(requests[0]!.headers.get("opc-retry-token") ?? "", /^[0-9a-f-]{36}$/);
  assert.equal(requests[1]!.headers.get("opc-retry-token"), null);

  // The same token and body answer the original queue.
  const body = { compartmentId: tenancy, displayName: unique("retry-token") };
  const header = { "opc-retry-token": unique("token") };
  const first = await ferry.POST("/20210201/queues", { params: { header }, body });
  const second = await ferry.POST("/20210201/queues", { params: { header }, body });
  assert.equal(second.data.id, first.data.id);
});

test("a create whose answer is lost is retried with the same opc-retry-token and creates once", async () => {
  // The server cannot lose its own answer: this fetch sends the request to it, then fails as a dropped connection
  // would, once.
  let dropped = 0;
  const lossy = client({
    retry: { baseDelayMs: 10 },
    fetch: async (request) => {
      const response = await globalThis.fetch(request);
      if (dropped++ === 0) throw new TypeError("fetch failed (the answer was lost)");
      return response;
    },
  });
  const displayName = unique("lost-answer");
  const queue = await createQueue(lossy, { displayName });
  assert.equal(dropped, 2);
  const same = [];
  for await (const q of ferry.paginate("/20210201/queues", { params: { query: { compartmentId: tenancy, displayName } } })) {
    same.push(q.id);
  }
  assert.deepEqual(same, [queue.id]);
});

test("connection errors are retried, then thrown", async () => {
  let tries = 0;
  const nowhere = client({
    endpoint: "http://127.0.0.1:1",
    retry: { attempts: 3, baseDelayMs: 10 },
    fetch: (request) => {
      tries++;
      return globalThis.fetch(request);
    },
  });
  await assert.rejects(nowhere.GET("/20210201/queues", { params: { query: { compartmentId: tenancy } } }), TypeError);
  assert.equal(tries, 3);
});

test("the built package keeps node-only code out of the browser path: no node: imports, ws loaded dynamically", () => {
  const dist = new URL("../../dist/", import.meta.url);
  for (const file of ["index.js", "client.js", "errors.js", "watch.js", "websocket.js", "schema.gen.js"]) {
    const code = readFileSync(new URL(file, dist), "utf8");
    assert.doesNotMatch(code, /from\s+["']node:|require\(|import\s+\S+\s+from\s+["']ws["']/, file);
  }
  const websocket = readFileSync(new URL("websocket.js", dist), "utf8");
  assert.match(websocket, /await import\("ws"\)/);
  const pkg = JSON.parse(readFileSync(new URL("../package.json", dist), "utf8")) as { browser: Record<string, unknown> };
  assert.deepEqual(pkg.browser, { ws: false });
});

test("queue metrics: the typed series of a queue, names repeated in the query, 5-minute buckets", async () => {
  const queueId = (await createQueue(ferry)).id;
  const { data } = await ferry.GET("/20210201/queues/{queueId}/metrics", {
    params: { path: { queueId }, query: { names: ["published", "visible"], resolution: "5m" } },
  });
  assert.equal(data.queueId, queueId);
  assert.equal(data.resolution, "5m");
  assert.deepEqual(data.items.map((s) => [s.name, s.kind, s.unit]), [
    ["published", "COUNTER", "messages"],
    ["visible", "GAUGE", "messages"],
  ]);
  const points = data.items[0]!.points;
  assert.ok(points.length >= 12 && points.length <= 13, `an hour of 5-minute buckets: ${points.length}`);
  assert.ok(points.every((p) => p.value === 0 && Date.parse(p.timestamp) % 300_000 === 0));
  await assert.rejects(
    ferry.GET("/20210201/queues/{queueId}/metrics", { params: { path: { queueId }, query: { start: "2020-01-01T00:00:00Z" } } }),
    (err) => err instanceof FerryError && err.status === 400 && err.code === "InvalidParameter",
  );
});
