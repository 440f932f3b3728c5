// "Send message" and "Poll messages", as OCI's console has them: the polled messages with their attributes,
// delivery count and receipt, each deleted (acknowledged) or released (visible again at once).

import { useState } from "preact/hooks";
import type { Client, Queue, Schemas } from "@ferry-mq/sdk";
import { Empty, ErrorBox, Show, useAction, useAsync } from "./ui.tsx";

type Attributes = Schemas["MessageAttributes"];
type Message = Schemas["GetMessage"];

/** Parses "key=value" lines into attributes; a value that reads as a number is a number. */
export function parseAttributes(text: string): Attributes {
  const out: Attributes = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`attribute line ${i + 1}: write key=value`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    out[key] = value !== "" && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value.replace(/^"(.*)"$/, "$1");
  }
  return out;
}

export function formatAttributes(a: Attributes | undefined): string {
  if (!a || Object.keys(a).length === 0) return "—";
  return Object.entries(a)
    .map(([k, v]) => `${k}=${typeof v === "string" ? JSON.stringify(v) : v}`)
    .join(", ");
}

/** The consumer groups of a queue (the primary group first), for the pickers of the messages and DLQ tabs. */
export function useGroups(client: Client, queueId: string) {
  return useAsync(async () => {
    const groups: Schemas["ConsumerGroup"][] = [];
    for await (const g of client.paginate("/20210201/consumerGroups", { params: { query: { queueId, limit: 100 } } })) {
      groups.push(g as Schemas["ConsumerGroup"]);
    }
    return groups.filter((g) => g.lifecycleState === "ACTIVE").sort((a, b) => Number(b.isPrimary) - Number(a.isPrimary));
  }, [queueId]);
}

export function GroupPicker({ id, groups, value, onChange }: {
  id: string;
  groups: Schemas["ConsumerGroup"][] | undefined;
  value: string;
  onChange: (v: string) => void;
}) {
  return (
    <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      <option value="">primary group</option>
      {(groups ?? []).filter((g) => !g.isPrimary).map((g) => (
        <option key={g.id} value={g.id}>{g.displayName}</option>
      ))}
    </select>
  );
}

export function Messages({ client, queue }: { client: Client; queue: Queue }) {
  return (
    <div class="two-col wide-right">
      <SendMessage client={client} queue={queue} />
      <PollMessages client={client} queue={queue} dlq={false} />
    </div>
  );
}

function SendMessage({ client, queue }: { client: Client; queue: Queue }) {
  const [content, setContent] = useState("");
  const [attrs, setAttrs] = useState("");
  const [sent, setSent] = useState<string | undefined>();
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    setSent(undefined);
    void action.run(async () => {
      const attributes = parseAttributes(attrs);
      const { data } = await client.POST("/20210201/queues/{queueId}/messages", {
        params: { path: { queueId: queue.id } },
        body: { messages: [{ content, ...(Object.keys(attributes).length ? { attributes } : {}) }] },
      });
      const entry = data.messages[0];
      setSent(`Sent message ${entry?.id ?? ""}${entry?.consumerGroups === 0 ? " (no consumer group took it)" : ""}`);
      setContent("");
    });
  };
  return (
    <form class="form panel" onSubmit={submit} aria-labelledby="send-title">
      <h2 id="send-title">Send message</h2>
      <label for="send-content">Content</label>
      <textarea id="send-content" rows={4} required value={content} onInput={(e) => setContent(e.currentTarget.value)} />
      <label for="send-attributes">Attributes (one per line, key=value)</label>
      <textarea id="send-attributes" rows={3} placeholder={"type=order\namount=42"} value={attrs}
        onInput={(e) => setAttrs(e.currentTarget.value)} />
      {action.problem && <ErrorBox problem={action.problem} />}
      {sent && <p class="ok" role="status">{sent}</p>}
      <div class="buttons">
        <button type="submit" disabled={action.busy}>{action.busy ? "Sending…" : "Send"}</button>
      </div>
    </form>
  );
}

