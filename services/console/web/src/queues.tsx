// The queues of a compartment: depth, in flight, DLQ depth and oldest age per queue; create, edit, purge, delete
// (the work request's progress shown as it runs).

import { useState } from "preact/hooks";
import type { Client, Queue, Schemas } from "@ferry-mq/sdk";
import { count, duration } from "./api.ts";
import { href } from "./app.tsx";
import { Dialog, Empty, ErrorBox, Show, useAction, useAsync, useAutofocus, useWorkRequest, WorkRequestProgress } from "./ui.tsx";

interface Row {
  queue: Queue;
  stats?: Schemas["QueueStats"];
  oldestAge?: number;
}

/** The latest point of a gauge (oldestMessageAge) from the metrics API, or undefined. */
export async function latestGauge(client: Client, queueId: string, name: Schemas["QueueMetricName"]) {
  const { data } = await client.GET("/20210201/queues/{queueId}/metrics", {
    params: { path: { queueId }, query: { names: [name], start: new Date(Date.now() - 10 * 60_000).toISOString() } },
  });
  const points = data.items[0]?.points ?? [];
  return points.length ? points[points.length - 1]!.value : undefined;
}

export function QueueList({ client, compartmentId }: { client: Client; compartmentId: string }) {
  const [dialog, setDialog] = useState<{ kind: "create" } | { kind: "edit" | "purge" | "delete"; queue: Queue }>();
  const [rows, reload] = useAsync(
    async () => {
      const queues: Queue[] = [];
      for await (const q of client.paginate("/20210201/queues", { params: { query: { compartmentId, limit: 100 } } })) {
        if (q.lifecycleState !== "DELETED") queues.push(q as Queue);
      }
      return Promise.all(
        queues.map(async (queue): Promise<Row> => {
          if (queue.lifecycleState !== "ACTIVE") return { queue };
          const [stats, oldestAge] = await Promise.all([
            client.GET("/20210201/queues/{queueId}/stats", { params: { path: { queueId: queue.id } } }).then((r) => r.data),
            latestGauge(client, queue.id, "oldestMessageAge").catch(() => undefined),
          ]);
          return { queue, stats, oldestAge };
        }),
      );
    },
    [compartmentId],
    10000, // two calls per queue (stats, oldest age): every 10 s is live enough for a list
  );
  const close = (changed: boolean) => {
    setDialog(undefined);
    if (changed) reload();
  };
  return (
    <section aria-labelledby="queues-title">
      <div class="page-head">
        <h1 id="queues-title">Queues</h1>
        <button type="button" onClick={() => setDialog({ kind: "create" })}>
          Create queue
        </button>
      </div>
      <p class="muted">
        Compartment <code>{compartmentId}</code>
      </p>
      <Show value={rows} what="queues" onRetry={reload}>
        {(list) =>
          list.length === 0 ? (
            <Empty title="No queues in this compartment yet">
              <p>A queue holds messages until a consumer deletes them. Create one to send and poll messages here.</p>
              <button type="button" onClick={() => setDialog({ kind: "create" })}>
                Create your first queue
              </button>
            </Empty>
          ) : (
            <table class="grid" aria-label="Queues">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">Depth</th>
                  <th scope="col" class="num">In flight</th>
                  <th scope="col" class="num">DLQ depth</th>
                  <th scope="col" class="num">Oldest age</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.map(({ queue, stats, oldestAge }) => (
                  <tr key={queue.id}>
                    <th scope="row">
                      <a href={href.queue(queue.id)}>{queue.displayName}</a>
                    </th>
                    <td>
                      <span class={`state state-${queue.lifecycleState.toLowerCase()}`}>{queue.lifecycleState}</span>
                    </td>
                    <td class="num">{count(stats?.queue.visibleMessages)}</td>
                    <td class="num">{count(stats?.queue.inFlightMessages)}</td>
                    <td class="num">{count(stats?.dlq.visibleMessages)}</td>
                    <td class="num">{duration(oldestAge)}</td>
                    <td class="actions">
                      <button type="button" class="secondary" aria-label={`Edit ${queue.displayName}`}
                        onClick={() => setDialog({ kind: "edit", queue })}>Edit</button>
                      <button type="button" class="secondary" aria-label={`Purge ${queue.displayName}`}
                        onClick={() => setDialog({ kind: "purge", queue })}>Purge</button>
                      <button type="button" class="danger" aria-label={`Delete ${queue.displayName}`}
                        onClick={() => setDialog({ kind: "delete", queue })}>Delete</button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      {dialog?.kind === "create" && <QueueForm client={client} compartmentId={compartmentId} onClose={close} />}
      {dialog?.kind === "edit" && <QueueForm client={client} compartmentId={compartmentId} queue={dialog.queue} onClose={close} />}
      {dialog?.kind === "purge" && <PurgeDialog client={client} queue={dialog.queue} onClose={close} />}
      {dialog?.kind === "delete" && <DeleteDialog client={client} queue={dialog.queue} onClose={close} />}
    </section>
  );
}

/** A number field's value: undefined when empty (the API's default applies) or not a number. */
function num(v: string): number | undefined {
  const n = Number(v);
  return v.trim() === "" || !Number.isFinite(n) ? undefined : n;
}

const field = (v: number | undefined) => (v === undefined ? "" : String(v));

/** Creates a queue, or edits one (the fields UpdateQueue accepts). */
export function QueueForm({ client, compartmentId, queue, onClose }: {
  client: Client;
  compartmentId: string;
  queue?: Queue;
  onClose: (changed: boolean) => void;
}) {
  const [name, setName] = useState(queue?.displayName ?? "");
  const [retention, setRetention] = useState(field(queue?.retentionInSeconds));
  const [visibility, setVisibility] = useState(field(queue?.visibilityInSeconds));
  const [dlqCount, setDlqCount] = useState(field(queue?.deadLetterQueueDeliveryCount));
  const [groups, setGroups] = useState(queue ? !!queue.capabilities?.some((c) => c.type === "CONSUMER_GROUPS") : true);
  const action = useAction();
  const wr = useWorkRequest(client);
  const first = useAutofocus<HTMLInputElement>();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const capabilities = groups ? [{ type: "CONSUMER_GROUPS" as const }] : [];
      const common = {
        displayName: name,
        visibilityInSeconds: num(visibility),
        deadLetterQueueDeliveryCount: num(dlqCount),
        capabilities,
      };
      const { response } = queue
        ? await client.PUT("/20210201/queues/{queueId}", { params: { path: { queueId: queue.id } }, body: common })
        : await client.POST("/20210201/queues", {
            body: { ...common, compartmentId, retentionInSeconds: num(retention) },
          });
      await wr.wait(response);
      onClose(true);
    });
  };
  return (
    <Dialog title={queue ? `Edit ${queue.displayName}` : "Create queue"} onClose={() => onClose(false)}>
      <form onSubmit={submit} class="form">
        <label for="q-name">Name</label>
        <input id="q-name" ref={first} required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        {!queue && (
          <>
            <label for="q-retention">Retention (seconds)</label>
            <input id="q-retention" type="number" min={10} max={604800} placeholder="86400 (1 day)" value={retention}
              onInput={(e) => setRetention(e.currentTarget.value)} />
          </>
        )}
        <label for="q-visibility">Visibility timeout (seconds)</label>
        <input id="q-visibility" type="number" min={0} max={43200} placeholder="30" value={visibility}
          onInput={(e) => setVisibility(e.currentTarget.value)} />
        <label for="q-dlq">Dead-letter after deliveries (0 = no DLQ)</label>
        <input id="q-dlq" type="number" min={0} max={1000} placeholder="0" value={dlqCount}
          onInput={(e) => setDlqCount(e.currentTarget.value)} />
        <label class="check">
          <input type="checkbox" checked={groups} onChange={(e) => setGroups(e.currentTarget.checked)} /> Consumer groups
          (fanout with filters)
        </label>
        {action.problem && <ErrorBox problem={action.problem} />}
        <WorkRequestProgress wr={wr.workRequest} />
        <div class="buttons">
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Saving…" : queue ? "Save" : "Create"}
          </button>
          <button type="button" class="secondary" onClick={() => onClose(false)}>
            Cancel
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function PurgeDialog({ client, queue, onClose }: { client: Client; queue: Queue; onClose: (changed: boolean) => void }) {
  const [type, setType] = useState<Schemas["PurgeType"]>("NORMAL");
  const action = useAction();
  const wr = useWorkRequest(client);
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const { response } = await client.POST("/20210201/queues/{queueId}/actions/purge", {
        params: { path: { queueId: queue.id } },
        body: { purgeType: type },
      });
      await wr.wait(response);
      onClose(true);
    });
  };
  return (
    <Dialog title={`Purge ${queue.displayName}`} onClose={() => onClose(false)}>
      <form onSubmit={submit} class="form">
        <fieldset>
          <legend>Which messages to delete</legend>
          {(["NORMAL", "DLQ", "BOTH"] as const).map((t) => (
            <label class="check" key={t}>
              <input type="radio" name="purgeType" value={t} checked={type === t} onChange={() => setType(t)} />
              {t === "NORMAL" ? " The queue's messages" : t === "DLQ" ? " The dead-letter queue's" : " Both"}
            </label>
          ))}
        </fieldset>
        {action.problem && <ErrorBox problem={action.problem} />}
        <WorkRequestProgress wr={wr.workRequest} />
        <div class="buttons">
          <button type="submit" class="danger" disabled={action.busy}>Purge</button>
          <button type="button" class="secondary" onClick={() => onClose(false)}>Cancel</button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteDialog({ client, queue, onClose }: { client: Client; queue: Queue; onClose: (changed: boolean) => void }) {
  const [confirm, setConfirm] = useState("");
  const action = useAction();
  const wr = useWorkRequest(client);
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const { response } = await client.DELETE("/20210201/queues/{queueId}", { params: { path: { queueId: queue.id } } });
      await wr.wait(response);
      onClose(true);
    });
  };
  return (
    <Dialog title={`Delete ${queue.displayName}`} onClose={() => onClose(false)}>
      <form onSubmit={submit} class="form">
        <p>The queue and all its messages are deleted. This cannot be undone.</p>
        <label for="q-confirm">Type the queue's name to confirm</label>
        <input id="q-confirm" value={confirm} onInput={(e) => setConfirm(e.currentTarget.value)} />
        {action.problem && <ErrorBox problem={action.problem} />}
        <WorkRequestProgress wr={wr.workRequest} />
        <div class="buttons">
          <button type="submit" class="danger" disabled={action.busy || confirm !== queue.displayName}>Delete</button>
          <button type="button" class="secondary" onClick={() => onClose(false)}>Cancel</button>
        </div>
      </form>
    </Dialog>
  );
}
