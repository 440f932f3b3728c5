// createClient: the typed openapi-fetch client over the generated types, with what the raw client lacks for ferry:
// the bearer token, opc-retry-token on creates, retries, thrown typed errors, paging, work requests and watches.

import createFetchClient, { type MaybeOptionalInit, type ParseAsResponse } from "openapi-fetch";
import type {
  HttpMethod,
  MediaType,
  PathsWithMethod,
  Readable,
  RequiredKeysOf,
  ResponseObjectMap,
  SuccessResponse,
} from "openapi-typescript-helpers";

import { FerryError, WorkRequestFailedError, parseRetryAfter } from "./errors.js";
import type { components, paths } from "./schema.gen.js";
import { consume, openWatch, type ConsumeOptions, type MessageHandler, type WatchOptions, type Watcher } from "./watch.js";
import type { WebSocketConstructor } from "./websocket.js";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** ferry's base URL, e.g. `http://127.0.0.1:8080` (the paths carry their `/20210201` themselves). */
  endpoint: string;
  /** The bearer token (a JWT), or a function returning the current one, called for each request and watch. */
  token?: string | (() => string | Promise<string>);
  /** Retries of 429, 5xx and connection errors; `false` turns them off. */
  retry?: RetryOptions | false;
  /** The fetch to use (default: `globalThis.fetch`). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * A WHATWG `WebSocket` constructor for watches. By default Node uses the `ws` package (which sends the
   * `Authorization` header) and other runtimes `globalThis.WebSocket`, which cannot send it: see the README.
   */
  WebSocket?: WebSocketConstructor;
}

/** How {@link createClient} retries. Every request is retried, including POSTs: creates carry an `opc-retry-token`. */
export interface RetryOptions {
  /** The most tries of one request, the first included (default 5). */
  attempts?: number;
  /** The first backoff (default 100 ms); it doubles with each try, with jitter. */
  baseDelayMs?: number;
  /** The longest backoff (default 5000 ms). A longer `retry-after` is still respected. */
  maxDelayMs?: number;
}

// InitParam mirrors openapi-fetch's (not exported): the init argument is optional when nothing in it is required.
type InitParam<Init> =
  RequiredKeysOf<Init> extends never ? [(Init & { [key: string]: unknown })?] : [Init & { [key: string]: unknown }];

/**
 * The answer of a call: openapi-fetch's success branch (the client throws {@link FerryError} instead of answering
 * an error): the parsed body and the `Response` (for headers such as `opc-work-request-id`, `etag`).
 */
export type Success<Operation, Init> = {
  data: ParseAsResponse<Readable<SuccessResponse<ResponseObjectMap<Operation> & {}, MediaType>>, Init>;
  response: Response;
};

/**
 * A method of the client (`GET`, `POST`, `PUT`, `DELETE`): openapi-fetch's, answering `{data, response}` for a 2xx
 * and throwing {@link FerryError} otherwise.
 */
export type Method<M extends HttpMethod> = <
  Path extends PathsWithMethod<paths, M>,
  Init extends MaybeOptionalInit<paths[Path], M>,
>(
  url: Path,
  ...init: InitParam<Init>
) => Promise<Success<paths[Path][M], Init>>;

type JSONOf<Op> = Op extends { responses: { 200: { content: { "application/json": infer J } } } } ? J : never;
type ItemsOf<J> = J extends { items: (infer T)[] } ? T : J extends (infer T)[] ? T : never;
type HasPage<Op> = Op extends { parameters: { query?: infer Q } } ? ("page" extends keyof NonNullable<Q> ? true : false) : false;

/** The paths of the list operations (a GET with a `page` parameter). */
export type ListPath = {
  [P in keyof paths]: paths[P] extends { get: infer Op } ? (HasPage<Op> extends true ? P : never) : never;
}[keyof paths];

/** The item type of a list operation's answer. */
export type ListItem<P extends ListPath> = ItemsOf<JSONOf<paths[P]["get"]>>;

/** A work request, as `GET /20210201/workRequests/{id}` answers it. */
export type WorkRequest = components["schemas"]["WorkRequest"];

/** Options of {@link Client.waitForWorkRequest}. */
export interface WaitOptions {
  /** Stops waiting (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Rejects with a `TimeoutError` after this long (default: no limit). */
  timeoutMs?: number;
  /** The first pause between polls (default 100 ms); it grows to 2 s. */
  pollMs?: number;
}

/** The client {@link createClient} returns. */
export interface Client {
  /** The endpoint, without a trailing slash. */
  readonly endpoint: string;
  GET: Method<"get">;
  POST: Method<"post">;
  PUT: Method<"put">;
  DELETE: Method<"delete">;
  /**
   * Iterates over every item of a list operation, fetching the pages as it goes (`opc-next-page`); `limit` is the
   * size of a page. `for await (const q of client.paginate("/20210201/queues", {params: {query: {compartmentId}}}))`.
   */
  paginate<Path extends ListPath, Init extends MaybeOptionalInit<paths[Path], "get">>(
    url: Path,
    ...init: InitParam<Init>
  ): AsyncGenerator<ListItem<Path>, void, undefined>;
  /**
   * Polls a work request until it ends: answers it when `SUCCEEDED`, throws {@link WorkRequestFailedError} (with its
   * errors) when `FAILED` or `CANCELED`. Takes its id, or the answer of a 202 (its `opc-work-request-id` header).
   */
  waitForWorkRequest(
    workRequest: string | Response | { response: Response },
    options?: WaitOptions,
  ): Promise<WorkRequest>;
  /** Opens a watch (WebSocket push) on a queue's consumer group; see {@link Watcher}. */
  watch(queueId: string, options?: WatchOptions): Promise<Watcher>;
  /**
   * Consumes a queue's consumer group over a watch until `options.signal` aborts: each message is passed to
   * `handler`; it is committed when the handler returns, released with a negative acknowledgement when it throws
   * (code `Failed`, or a {@link NegativeError}'s code and reason). On abort, the message being handled is finished
   * and acknowledged, `Shutdown` releases the rest, and the promise resolves. It rejects when the watch fails.
   */
  consume(queueId: string, handler: MessageHandler, options?: ConsumeOptions): Promise<void>;
}

