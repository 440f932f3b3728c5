// The watch protocol (WatchMessages in openapi.yaml, docs/api.md "Watch (push)"); mirrors the Go client,
// openapi/sdk/watch.go.

import { FerryError, WatchClosedError } from "./errors.js";
import type { components } from "./schema.gen.js";
import { openSocket, type Socket, type WebSocketConstructor } from "./websocket.js";

/** A message as GetMessages and watches deliver it. */
export type Message = components["schemas"]["GetMessage"];

/** A consumer's status, as the server announces it: `RUNNING`, `STANDBY` (single active consumer) or `LEAVING`. */
export type ConsumerStatus = "RUNNING" | "STANDBY" | "LEAVING" | (string & {});

/** Options of a watch. */
export interface WatchOptions {
  /** The consumer group: its OCID or its displayName (default: the primary group). */
  consumerGroupId?: string;
  /** The consumer's id (`X-Ferry-Consumer-Id`; default: the server generates one). Not sent by a browser. */
  consumerId?: string;
  /** The most messages held unacknowledged, 1..1000 (default: the server's, 100). */
  window?: number;
  /** Acknowledge each message as it is sent (at most once delivery). */
  autoCommit?: boolean;
  /** A channel id, or a prefix ending in `*`. */
  channelFilter?: string;
  /** Aborting closes the watch (before it opened: the open rejects). */
  signal?: AbortSignal;
  /** Called when the server announces a status change (`STANDBY`, `RUNNING`, `LEAVING`). */
  onStatus?: (status: ConsumerStatus) => void;
}

/** A commit or negative entry that failed (the entries not listed succeeded). */
export interface WatchEntryError {
  /** The entry's index in the frame. */
  index: number;
  code: string;
  message: string;
}

interface Reply {
  id?: string;
  errors?: WatchEntryError[];
  error?: { code: string; message: string };
}

interface Frame {
  consumerId?: string;
  consumerGroupId?: string;
  window?: number;
  autoCommit?: boolean;
  messages?: Message[];
  status?: string;
  reply?: Reply;
  error?: { code: string; message: string };
}

/** Where and how a watch connects. */
export interface WatchConnection {
  endpoint: string;
  token: string | undefined;
  WebSocket: WebSocketConstructor | undefined;
}

/**
 * An open watch: iterate it (`for await (const m of watcher)`) for the pushed messages, acknowledge them with
 * `commit`, release them with `negative`. The server never pushes more than `window` unacknowledged messages.
 * The iteration ends when the watch is closed, and throws when the watch fails.
 */
export class Watcher implements AsyncIterable<Message> {
  /** The consumer's id (the one given, or the server's). */
  readonly consumerId: string;
  /** The consumer group's OCID. */
  readonly consumerGroupId: string;
  readonly window: number;
  readonly autoCommit: boolean;
  /** The consumer's last announced status. */
  status: ConsumerStatus = "RUNNING";
  /** Settles when the watch ends: resolves after `close()`, rejects with why it failed otherwise. */
  readonly closed: Promise<void>;

  #socket: Socket;
  #buffer: Message[] = [];
  #waiting: (() => void)[] = [];
  #replies = new Map<string, { resolve: (r: Reply) => void; reject: (e: unknown) => void }>();
  #nextId = 0;
  #closing = false;
  #ended: { error?: unknown } | undefined;
  #settle!: { resolve: () => void; reject: (e: unknown) => void };
  #onStatus: ((status: ConsumerStatus) => void) | undefined;

