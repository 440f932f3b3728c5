// The session (the pasted token, kept in this tab's sessionStorage, never in a URL) and the SDK client over it.

import { createClient, FerryError, WorkRequestFailedError, type Client } from "@ferry-mq/sdk";

const tokenKey = "ferry.token";

/** What the console knows of the signed-in caller, read from the token's claims (the server verifies it). */
export interface Session {
  token: string;
  tenancyId: string;
  subject: string;
  groups: string[];
  expiresAt: number | undefined; // epoch ms
}

/** Reads a JWT's claims without verifying it (the API does): the tenancy, the subject, the groups. */
export function parseToken(token: string): Session {
  const parts = token.trim().split(".");
  if (parts.length !== 3) throw new Error("a token has three parts separated by dots (header.claims.signature)");
  let claims: { tenancy?: unknown; sub?: unknown; groups?: unknown; exp?: unknown };
  try {
    const b64 = parts[1]!.replace(/-/g, "+").replace(/_/g, "/");
    claims = JSON.parse(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)));
  } catch {
    throw new Error("the token's claims are not readable JSON");
  }
  if (typeof claims.tenancy !== "string" || claims.tenancy === "") throw new Error("the token names no tenancy");
  return {
    token: token.trim(),
    tenancyId: claims.tenancy,
    subject: typeof claims.sub === "string" ? claims.sub : "",
    groups: Array.isArray(claims.groups) ? claims.groups.filter((g): g is string => typeof g === "string") : [],
    expiresAt: typeof claims.exp === "number" ? claims.exp * 1000 : undefined,
  };
}

export function loadSession(): Session | undefined {
  const token = sessionStorage.getItem(tokenKey);
  if (!token) return undefined;
  try {
    return parseToken(token);
  } catch {
    sessionStorage.removeItem(tokenKey);
    return undefined;
  }
}

export function saveSession(s: Session | undefined): void {
  if (s) sessionStorage.setItem(tokenKey, s.token);
  else sessionStorage.removeItem(tokenKey);
}

/**
 * The client for a session. onUnauthenticated is called when the API answers 401 (an expired or revoked token):
 * the console then forgets the token and shows the sign-in form.
 */
export function clientFor(session: Session, onUnauthenticated: (e: FerryError) => void): Client {
  return createClient({
    endpoint: location.origin,
    token: session.token,
    retry: { attempts: 2 },
    fetch: async (request) => {
      const response = await fetch(request);
      if (response.status === 401) {
        const e = await FerryError.fromResponse(response.clone());
        onUnauthenticated(e);
      }
      return response;
    },
  });
}

/** An error as the console shows it: the API's code, message and opc-request-id when it came from the API. */
export interface Problem {
  code: string;
  message: string;
  opcRequestId?: string | undefined;
}

export function problemOf(e: unknown): Problem {
  if (e instanceof FerryError) return { code: e.code, message: e.message, opcRequestId: e.opcRequestId };
  if (e instanceof WorkRequestFailedError) return { code: e.code ?? "WorkRequestFailed", message: e.message };
  if (e instanceof Error) return { code: e.name, message: e.message };
  return { code: "Error", message: String(e) };
}

/** The duration in seconds as people read it: 42 s, 3 min, 2 h 5 min, 3 d. */
export function duration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d`;
}

export function count(n: number | undefined): string {
  return n === undefined ? "—" : n.toLocaleString("en-US");
}
