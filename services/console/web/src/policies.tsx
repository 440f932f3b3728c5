// Policies of a compartment: their statements, edited as text with parse errors shown at the statement they
// concern, and the simulator: "may subject S in groups G do P on this queue?", with the deciding statement.

import { useState } from "preact/hooks";
import type { Client, Queue, Schemas } from "@ferry-mq/sdk";
import { problemOf, type Problem } from "./api.ts";
import { Empty, ErrorBox, Show, useAction, useAsync } from "./ui.tsx";

type Policy = Schemas["Policy"];

export function Policies({ client, compartmentId }: { client: Client; compartmentId: string }) {
  const [editing, setEditing] = useState<string | "new" | undefined>();
  const [policies, reload] = useAsync(async () => {
    const list: Policy[] = [];
    for await (const p of client.paginate("/20210201/policies", { params: { query: { compartmentId, limit: 100 } } })) {
      list.push(p as Policy);
    }
    return list.filter((p) => p.lifecycleState !== "DELETED");
  }, [compartmentId]);
  return (
    <section aria-labelledby="policies-title">
      <div class="page-head">
        <h1 id="policies-title">Policies</h1>
        <button type="button" onClick={() => setEditing("new")}>Create policy</button>
      </div>
      <p class="muted">Compartment <code>{compartmentId}</code>. A policy grants inside its own compartment's subtree.</p>
      <div class="two-col">
        <div>
          {editing === "new" && (
            <PolicyEditor client={client} compartmentId={compartmentId} onDone={(changed) => { setEditing(undefined); if (changed) reload(); }} />
          )}
          <Show value={policies} what="policies" onRetry={reload}>
            {(list) =>
              list.length === 0 ? (
                <Empty title="No policies in this compartment">
                  <p>Policies say which groups may do what, e.g. <code>Allow group Readers to read queues in tenancy</code>.</p>
                </Empty>
              ) : (
                <ul class="policies">
                  {list.map((p) =>
                    editing === p.id ? (
                      <li key={p.id}>
                        <PolicyEditor client={client} compartmentId={compartmentId} policy={p}
                          onDone={(changed) => { setEditing(undefined); if (changed) reload(); }} />
                      </li>
                    ) : (
                      <li key={p.id} class="panel">
                        <div class="page-head">
                          <h2>{p.name}</h2>
                          <button type="button" class="secondary" aria-label={`Edit ${p.name}`} onClick={() => setEditing(p.id)}>Edit</button>
                          <DeletePolicy client={client} policy={p} onDeleted={reload} />
                        </div>
                        {p.description && <p class="muted">{p.description}</p>}
                        <ol class="statements">
                          {p.statements.map((s, i) => <li key={i}><code>{s}</code></li>)}
                        </ol>
                      </li>
                    ),
                  )}
                </ul>
              )
            }
          </Show>
        </div>
        <Simulator client={client} compartmentId={compartmentId} />
      </div>
    </section>
  );
}