  /** @internal Use `client.watch`. */
  constructor(socket: Socket, hello: Frame, onStatus?: (status: ConsumerStatus) => void) {
    this.#socket = socket;
    this.consumerId = hello.consumerId ?? "";
    this.consumerGroupId = hello.consumerGroupId ?? "";
    this.window = hello.window ?? 0;
    this.autoCommit = hello.autoCommit ?? false;
    this.#onStatus = onStatus;
    this.closed = new Promise<void>((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    this.closed.catch(() => {}); // observed through the iteration, or by whoever awaits it
  }

  /** Acknowledges messages; answers the entries that failed. */
  commit(receipts: string[]): Promise<WatchEntryError[]> {
    return this.#send({ commit: receipts });
  }

  /**
   * Releases messages now (they are delivered again, to any consumer of the group, with their delivery count one
   * higher), keeping the code (CamelCase words with an optional `.Detail`, or a number) and reason on them.
   */
  negative(receipts: string[], code: string, reason?: string): Promise<WatchEntryError[]> {
    return this.#send({ negative: receipts, code, ...(reason ? { reason } : {}) });
  }

  /** Stops the pushing to this consumer and releases every message it holds; the watch stays open until `close`. */
  async shutdown(): Promise<void> {
    await this.negative([], "Shutdown");
  }

  /** Closes the watch; the server releases the messages the consumer holds at once. */
  async close(): Promise<void> {
    if (!this.#ended) {
      this.#closing = true;
      this.#socket.close(1000);
    }
    await this.closed.catch(() => {});
  }

  /** The pushed messages, until the watch closes or `signal` aborts (which ends the iteration, not the watch). */
  async *messages(signal?: AbortSignal): AsyncGenerator<Message, void, undefined> {
    const wake = () => this.#wake();
    signal?.addEventListener("abort", wake);
    try {
      for (;;) {
        if (signal?.aborted) return;
        const next = this.#buffer.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (this.#ended) {
          if (this.#ended.error !== undefined) throw this.#ended.error;
          return;
        }
        await new Promise<void>((resolve) => this.#waiting.push(resolve));
      }
    } finally {
      signal?.removeEventListener("abort", wake);
    }
  }

  [Symbol.asyncIterator](): AsyncGenerator<Message, void, undefined> {
    return this.messages();
  }

  #wake() {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) w();
  }

  async #send(frame: Record<string, unknown>): Promise<WatchEntryError[]> {
    if (this.#ended) throw this.#ended.error ?? new WatchClosedError(1000, "closed");
    const id = String(++this.#nextId);
    const reply = new Promise<Reply>((resolve, reject) => this.#replies.set(id, { resolve, reject }));
    this.#socket.send(JSON.stringify({ ...frame, id }));
    const r = await reply;
    if (r.error) throw new FerryError({ status: 0, code: r.error.code, message: r.error.message });
    return r.errors ?? [];
  }

  /** @internal A frame from the server. */
  receive(text: string) {
    let f: Frame;
    try {
      f = JSON.parse(text) as Frame;
    } catch {
      return;
    }
    if (f.reply) {
      const waiter = this.#replies.get(f.reply.id ?? "");
      this.#replies.delete(f.reply.id ?? "");
      waiter?.resolve(f.reply);
    } else if (f.status) {
      this.status = f.status;
      this.#onStatus?.(f.status);
    } else if (f.messages) {
      this.#buffer.push(...f.messages);
      this.#wake();
    }
    // An error frame answers a frame the server could not read; nothing waits for it.
  }

  /** @internal The socket closed. */
  end(code: number, reason: string) {
    if (this.#ended) return;
    const error = this.#closing ? undefined : new WatchClosedError(code, reason);
    this.#ended = { error };
    for (const waiter of this.#replies.values()) waiter.reject(error ?? new WatchClosedError(code, reason));
    this.#replies.clear();
    if (error) this.#settle.reject(error);
    else this.#settle.resolve();
    this.#wake();
  }
}

/** Opens a watch: resolves once the server's first frame arrived. */
export async function openWatch(conn: WatchConnection, queueId: string, options: WatchOptions): Promise<Watcher> {
  const query = new URLSearchParams();
  if (options.consumerGroupId) query.set("consumerGroupId", options.consumerGroupId);
  if (options.window !== undefined) query.set("window", String(options.window));
  if (options.autoCommit) query.set("autoCommit", "true");
  if (options.channelFilter) query.set("channelFilter", options.channelFilter);
  const url =
    conn.endpoint.replace(/^http/, "ws") +
    `/20210201/queues/${encodeURIComponent(queueId)}/messages/watch` +
    (query.toString() ? `?${query}` : "");
  const headers: Record<string, string> = {};
  if (conn.token) headers.authorization = `Bearer ${conn.token}`;
  if (options.consumerId) headers["x-ferry-consumer-id"] = options.consumerId;

  // The first frame is the hello; the frames that follow it before the watcher exists (a messages frame often
  // comes at once) wait in early, and go to the watcher when it is made.
  let watcher: Watcher | undefined;
  let hello: { resolve: (f: Frame) => void; reject: (e: unknown) => void } | undefined;
  const helloFrame = new Promise<Frame>((resolve, reject) => (hello = { resolve, reject }));
  let gotHello = false;
  const early: string[] = [];
  let closedEarly: { code: number; reason: string } | undefined;
  const socket = await openSocket(
    url,
    headers,
    {
      message(text) {
        if (watcher) return watcher.receive(text);
        if (gotHello) return void early.push(text);
        gotHello = true;
        try {
          hello?.resolve(JSON.parse(text) as Frame);
        } catch {
          hello?.reject(new Error(`watch: unexpected first frame ${text.slice(0, 200)}`));
        }
      },
      close(code, reason) {
        if (watcher) return watcher.end(code, reason);
        closedEarly = { code, reason };
        hello?.reject(new WatchClosedError(code, reason));
      },
    },
    options.signal,
    conn.WebSocket,
  );
  const onAbort = () => socket.terminate();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  let first: Frame;
  try {
    first = await helloFrame;
  } catch (err) {
    socket.terminate();
    options.signal?.removeEventListener("abort", onAbort);
    throw options.signal?.aborted ? options.signal.reason : err;
  }
  options.signal?.removeEventListener("abort", onAbort);
  if (!first.consumerId) {
    socket.terminate();
    throw new Error(`watch: unexpected first frame ${JSON.stringify(first).slice(0, 200)}`);
  }
  watcher = new Watcher(socket, first, options.onStatus);
  for (const text of early) watcher.receive(text);
  if (closedEarly) watcher.end(closedEarly.code, closedEarly.reason);
  if (options.signal) {
    const w = watcher;
    const close = () => void w.close();
    if (options.signal.aborted) close();
    else options.signal.addEventListener("abort", close, { once: true });
    void w.closed.finally(() => options.signal?.removeEventListener("abort", close)).catch(() => {});
  }
  return watcher;
}

/**
 * Thrown by a {@link MessageHandler}: releases the message with this code (CamelCase words with an optional
 * `.Detail`, e.g. `Timeout` or `Invalid.Format`, or a number; at most 20 characters) and reason.
 */
export class NegativeError extends Error {
  readonly code: string;
  readonly reason: string;

  constructor(code: string, reason = "") {
    if (!validNegativeCode(code)) {
      throw new TypeError(`NegativeError: code ${JSON.stringify(code)} is not CamelCase words with an optional .Detail, or a number (at most 20 characters)`);
    }
    super(`${code}: ${reason}`);
    this.name = "NegativeError";
    this.code = code;
    this.reason = reason;
  }
}

const negativeCode = /^([A-Z][a-z]*)+(\.[A-Z][a-z]*)?$|^[0-9]+$/;
const maxNegativeCode = 20;
const maxNegativeReason = 1024; // bytes

function validNegativeCode(code: string): boolean {
  return code.length <= maxNegativeCode && negativeCode.test(code) && code !== "Shutdown";
}

/** What a {@link MessageHandler} is given besides the message. */
export interface HandlerContext {
  /** The consume's signal: aborted when the consumer is asked to stop. */
  signal: AbortSignal;
  watcher: Watcher;
}

/**
 * Handles one message of {@link Client.consume}: returning (or resolving) commits it; throwing releases it with a
 * negative acknowledgement (a {@link NegativeError}'s code and reason, or code `Failed` with the error's message).
 */
export type MessageHandler = (message: Message, context: HandlerContext) => unknown;

/** Options of {@link Client.consume}. */
export interface ConsumeOptions extends Omit<WatchOptions, "autoCommit" | "signal"> {
  /** Aborting stops the consumer: the message in hand is finished, `Shutdown` releases the rest. */
  signal?: AbortSignal;
}

/** The client's consume (see {@link Client.consume}). */
export async function consume(
  client: { watch(queueId: string, options?: WatchOptions): Promise<Watcher> },
  queueId: string,
  handler: MessageHandler,
  options: ConsumeOptions,
): Promise<void> {
  const { signal: given, ...watchOptions } = options;
  const signal = given ?? new AbortController().signal;
  if (signal.aborted) return;
  const watcher = await client.watch(queueId, watchOptions);
  try {
    for await (const message of watcher.messages(signal)) {
      let failure: unknown;
      let failed = false;
      try {
        await handler(message, { signal, watcher });
      } catch (err) {
        failure = err;
        failed = true;
      }
      if (!failed) {
        await watcher.commit([message.receipt]);
      } else {
        const { code, reason } = negativeOf(failure);
        await watcher.negative([message.receipt], code, reason);
      }
    }
    if (signal.aborted) await watcher.shutdown();
  } finally {
    await watcher.close();
  }
}

function negativeOf(err: unknown): { code: string; reason: string } {
  if (err instanceof NegativeError) return { code: err.code, reason: truncate(err.reason) };
  const reason = err instanceof Error ? err.message : String(err);
  return { code: "Failed", reason: truncate(reason) };
}

/** Cuts a reason to the server's limit, in bytes of UTF-8, without splitting a character. */
function truncate(reason: string): string {
  const bytes = new TextEncoder().encode(reason);
  if (bytes.length <= maxNegativeReason) return reason;
  return new TextDecoder().decode(bytes.slice(0, maxNegativeReason)).replace(/\uFFFD$/, "");
}
