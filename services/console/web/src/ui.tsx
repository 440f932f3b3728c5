// Small building blocks every page uses: loading, empty and error states, and a hook for API calls.

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Client, WorkRequest } from "@ferry-mq/sdk";
import { problemOf, type Problem } from "./api.ts";

/** Shows an API error: its code, its message and the opc-request-id to quote when reporting it. */
export function ErrorBox({ problem, onRetry }: { problem: Problem; onRetry?: () => void }) {
  return (
    <div class="error" role="alert">
      <strong class="error-code">{problem.code}</strong> <span class="error-message">{problem.message}</span>
      {problem.opcRequestId && (
        <div class="error-id">
          opc-request-id: <code>{problem.opcRequestId}</code>
        </div>
      )}
      {onRetry && (
        <button type="button" class="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <div class="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> Loading {what}…
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <div class="empty-body">{children}</div>}
    </div>
  );
}

export type Async<T> =
  | { state: "loading"; value?: T }
  | { state: "ok"; value: T }
  | { state: "error"; problem: Problem; value?: T };

/**
 * Runs load when deps change (and on reload()); keeps the last value while reloading so that refreshing pages do
 * not flicker. every (ms) reloads it periodically while the page is shown.
 */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], every?: number) {
  const [result, setResult] = useState<Async<T>>({ state: "loading" });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    const ctl = new AbortController();
    setResult((r) => ({ state: "loading", value: r.value }));
    load(ctl.signal).then(
      (value) => !ctl.signal.aborted && setResult({ state: "ok", value }),
      (e) => !ctl.signal.aborted && setResult((r) => ({ state: "error", problem: problemOf(e), value: r.value })),
    );
    return () => ctl.abort();
  }, [...deps, tick]);
  useEffect(() => {
    if (!every) return;
    const id = setInterval(reload, every);
    return () => clearInterval(id);
  }, [every, reload]);
  return [result, reload] as const;
}

/** Renders an Async: a loading state the first time, the error (with the last value kept), or the value. */
export function Show<T>({ value, what, children, onRetry }: {
  value: Async<T>;
  what: string;
  onRetry?: () => void;
  children: (v: T) => ComponentChildren;
}) {
  return (
    <>
      {value.state === "error" && <ErrorBox problem={value.problem} onRetry={onRetry} />}
      {value.value !== undefined ? children(value.value) : value.state === "loading" ? <Loading what={what} /> : null}
    </>
  );
}

/** An action's state: running, failed (with the problem), or done (with a note). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>();
  const run = useCallback(async (f: () => Promise<unknown>) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await f();
      return true;
    } catch (e) {
      setProblem(problemOf(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, problem, run, clear: () => setProblem(undefined) };
}

/** Follows a work request to its end, showing its status and percentage. */
export function useWorkRequest(client: Client) {
  const [wr, setWr] = useState<WorkRequest | undefined>();
  const wait = useCallback(
    async (response: Response) => {
      const id = response.headers.get("opc-work-request-id");
      if (!id) return;
      for (;;) {
        const { data } = await client.GET("/20210201/workRequests/{workRequestId}", {
          params: { path: { workRequestId: id } },
        });
        setWr(data);
        if (data.status === "SUCCEEDED") return;
        if (data.status === "FAILED" || data.status === "CANCELED") {
          await client.waitForWorkRequest(id); // throws WorkRequestFailedError with its errors
          return;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    [client],
  );
  return { workRequest: wr, wait, reset: () => setWr(undefined) };
}

export function WorkRequestProgress({ wr }: { wr: WorkRequest | undefined }) {
  if (!wr) return null;
  return (
    <div class="workrequest" role="status" aria-live="polite">
      <span>
        Work request {wr.operationType}: <strong>{wr.status}</strong>
      </span>
      <progress max={100} value={wr.percentComplete} aria-label="work request progress" />
      <span>{Math.round(wr.percentComplete)} %</span>
    </div>
  );
}

/** Focuses the element once when it appears (dialogs, the first field of a form). */
export function useAutofocus<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}

/** A modal dialog: <dialog> with its built-in keyboard handling (Escape closes it, focus stays inside). */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    // The native close event (Escape, or close()) tells the owner, which then unmounts the dialog.
    const closed = () => closeRef.current();
    d.addEventListener("close", closed);
    if (!d.open) d.showModal();
    return () => {
      d.removeEventListener("close", closed);
      if (d.open) d.close();
    };
  }, []);
  return (
    <dialog ref={ref} aria-label={title}>
      <header class="dialog-head">
        <h2>{title}</h2>
        <button type="button" class="icon" aria-label="Close" onClick={() => ref.current?.close()}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  );
}
