// The errors the SDK throws.

import type { components } from "./schema.gen.js";

/**
 * An error answered by ferry: the HTTP status, ferry's error code (`InvalidParameter`, `NotAuthorizedOrNotFound`,
 * `TooManyRequests`, …), its message (naming the offending field) and the `opc-request-id` to quote when reporting
 * it. Watch errors that arrive in a frame rather than an HTTP answer have status 0.
 */
export class FerryError extends Error {
  /** The HTTP status (0 for an error answered in a watch frame). */
  readonly status: number;
  /** ferry's error code, e.g. `NotAuthorizedOrNotFound`. */
  readonly code: string;
  /** The `opc-request-id` of the answer, when there was one. */
  readonly opcRequestId: string | undefined;
  /** The `retry-after` header in seconds (429 and 503 answers). */
  readonly retryAfter: number | undefined;

  constructor(init: { status: number; code: string; message: string; opcRequestId?: string; retryAfter?: number }) {
    super(init.message);
    this.name = "FerryError";
    this.status = init.status;
    this.code = init.code;
    this.opcRequestId = init.opcRequestId;
    this.retryAfter = init.retryAfter;
  }

  /** Reads an error answer (`{code, message}` with `opc-request-id`); consumes the response's body. */
  static async fromResponse(response: Response): Promise<FerryError> {
    const text = await response.text().catch(() => "");
    return FerryError.fromAnswer(response.status, text, (name) => response.headers.get(name), response.statusText);
  }

  /** Reads an error answer from its parts: status, body, headers (by lower-case name). */
  static fromAnswer(status: number, text: string, header: (name: string) => string | null | undefined, statusText = "") {
    let body: Partial<components["schemas"]["Error"]> = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not ferry's JSON (a proxy's page): keep the text
    }
    return new FerryError({
      status,
      code: typeof body?.code === "string" ? body.code : `HTTP${status}`,
      message: typeof body?.message === "string" ? body.message : text.slice(0, 512) || statusText,
      opcRequestId: header("opc-request-id") ?? undefined,
      retryAfter: parseRetryAfter(header("retry-after") ?? null),
    });
  }
}

/** A work request that ended `FAILED` or `CANCELED`: its record and its errors (`GET /workRequests/{id}/errors`). */
export class WorkRequestFailedError extends Error {
  readonly workRequest: components["schemas"]["WorkRequest"];
  readonly errors: components["schemas"]["WorkRequestError"][];
  /** The first error's code, when the work request recorded one. */
  readonly code: string | undefined;

  constructor(workRequest: components["schemas"]["WorkRequest"], errors: components["schemas"]["WorkRequestError"][]) {
    const first = errors[0];
    super(
      `work request ${workRequest.id} (${workRequest.operationType}) ${workRequest.status}` +
        (first ? `: ${first.code}: ${first.message}` : ""),
    );
    this.name = "WorkRequestFailedError";
    this.workRequest = workRequest;
    this.errors = errors;
    this.code = first?.code;
  }
}

/** A watch that the server or the network closed (not by `close()`): the WebSocket close code and reason. */
export class WatchClosedError extends Error {
  readonly closeCode: number;
  readonly reason: string;

  constructor(closeCode: number, reason: string) {
    super(`watch closed: ${closeCode}${reason ? ` ${reason}` : ""}`);
    this.name = "WatchClosedError";
    this.closeCode = closeCode;
    this.reason = reason;
  }
}

/** Parses a `retry-after` header: seconds, or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value == null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}
