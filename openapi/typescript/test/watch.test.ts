// Watches (WebSocket push) against a real ferry server: consume's commit, negative and shutdown, the Watcher, and
// refused upgrades.

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { FerryError, NegativeError, type Client, type Message } from "@ferry-mq/sdk";
import WebSocket from "ws";

import { client, createQueue, unique } from "./env.js";

const ferry = client();

async function put(queueId: string, ...contents: string[]) {
  await ferry.POST("/20210201/queues/{queueId}/messages", {
    params: { path: { queueId } },
    body: { messages: contents.map((content) => ({ content })) },
  });
}

async function stats(queueId: string) {
  return (await ferry.GET("/20210201/queues/{queueId}/stats", { params: { path: { queueId } } })).data.queue;
}

test("consume commits what the handler returns from", async () => {
  const queue = await createQueue(ferry);
  await put(queue.id, "a", "b", "c");
  const stop = new AbortController();
  const seen: string[] = [];
  await ferry.consume(
    queue.id,
    async (m) => {
      seen.push(m.content);
      if (seen.length === 3) stop.abort();
    },
    { signal: stop.signal, window: 10 },
  );
  assert.deepEqual(seen.sort(), ["a", "b", "c"]);
  const s = await stats(queue.id);
  assert.equal(s.visibleMessages, 0);
  assert.equal(s.inFlightMessages, 0);
});

test("consume sends a negative with the thrown error's code: a NegativeError's, or Failed", async () => {
  const queue = await createQueue(ferry);
  await put(queue.id, "typed", "plain");
  const stop = new AbortController();
  const redelivered = new Map<string, Message>();
  await ferry.consume(
    queue.id,
    (m) => {
      if (m.deliveryCount === 1) {
        if (m.content === "typed") throw new NegativeError("Invalid.Format", "not JSON");
        throw new Error("boom");
      }
      redelivered.set(m.content, m);
      if (redelivered.size === 2) stop.abort();
    },
    { signal: stop.signal },
  );
  assert.deepEqual(redelivered.get("typed")?.lastNegative, { code: "Invalid.Format", reason: "not JSON" });
  assert.deepEqual(redelivered.get("plain")?.lastNegative, { code: "Failed", reason: "boom" });
  assert.equal(redelivered.get("plain")?.deliveryCount, 2);
  assert.throws(() => new NegativeError("not camel case"), TypeError);
});

test("consume, aborted, finishes the message in hand and releases the rest with Shutdown", async () => {
  const queue = await createQueue(ferry, { visibilityInSeconds: 300 });
  await put(queue.id, "1", "2", "3", "4", "5");
  const stop = new AbortController();
  const handled: string[] = [];
  const consumerId = unique("consumer");
  let held = 0;
  await ferry.consume(
    queue.id,
    async (m, { watcher }) => {
      if (handled.length === 0) {
        // Wait until the watch holds all five (window 10), then stop.
        while ((await stats(queue.id)).inFlightMessages < 5) await sleep(20);
        held = 5;
        stop.abort();
        assert.equal(watcher.consumerId, consumerId);
      }
      handled.push(m.content);
    },
    { signal: stop.signal, window: 10, consumerId },
  );
  assert.equal(held, 5);
  assert.equal(handled.length, 1);
  // The four released are visible now, not after the queue's 300 s visibility.
  const s = await stats(queue.id);
  assert.equal(s.visibleMessages, 4);
  assert.equal(s.inFlightMessages, 0);
  const consumers = await ferry.GET("/20210201/queues/{queueId}/consumers", { params: { path: { queueId: queue.id } } });
  const mine = consumers.data.items.filter((c) => c.id === consumerId);
  assert.ok(mine.every((c) => c.status !== "RUNNING"), JSON.stringify(mine));
});

test("a Watcher: hello, pushed messages, commit with entry errors, close", async () => {
  const queue = await createQueue(ferry);
  await put(queue.id, "x", "y");
  const watcher = await ferry.watch(queue.id, { window: 2 });
  assert.equal(watcher.window, 2);
  assert.equal(watcher.consumerGroupId, queue.id);
  assert.match(watcher.consumerId, /^watch-/);
  const got: Message[] = [];
  for await (const m of watcher) {
    got.push(m);
    if (got.length === 2) break;
  }
  const errors = await watcher.commit([got[0]!.receipt, "not-a-receipt", got[1]!.receipt]);
  assert.deepEqual(
    errors.map((e) => [e.index, e.code]),
    [[1, "InvalidParameter"]],
  );
  await watcher.close();
  await watcher.closed;
  for await (const _ of watcher) assert.fail("a closed watch yields nothing");
  assert.equal((await stats(queue.id)).visibleMessages, 0);
});

test("a watch's signal closes it; single active consumer: onStatus reports STANDBY, then RUNNING on takeover", async () => {
  const queue = await createQueue(ferry, { isSingleActiveConsumer: true });
  const stopActive = new AbortController();
  const active = await ferry.watch(queue.id, { consumerId: "active", signal: stopActive.signal });
  const statuses: string[] = [];
  let changed: () => void = () => {};
  const standby = await ferry.watch(queue.id, {
    consumerId: "standby",
    onStatus: (s) => {
      statuses.push(s);
      changed();
    },
  });
  const next = () => new Promise<void>((resolve) => (changed = resolve));
  if (statuses.length === 0) await next();
  assert.deepEqual(statuses, ["STANDBY"]);
  assert.equal(standby.status, "STANDBY");

  const takeover = next();
  stopActive.abort();
  await active.closed; // resolves: closed by its signal, not failed
  await takeover;
  assert.deepEqual(statuses, ["STANDBY", "RUNNING"]);
  await standby.close();
});

test("a refused watch is a FerryError: unknown queue (404), bad token (401), a consumer already watching (429)", async () => {
  const missing = "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  await assert.rejects(ferry.watch(missing), (err) => {
    assert.ok(err instanceof FerryError);
    assert.equal(err.status, 404);
    assert.equal(err.code, "NotAuthorizedOrNotFound");
    assert.ok(err.opcRequestId);
    return true;
  });
  const queue = await createQueue(ferry);
  await assert.rejects(
    client({ token: "not-a-jwt" }).watch(queue.id),
    (err) => err instanceof FerryError && err.status === 401 && err.code === "NotAuthenticated",
  );
  const consumerId = unique("busy");
  const first = await ferry.watch(queue.id, { consumerId });
  try {
    await assert.rejects(ferry.watch(queue.id, { consumerId }), (err) => {
      assert.ok(err instanceof FerryError);
      assert.equal(err.status, 429);
      assert.equal(err.code, "TooManyRequests");
      assert.ok((err.retryAfter ?? 0) > 0);
      return true;
    });
  } finally {
    await first.close();
  }
});

test("a WHATWG WebSocket (as in a browser) cannot send the token: the watch is refused with an explanation", async () => {
  const queue = await createQueue(ferry);
  const browserLike: Client = client({ WebSocket });
  await assert.rejects(browserLike.watch(queue.id), (err) => {
    assert.ok(err instanceof FerryError);
    assert.equal(err.code, "WatchRefused");
    assert.match(err.message, /Authorization header/);
    return true;
  });
});