const defaultRetry: Required<RetryOptions> = { attempts: 5, baseDelayMs: 100, maxDelayMs: 5000 };

// A create is a POST on a collection, /VERSION/COLLECTION: CreateCompartment, CreateQueue, CreateConsumerGroup,
// CreatePolicy, IdentityCreateCompartment (test/retrytoken.test.ts checks this against openapi.yaml).
const createPath = /\/\d{8}\/[A-Za-z]+$/;

/** Tells whether a POST on this URL is a create (it accepts `opc-retry-token`). */
export function isCreate(method: string, url: string): boolean {
  return method.toUpperCase() === "POST" && createPath.test(new URL(url).pathname);
}

/** Creates a ferry client. */
export function createClient(options: ClientOptions): Client {
  const endpoint = options.endpoint.replace(/\/+$/, "");
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const retry = options.retry === false ? { ...defaultRetry, attempts: 1 } : { ...defaultRetry, ...options.retry };
  const token = async (): Promise<string | undefined> =>
    typeof options.token === "function" ? await options.token() : options.token;

  async function send(request: Request): Promise<Response> {
    const bearer = await token();
    if (bearer && !request.headers.has("authorization")) request.headers.set("authorization", `Bearer ${bearer}`);
    if (isCreate(request.method, request.url) && !request.headers.has("opc-retry-token")) {
      // The same token on every try: a create that succeeded but whose answer was lost answers its result again.
      request.headers.set("opc-retry-token", globalThis.crypto.randomUUID());
    }
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await baseFetch(attempt < retry.attempts ? request.clone() : request);
      } catch (err) {
        // fetch rejects with a TypeError when the connection fails, with the signal's reason when aborted.
        if (!(err instanceof TypeError) || request.signal.aborted || attempt >= retry.attempts) throw err;
        await sleep(backoff(retry, attempt), request.signal);
        continue;
      }
      if (response.ok) return response;
      const retryable = response.status === 429 || (response.status >= 500 && response.status !== 501);
      if (!retryable || attempt >= retry.attempts) throw await FerryError.fromResponse(response);
      const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
      await response.body?.cancel();
      await sleep(Math.max(backoff(retry, attempt), (retryAfter ?? 0) * 1000), request.signal);
    }
  }

  const raw = createFetchClient<paths>({ baseUrl: endpoint, fetch: send });

  const client: Client = {
    endpoint,
    // The raw methods never answer an error: send throws it.
    GET: raw.GET as Method<"get">,
    POST: raw.POST as Method<"post">,
    PUT: raw.PUT as Method<"put">,
    DELETE: raw.DELETE as Method<"delete">,

    async *paginate(url, ...[init]) {
      const base = (init ?? {}) as { params?: { query?: Record<string, unknown> } };
      let page: string | undefined;
      do {
        const params = { ...base.params, query: { ...base.params?.query, ...(page ? { page } : {}) } };
        const { data, response } = await raw.GET(url as ListPath, { ...base, params } as never);
        const items: unknown = Array.isArray(data) ? data : (data as { items?: unknown[] } | undefined)?.items;
        yield* (items ?? []) as ListItem<typeof url>[];
        page = response.headers.get("opc-next-page") ?? undefined;
      } while (page);
    },

    async waitForWorkRequest(workRequest, { signal, timeoutMs, pollMs = 100 } = {}) {
      const id = workRequestId(workRequest);
      const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
      for (let pause = pollMs; ; pause = Math.min(pause * 1.5, 2000)) {
        const { data } = await client.GET("/20210201/workRequests/{workRequestId}", {
          params: { path: { workRequestId: id } },
          signal,
        });
        if (data.status === "SUCCEEDED") return data;
        if (data.status === "FAILED" || data.status === "CANCELED") {
          const errors: components["schemas"]["WorkRequestError"][] = [];
          for await (const e of client.paginate("/20210201/workRequests/{workRequestId}/errors", {
            params: { path: { workRequestId: id } },
            signal,
          })) {
            errors.push(e);
          }
          throw new WorkRequestFailedError(data, errors);
        }
        if (deadline !== undefined && Date.now() + pause > deadline) {
          throw new DOMException(`work request ${id} is still ${data.status} after ${timeoutMs} ms`, "TimeoutError");
        }
        await sleep(pause, signal);
      }
    },

    async watch(queueId, watchOptions = {}) {
      return openWatch({ endpoint, token: await token(), WebSocket: options.WebSocket }, queueId, watchOptions);
    },

    consume(queueId, handler, consumeOptions = {}) {
      return consume(client, queueId, handler, consumeOptions);
    },
  };
  return client;
}

function workRequestId(ref: string | Response | { response: Response }): string {
  if (typeof ref === "string") return ref;
  const response = ref instanceof Response ? ref : ref.response;
  const id = response.headers.get("opc-work-request-id");
  if (!id) throw new TypeError(`the answer (${response.status} ${response.url}) has no opc-work-request-id header`);
  return id;
}

function backoff(retry: Required<RetryOptions>, attempt: number): number {
  const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

/** Waits ms milliseconds; rejects with the signal's reason when it aborts. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
