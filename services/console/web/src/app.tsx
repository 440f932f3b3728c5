// The console's shell: sign-in, the hash router (#/…: the token never appears in a URL), the header and the
// compartment tree beside every page.

import { useEffect, useMemo, useState } from "preact/hooks";
import type { Client, FerryError } from "@ferry-mq/sdk";
import { clientFor, loadSession, parseToken, saveSession, type Session } from "./api.ts";
import { CompartmentTree } from "./compartments.tsx";
import { Policies } from "./policies.tsx";
import { QueuePage } from "./queue.tsx";
import { QueueList } from "./queues.tsx";
import { useAutofocus } from "./ui.tsx";

/** The route, read from location.hash: #/, #/compartments/ID, #/queues/ID[/TAB], #/policies[/ID]. */
export interface Route {
  page: "queues" | "queue" | "policies";
  id?: string;
  tab?: string;
}

export function parseRoute(hash: string): Route {
  const [, page, id, tab] = hash.replace(/^#/, "").split("/").map(decodeURIComponent);
  if (page === "queues" && id) return { page: "queue", id, tab };
  if (page === "policies") return { page: "policies", id };
  if (page === "compartments" && id) return { page: "queues", id };
  return { page: "queues" };
}

export const href = {
  compartment: (id: string) => `#/compartments/${encodeURIComponent(id)}`,
  queue: (id: string, tab?: string) => `#/queues/${encodeURIComponent(id)}${tab ? `/${tab}` : ""}`,
  policies: (id?: string) => `#/policies${id ? `/${encodeURIComponent(id)}` : ""}`,
};

function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    on(); // the hash may have changed between the first render and this effect
    return () => removeEventListener("hashchange", on);
  }, []);
  return parseRoute(hash);
}

export function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const [ended, setEnded] = useState<string | undefined>();
  const signOut = (why?: string) => {
    saveSession(undefined);
    setSession(undefined);
    setEnded(why);
  };
  // A token that expires while the tab is open signs out then, not at the next failed call.
  useEffect(() => {
    if (!session?.expiresAt) return;
    const id = setTimeout(() => signOut("Your token expired. Paste a new token to go on."),
      Math.min(Math.max(0, session.expiresAt - Date.now()), 2 ** 31 - 1));
    return () => clearTimeout(id);
  }, [session]);
  const client = useMemo(
    () =>
      session &&
      clientFor(session, (e: FerryError) =>
        signOut(`Your session ended (${e.code}: ${e.message}). Paste a new token to go on.`),
      ),
    [session],
  );
  if (!session || !client) {
    return (
      <SignIn
        notice={ended}
        onSignIn={(s) => {
          saveSession(s);
          setEnded(undefined);
          setSession(s);
        }}
      />
    );
  }
  return <Shell session={session} client={client} onSignOut={() => signOut()} />;
}

function SignIn({ notice, onSignIn }: { notice?: string; onSignIn: (s: Session) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | undefined>();
  const input = useAutofocus<HTMLInputElement>();
  const submit = (e: Event) => {
    e.preventDefault();
    try {
      const s = parseToken(token);
      if (s.expiresAt !== undefined && s.expiresAt <= Date.now()) throw new Error("this token has expired");
      onSignIn(s);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <main class="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">
          <span class="logo">ferry</span> console
        </h1>
        {notice && (
          <p class="notice" role="alert">
            {notice}
          </p>
        )}
        <label for="token">Token</label>
        <input
          id="token"
          name="token"
          type="password"
          ref={input}
          required
          spellcheck={false}
          autocomplete="off"
          aria-describedby="token-help"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p id="token-help" class="help">
          Paste a ferry token (a JWT). <code>make run</code> prints one; <code>ferry token</code> signs more. It is
          kept in this tab only (sessionStorage) and sent only to this server.
        </p>
        {error && (
          <p class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function Shell({ session, client, onSignOut }: { session: Session; client: Client; onSignOut: () => void }) {
  const route = useRoute();
  const [compartmentId, setCompartmentId] = useState(session.tenancyId);
  useEffect(() => {
    if (route.page === "queues") setCompartmentId(route.id ?? session.tenancyId);
    if (route.page === "policies") setCompartmentId(route.id ?? session.tenancyId);
  }, [route.page, route.id]);
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          <span class="logo">ferry</span> console
        </a>
        <nav aria-label="Sections" class="sections">
          <a href="#/" aria-current={route.page !== "policies" ? "page" : undefined}>
            Queues
          </a>
          <a href={href.policies(compartmentId)} aria-current={route.page === "policies" ? "page" : undefined}>
            Policies
          </a>
        </nav>
        <span class="who" title={session.tenancyId}>
          {session.subject || "signed in"}
          {session.groups.length > 0 && <span class="groups"> ({session.groups.join(", ")})</span>}
        </span>
        <button type="button" class="secondary" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <aside class="side">
        <CompartmentTree
          client={client}
          rootId={session.tenancyId}
          selected={compartmentId}
          linkTo={route.page === "policies" ? href.policies : href.compartment}
        />
      </aside>
      <main id="main" class="content" tabIndex={-1}>
        {route.page === "queues" && <QueueList client={client} compartmentId={compartmentId} />}
        {route.page === "queue" && <QueuePage client={client} queueId={route.id!} tab={route.tab} />}
        {route.page === "policies" && <Policies client={client} compartmentId={compartmentId} />}
      </main>
    </div>
  );
}
