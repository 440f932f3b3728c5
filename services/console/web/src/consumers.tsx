// The live consumers of a queue (GET /consumers, every 2 s) with "disconnect", and the dead letters with redrive.

import { useState } from "preact/hooks";
import type { Client, Queue } from "@ferry-mq/sdk";
import { count } from "./api.ts";
import { GroupPicker, PollMessages, useGroups } from "./messages.tsx";
import { Empty, ErrorBox, Show, useAction, useAsync } from "./ui.tsx";

export function Consumers({ client, queueId }: { client: Client; queueId: string }) {
  const [consumers, reload] = useAsync(
    async () => (await client.GET("/20210201/queues/{queueId}/consumers", { params: { path: { queueId } } })).data,
    [queueId],
    2000,
  );
  const action = useAction();
  const disconnect = (id: string, consumerGroupId: string) =>
    action.run(async () => {
      await client.DELETE("/20210201/queues/{queueId}/consumers/{consumerId}", {
        params: { path: { queueId, consumerId: id }, query: { consumerGroupId } },
      });
      reload();
    });
  return (
    <div class="panel">
      <h2>Consumers <span class="muted live">live, every 2 s</span></h2>
      {action.problem && <ErrorBox problem={action.problem} />}
      <Show value={consumers} what="consumers" onRetry={reload}>
        {(c) =>
          c.items.length === 0 ? (
            <Empty title="No consumers connected">
              <p>Watches (push consumers) and GetMessages callers that name themselves with X-Ferry-Consumer-Id appear here.</p>
            </Empty>
          ) : (
            <table class="grid" aria-label="Consumers">
              <thead>
                <tr>
                  <th scope="col">Consumer</th>
                  <th scope="col">Group</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">Pending</th>
                  <th scope="col" class="num">Window</th>
                  <th scope="col" class="num">Slots</th>
                  <th scope="col" class="num">Idle</th>
                  <th scope="col" class="num">Delivered</th>
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                {c.items.map((x) => (
                  <tr key={`${x.consumerGroupId}/${x.id}`}>
                    <th scope="row">{x.id}</th>
                    <td><code title={x.consumerGroupId}>{x.consumerGroupId === queueId ? "primary" : `${x.consumerGroupId.slice(0, 24)}…`}</code></td>
                    <td>{x.kind}</td>
                    <td><span class={`state state-${x.status.toLowerCase()}`}>{x.status}</span></td>
                    <td class="num">{count(x.pending)}</td>
                    <td class="num">{x.window ?? "—"}</td>
                    <td class="num">{x.slots ?? "—"}</td>
                    <td class="num">{x.idleSeconds} s</td>
                    <td class="num">{count(x.delivered)}</td>
                    <td class="actions">
                      {x.status !== "EXIT" && (
                        <button type="button" class="danger" aria-label={`Disconnect ${x.id}`} onClick={() => disconnect(x.id, x.consumerGroupId)}>
                          Disconnect
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </div>
  );
}

export function DeadLetters({ client, queue }: { client: Client; queue: Queue }) {
  return (
    <div class="two-col wide-left">
      <PollMessages client={client} queue={queue} dlq={true} />
      <Redrive client={client} queue={queue} />
    </div>
  );
}

function Redrive({ client, queue }: { client: Client; queue: Queue }) {
  const [groups] = useGroups(client, queue.id);
  const [group, setGroup] = useState("");
  const [all, setAll] = useState(true);
  const [limit, setLimit] = useState("100");
  const [done, setDone] = useState<string | undefined>();
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    setDone(undefined);
    void action.run(async () => {
      let moved = 0;
      // "All": batches of the largest limit until a batch moves fewer.
      for (;;) {
        const { data } = await client.POST("/20210201/queues/{queueId}/actions/redrive", {
          params: { path: { queueId: queue.id } },
          body: { ...(group ? { consumerGroupId: group } : {}), limit: all ? 10000 : Number(limit) },
        });
        moved += data.redrivenMessages;
        if (!all || data.redrivenMessages < 10000) break;
      }
      setDone(`Redrove ${moved} message${moved === 1 ? "" : "s"} back to the queue.`);
    });
  };
  return (
    <form class="form panel" onSubmit={submit} aria-labelledby="redrive-title">
      <h2 id="redrive-title">Redrive</h2>
      <p class="muted">Moves dead letters back to the queue, where consumers receive them again.</p>
      <label for="redrive-group">Consumer group</label>
      <GroupPicker id="redrive-group" groups={groups.value} value={group} onChange={setGroup} />
      <fieldset>
        <legend>How many</legend>
        <label class="check"><input type="radio" name="redrive-how" checked={all} onChange={() => setAll(true)} /> All</label>
        <label class="check"><input type="radio" name="redrive-how" checked={!all} onChange={() => setAll(false)} /> At most</label>
        <label for="redrive-limit" class="sr-only">Limit</label>
        <input id="redrive-limit" type="number" min={1} max={10000} disabled={all} value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
      </fieldset>
      {action.problem && <ErrorBox problem={action.problem} />}
      {done && <p class="ok" role="status">{done}</p>}
      <div class="buttons">
        <button type="submit" disabled={action.busy}>Redrive</button>
      </div>
    </form>
  );
}