/** Polls (leases) messages of the queue or of its DLQ, and deletes or releases them. */
export function PollMessages({ client, queue, dlq }: { client: Client; queue: Queue; dlq: boolean }) {
  const [groups] = useGroups(client, queue.id);
  const [group, setGroup] = useState("");
  const [limit, setLimit] = useState("10");
  // Browsing the DLQ looks without holding the messages (a lease of 0) unless asked to.
  const [visibility, setVisibility] = useState(dlq ? "0" : "30");
  const [polled, setPolled] = useState<Message[] | undefined>();
  const [notes, setNotes] = useState<Record<string, string>>({});
  const action = useAction();
  const prefix = dlq ? "dlq" : "poll";
  const poll = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const { data } = await client.GET("/20210201/queues/{queueId}/messages", {
        params: {
          path: { queueId: queue.id },
          query: {
            limit: Number(limit) || 10,
            visibilityInSeconds: Number(visibility),
            timeoutInSeconds: 0,
            ...(group ? { consumerGroupId: group } : {}),
            ...(dlq ? { dlq: true } : {}),
          },
        },
      });
      setNotes({});
      setPolled(data.messages);
    });
  };
  const settle = (m: Message, how: "delete" | "release") =>
    action.run(async () => {
      const path = { queueId: queue.id, messageReceipt: m.receipt };
      if (how === "delete") await client.DELETE("/20210201/queues/{queueId}/messages/{messageReceipt}", { params: { path } });
      else await client.PUT("/20210201/queues/{queueId}/messages/{messageReceipt}", { params: { path }, body: { visibilityInSeconds: 0 } });
      setNotes((n) => ({ ...n, [m.receipt]: how === "delete" ? "deleted" : "released" }));
    });
  return (
    <div class="panel">
      <form class="form" onSubmit={poll} aria-labelledby={`${prefix}-title`}>
        <h2 id={`${prefix}-title`}>{dlq ? "Browse dead letters" : "Poll messages"}</h2>
        <div class="row">
          <div>
            <label for={`${prefix}-group`}>Consumer group</label>
            <GroupPicker id={`${prefix}-group`} groups={groups.value} value={group} onChange={setGroup} />
          </div>
          <div>
            <label for={`${prefix}-limit`}>Limit</label>
            <input id={`${prefix}-limit`} type="number" min={1} max={32} value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
          </div>
          <div>
            <label for={`${prefix}-visibility`}>Lease (seconds)</label>
            <input id={`${prefix}-visibility`} type="number" min={0} max={43200} value={visibility}
              onInput={(e) => setVisibility(e.currentTarget.value)} />
          </div>
        </div>
        <div class="buttons">
          <button type="submit" disabled={action.busy}>{dlq ? "Browse" : "Poll"}</button>
        </div>
      </form>
      {action.problem && <ErrorBox problem={action.problem} />}
      {polled === undefined ? (
        <p class="muted">{dlq ? "Browsing is a poll of the DLQ: a lease of 0 looks at the dead letters without holding them." : "Polled messages are leased for the lease time: delete or release them here."}</p>
      ) : polled.length === 0 ? (
        <Empty title={dlq ? "No dead letters" : "No messages to deliver"}>
          <p>{dlq ? "Nothing was dead-lettered in this group (or it is all leased)." : "The queue has no visible messages for this group right now."}</p>
        </Empty>
      ) : (
        <table class="grid" aria-label={dlq ? "Dead letters" : "Polled messages"}>
          <thead>
            <tr>
              <th scope="col">Id</th>
              <th scope="col">Content</th>
              <th scope="col">Attributes</th>
              <th scope="col" class="num">Deliveries</th>
              {dlq && <th scope="col">Last negative</th>}
              <th scope="col">Receipt</th>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {polled.map((m) => (
              <tr key={m.receipt} data-message-id={m.id}>
                <td>{m.id}</td>
                <td class="content">{m.content}</td>
                <td>{formatAttributes(m.attributes)}</td>
                <td class="num">{m.deliveryCount}</td>
                {dlq && <td>{m.lastNegative ? `${m.lastNegative.code}${m.lastNegative.reason ? `: ${m.lastNegative.reason}` : ""}` : "—"}</td>}
                <td><code class="receipt" title={m.receipt}>{m.receipt.slice(0, 8)}…</code></td>
                <td class="actions">
                  {notes[m.receipt] ? (
                    <span class="ok">{notes[m.receipt]}</span>
                  ) : (
                    <>
                      <button type="button" class="secondary" aria-label={`Delete message ${m.id}`} onClick={() => settle(m, "delete")}>Delete</button>
                      <button type="button" class="secondary" aria-label={`Release message ${m.id}`} onClick={() => settle(m, "release")}>Release</button>
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