function DeletePolicy({ client, policy, onDeleted }: { client: Client; policy: Policy; onDeleted: () => void }) {
  const action = useAction();
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete ${policy.name}`} disabled={action.busy}
        onClick={() => confirm(`Delete policy ${policy.name}?`) && action.run(async () => {
          await client.DELETE("/20210201/policies/{policyId}", { params: { path: { policyId: policy.id } } });
          onDeleted();
        })}>Delete</button>
      {action.problem && <ErrorBox problem={action.problem} />}
    </>
  );
}

/** Which statement (0-based) a parse error names: "statements[2]: column 7: …". */
export function statementOf(p: Problem | undefined): number | undefined {
  const m = p?.message.match(/^statements\[(\d+)\]/);
  return m ? Number(m[1]) : undefined;
}

function PolicyEditor({ client, compartmentId, policy, onDone }: {
  client: Client;
  compartmentId: string;
  policy?: Policy;
  onDone: (changed: boolean) => void;
}) {
  const [name, setName] = useState(policy?.name ?? "");
  const [description, setDescription] = useState(policy?.description ?? "");
  const [text, setText] = useState(policy?.statements.join("\n") ?? "");
  const [problem, setProblem] = useState<Problem | undefined>();
  const [busy, setBusy] = useState(false);
  const statements = text.split("\n").map((s) => s.trim()).filter(Boolean);
  const bad = statementOf(problem);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
      if (policy) {
        await client.PUT("/20210201/policies/{policyId}", {
          params: { path: { policyId: policy.id } },
          body: { name, description, statements },
        });
      } else {
        await client.POST("/20210201/policies", { body: { compartmentId, name, description, statements } });
      }
      onDone(true);
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="form panel" onSubmit={submit} aria-labelledby="policy-edit-title">
      <h2 id="policy-edit-title">{policy ? `Edit ${policy.name}` : "Create policy"}</h2>
      <label for="policy-name">Name</label>
      <input id="policy-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <label for="policy-description">Description</label>
      <input id="policy-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <label for="policy-statements">Statements (one per line)</label>
      <textarea id="policy-statements" class="mono" rows={5} required value={text}
        aria-invalid={problem ? "true" : undefined} aria-describedby="policy-errors"
        placeholder="Allow group Readers to read queues in tenancy" onInput={(e) => setText(e.currentTarget.value)} />
      <div id="policy-errors" aria-live="polite">
        {bad !== undefined && statements[bad] !== undefined && (
          <p class="field-error statement-error" role="alert">
            Statement {bad + 1}: <code>{statements[bad]}</code>
            <br />
            {problem!.message.replace(/^statements\[\d+\]:\s*/, "")}
          </p>
        )}
        {problem && <ErrorBox problem={problem} />}
      </div>
      <div class="buttons">
        <button type="submit" disabled={busy}>{busy ? "Saving…" : "Save policy"}</button>
        <button type="button" class="secondary" onClick={() => onDone(false)}>Cancel</button>
      </div>
    </form>
  );
}

const permissions: Schemas["AuthorizeDetails"]["permission"][] = [
  "QUEUE_INSPECT", "QUEUE_READ", "QUEUE_UPDATE", "QUEUE_CREATE", "QUEUE_DELETE", "QUEUE_MOVE", "QUEUE_PURGE",
  "QUEUE_PUSH", "QUEUE_PULL", "QUEUE_METRICS_READ", "COMPARTMENT_INSPECT", "COMPARTMENT_READ", "COMPARTMENT_UPDATE",
  "COMPARTMENT_CREATE", "COMPARTMENT_DELETE", "POLICY_INSPECT", "POLICY_READ", "POLICY_CREATE", "POLICY_UPDATE",
  "POLICY_DELETE",
];

function Simulator({ client, compartmentId }: { client: Client; compartmentId: string }) {
  const [subject, setSubject] = useState("");
  const [groups, setGroups] = useState("");
  const [permission, setPermission] = useState<Schemas["AuthorizeDetails"]["permission"]>("QUEUE_PULL");
  const [queueId, setQueueId] = useState("");
  const [answer, setAnswer] = useState<Schemas["AuthorizeResult"] | undefined>();
  const [queues] = useAsync(async () => {
    const list: Queue[] = [];
    for await (const q of client.paginate("/20210201/queues", { params: { query: { compartmentId, limit: 100 } } })) {
      list.push(q as Queue);
    }
    return list;
  }, [compartmentId]);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    setAnswer(undefined);
    void action.run(async () => {
      const { data } = await client.POST("/20210201/actions/authorize", {
        body: {
          subject,
          groups: groups.split(",").map((g) => g.trim()).filter(Boolean),
          permission,
          ...(queueId ? { queueId } : { compartmentId }),
        },
      });
      setAnswer(data);
    });
  };
  return (
    <form class="form panel" onSubmit={submit} aria-labelledby="sim-title">
      <h2 id="sim-title">Policy simulator</h2>
      <p class="muted">May this subject, in these groups, do this on that queue?</p>
      <label for="sim-subject">Subject</label>
      <input id="sim-subject" required value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
      <label for="sim-groups">Groups (comma-separated)</label>
      <input id="sim-groups" value={groups} onInput={(e) => setGroups(e.currentTarget.value)} />
      <label for="sim-permission">Permission</label>
      <select id="sim-permission" value={permission} onChange={(e) => setPermission(e.currentTarget.value as typeof permission)}>
        {permissions.map((p) => <option key={p} value={p}>{p}</option>)}
      </select>
      <label for="sim-queue">Queue</label>
      <select id="sim-queue" value={queueId} onChange={(e) => setQueueId(e.currentTarget.value)}>
        <option value="">(the compartment itself)</option>
        {(queues.value ?? []).map((q) => <option key={q.id} value={q.id}>{q.displayName}</option>)}
      </select>
      {action.problem && <ErrorBox problem={action.problem} />}
      <div class="buttons">
        <button type="submit" disabled={action.busy}>Simulate</button>
      </div>
      {answer && (
        <div class={`verdict-box ${answer.allowed ? "allow" : "deny"}`} role="status" aria-live="polite">
          <p class="verdict-word">{answer.allowed ? "Allowed" : "Denied"}</p>
          {answer.allowed ? (
            <ul class="deciding">
              {answer.matchedStatements.map((m, i) => (
                <li key={i}>by <code>{m.statement}</code></li>
              ))}
            </ul>
          ) : (
            <p class="muted">No statement allows it: without an Allow, IAM denies.</p>
          )}
        </div>
      )}
    </form>
  );
}
