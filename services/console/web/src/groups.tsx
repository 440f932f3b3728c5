// A queue's consumer groups and the filter editor: the filter is validated as it is typed (validateFilter) against
// sample attribute sets, showing which of them it matches.

import { useEffect, useState } from "preact/hooks";
import type { Client, Queue, Schemas } from "@ferry-mq/sdk";
import { parseAttributes } from "./messages.tsx";
import { Empty, ErrorBox, Show, useAction, useAsync, useWorkRequest, WorkRequestProgress } from "./ui.tsx";

type Group = Schemas["ConsumerGroup"];

export function ConsumerGroups({ client, queue }: { client: Client; queue: Queue }) {
  const [editing, setEditing] = useState<Group | undefined>();
  const [groups, reload] = useAsync(async () => {
    const list: Group[] = [];
    for await (const g of client.paginate("/20210201/consumerGroups", { params: { query: { queueId: queue.id, limit: 100 } } })) {
      list.push(g as Group);
    }
    return list.filter((g) => g.lifecycleState !== "DELETED").sort((a, b) => Number(b.isPrimary) - Number(a.isPrimary));
  }, [queue.id]);
  const hasGroups = !!queue.capabilities?.some((c) => c.type === "CONSUMER_GROUPS");
  return (
    <div class="two-col">
      <div class="panel">
        <h2>Consumer groups</h2>
        <Show value={groups} what="consumer groups" onRetry={reload}>
          {(list) =>
            list.length === 0 ? (
              <Empty title="No consumer groups">
                <p>Every message goes to the queue's primary group.</p>
              </Empty>
            ) : (
              <table class="grid" aria-label="Consumer groups">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Filter</th>
                    <th scope="col">Enabled</th>
                    <th scope="col">State</th>
                    <th scope="col"><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((g) => (
                    <tr key={g.id}>
                      <th scope="row">{g.displayName}{g.isPrimary ? " (primary)" : ""}</th>
                      <td><code>{g.filter || "every message"}</code></td>
                      <td>{g.isEnabled ? "yes" : "no"}</td>
                      <td><span class={`state state-${g.lifecycleState.toLowerCase()}`}>{g.lifecycleState}</span></td>
                      <td class="actions">
                        {/* The primary group is configured with the queue (its CONSUMER_GROUPS capability). */}
                        {!g.isPrimary && (
                          <>
                            <button type="button" class="secondary" aria-label={`Edit ${g.displayName}`} onClick={() => setEditing(g)}>
                              Edit
                            </button>
                            <DeleteGroup client={client} group={g} onDeleted={reload} />
                          </>
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
      {hasGroups ? (
        <GroupForm key={editing?.id ?? "new"} client={client} queue={queue} group={editing}
          onDone={() => { setEditing(undefined); reload(); }} />
      ) : (
        <Empty title="Consumer groups are off for this queue">
          <p>Edit the queue and turn on “Consumer groups” to fan messages out to groups with filters.</p>
        </Empty>
      )}
    </div>
  );
}

const sampleDefault = "type=order, amount=120\ntype=order, amount=5\ntype=refund";

/** Parses sample attribute sets: one per line, "key=value, key=value". */
function parseSamples(text: string): Schemas["MessageAttributes"][] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => parseAttributes(l.split(",").join("\n")));
}

function DeleteGroup({ client, group, onDeleted }: { client: Client; group: Group; onDeleted: () => void }) {
  const action = useAction();
  const wr = useWorkRequest(client);
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete ${group.displayName}`} disabled={action.busy}
        onClick={() => confirm(`Delete consumer group ${group.displayName}? Its messages are deleted with it.`) &&
          action.run(async () => {
            const { response } = await client.DELETE("/20210201/consumerGroups/{consumerGroupId}", {
              params: { path: { consumerGroupId: group.id } },
            });
            await wr.wait(response);
            onDeleted();
          })}>
        Delete
      </button>
      <WorkRequestProgress wr={wr.workRequest} />
      {action.problem && <ErrorBox problem={action.problem} />}
    </>
  );
}

/** Creates a consumer group, or edits one's name and filter. */
function GroupForm({ client, queue, group, onDone }: { client: Client; queue: Queue; group?: Group; onDone: () => void }) {
  const [name, setName] = useState(group?.displayName ?? "");
  const [filter, setFilter] = useState(group?.filter ?? "");
  const [samples, setSamples] = useState(sampleDefault);
  const action = useAction();
  const wr = useWorkRequest(client);
  const check = useFilterCheck(client, filter, samples);
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const { response } = group
        ? await client.PUT("/20210201/consumerGroups/{consumerGroupId}", {
            params: { path: { consumerGroupId: group.id } },
            body: { displayName: name, filter },
          })
        : await client.POST("/20210201/consumerGroups", { body: { queueId: queue.id, displayName: name, filter } });
      await wr.wait(response);
      setName("");
      setFilter("");
      onDone();
    });
  };
  const sampleLines = samples.split("\n").filter((l) => l.trim());
  return (
    <form class="form panel" onSubmit={submit} aria-labelledby="group-title">
      <h2 id="group-title">{group ? `Edit ${group.displayName}` : "Create consumer group"}</h2>
      <label for="group-name">Name</label>
      <input id="group-name" required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for="group-filter">Filter</label>
      <input id="group-filter" class="mono" placeholder=':type = "order" AND :amount > 100' value={filter}
        aria-describedby="filter-status" aria-invalid={check.result?.valid === false ? "true" : undefined}
        onInput={(e) => setFilter(e.currentTarget.value)} />
      <p id="filter-status" class={check.result?.valid === false ? "field-error" : "help"} aria-live="polite">
        {filter.trim() === "" ? "Empty: the group takes every message." : check.result === undefined ? "Checking…" : check.result.valid ? "Valid filter." : check.result.error}
      </p>
      {check.problem && <ErrorBox problem={check.problem} />}
      <label for="group-samples">Sample attribute sets (one per line, key=value, …)</label>
      <textarea id="group-samples" class="mono" rows={3} value={samples} onInput={(e) => setSamples(e.currentTarget.value)} />
      <ul class="samples" aria-label="Which samples match">
        {sampleLines.map((line, i) => {
          const m = check.result?.valid ? check.result.matches?.[i] : undefined;
          return (
            <li key={i} class={m === undefined ? "" : m ? "match" : "nomatch"}>
              <span class="verdict">{m === undefined ? "·" : m ? "matches" : "no match"}</span> <code>{line}</code>
            </li>
          );
        })}
      </ul>
      {action.problem && <ErrorBox problem={action.problem} />}
      <WorkRequestProgress wr={wr.workRequest} />
      <div class="buttons">
        <button type="submit" disabled={action.busy || check.result?.valid === false}>
          {group ? "Save group" : "Create group"}
        </button>
        {group && (
          <button type="button" class="secondary" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** Validates the filter against the samples 250 ms after the last keystroke. */
function useFilterCheck(client: Client, filter: string, samples: string) {
  const [result, setResult] = useState<Schemas["ValidateFilterResult"] | undefined>();
  const action = useAction();
  useEffect(() => {
    setResult(undefined);
    let attributes: Schemas["MessageAttributes"][];
    try {
      attributes = parseSamples(samples);
    } catch (e) {
      setResult({ valid: true, matches: [] });
      return;
    }
    const ctl = new AbortController();
    const id = setTimeout(() => {
      void action.run(async () => {
        const { data } = await client.POST("/20210201/consumerGroups/actions/validateFilter", {
          body: { filter, attributes },
          signal: ctl.signal,
        });
        if (!ctl.signal.aborted) setResult(data);
      });
    }, 250);
    return () => {
      clearTimeout(id);
      ctl.abort();
    };
  }, [filter, samples]);
  return { result, problem: action.problem };
}
