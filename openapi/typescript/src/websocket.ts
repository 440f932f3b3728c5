// The WebSocket under a watch: the `ws` package in Node (loaded only there, so that browser bundles never import
// it), where the Authorization header can be sent; a WHATWG WebSocket (the browser's) elsewhere, which cannot.

import { FerryError } from "./errors.js";

/** The part of a WHATWG `WebSocket` constructor a watch uses (the browser's, or e.g. `ws`'s). */
export interface WebSocketConstructor {
  new (url: string): WhatwgWebSocket;
}

/**
 * The part of a WHATWG `WebSocket` a watch uses. (The handlers take `any` so that the browser's and `ws`'s
 * classes, whose event types differ, both fit.)
 */
export interface WhatwgWebSocket {
  onopen: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** An open socket. */
export interface Socket {
  send(text: string): void;
  close(code: number, reason?: string): void;
  /** Drops the connection without a close handshake. */
  terminate(): void;
}

/** What a socket reports after it opened. */
export interface SocketEvents {
  message(text: string): void;
  close(code: number, reason: string): void;
}

/** The largest frame a watch reads: 128 messages of up to 256 KiB, as the Go client allows. */
const maxFrame = 64 << 20;

const isNode = typeof globalThis.process === "object" && typeof globalThis.process?.versions?.node === "string";

/**
 * Opens a WebSocket with these headers (only where they can be sent: see {@link WebSocketConstructor}); rejects
 * with a {@link FerryError} when the server refuses the upgrade.
 */
export async function openSocket(
  url: string,
  headers: Record<string, string>,
  events: SocketEvents,
  signal: AbortSignal | undefined,
  WebSocket: WebSocketConstructor | undefined,
): Promise<Socket> {
  signal?.throwIfAborted();
  if (WebSocket === undefined && isNode) return openNode(url, headers, events, signal);
  const Impl = WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Impl === undefined) throw new TypeError("no WebSocket: pass createClient({WebSocket}) in this runtime");
  return openWhatwg(Impl, url, events, signal);
}

async function openNode(
  url: string,
  headers: Record<string, string>,
  events: SocketEvents,
  signal: AbortSignal | undefined,
): Promise<Socket> {
  const { default: WS } = await import("ws");
  const ws = new WS(url, { headers, maxPayload: maxFrame });
  return new Promise<Socket>((resolve, reject) => {
    let opened = false;
    let failure: Error | undefined;
    const onAbort = () => {
      failure ??= signal?.reason as Error;
      ws.terminate();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.on("unexpected-response", (req, res) => {
      // The upgrade was refused: the answer is ferry's error ({code,message}, opc-request-id).
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const header = (name: string) => {
          const v = res.headers[name];
          return Array.isArray(v) ? v.join(", ") : v;
        };
        failure ??= FerryError.fromAnswer(res.statusCode ?? 0, Buffer.concat(chunks).toString("utf8"), header, res.statusMessage);
        req.destroy();
        ws.terminate();
      });
    });
    ws.on("error", (err) => {
      failure ??= err;
    });
    ws.on("open", () => {
      opened = true;
      signal?.removeEventListener("abort", onAbort);
      resolve({
        send: (text) => ws.send(text),
        close: (code, reason) => ws.close(code, reason),
        terminate: () => ws.terminate(),
      });
    });
    ws.on("message", (data: Buffer, isBinary: boolean) => {
      if (!isBinary) events.message(data.toString("utf8"));
    });
    ws.on("close", (code: number, reason: Buffer) => {
      signal?.removeEventListener("abort", onAbort);
      if (opened) events.close(code, reason.toString("utf8"));
      else reject(failure ?? new Error(`watch: the connection closed before it opened (${code})`));
    });
  });
}

function openWhatwg(
  Impl: WebSocketConstructor,
  url: string,
  events: SocketEvents,
  signal: AbortSignal | undefined,
): Promise<Socket> {
  const ws = new Impl(url);
  return new Promise<Socket>((resolve, reject) => {
    let opened = false;
    const onAbort = () => {
      ws.close();
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.onopen = () => {
      opened = true;
      signal?.removeEventListener("abort", onAbort);
      resolve({
        send: (text) => ws.send(text),
        close: (code, reason) => ws.close(code, reason),
        terminate: () => ws.close(),
      });
    };
    ws.onerror = () => {}; // a close follows, which says what there is to say
    ws.onmessage = (event: { data: unknown }) => {
      if (typeof event.data === "string") events.message(event.data);
    };
    ws.onclose = (event: { code: number; reason: string }) => {
      signal?.removeEventListener("abort", onAbort);
      if (opened) {
        events.close(event.code, event.reason);
        return;
      }
      // A WHATWG WebSocket shows nothing of a refused upgrade (no status, no body). The likeliest reason: it cannot
      // send the Authorization header, and ferry authenticates a watch by that header only.
      reject(
        new FerryError({
          status: 0,
          code: "WatchRefused",
          message:
            "the watch's WebSocket could not be opened; a browser's WebSocket cannot send the Authorization header " +
            "that ferry authenticates watches with (use a proxy that adds it, or watch from a server)",
        }),
      );
    };
  });
}
