// A queue's page: its numbers and settings, and tabs for charts, messages, consumer groups, consumers and the DLQ.

import { useState } from "preact/hooks";
import type { Client, Queue, Schemas } from "@ferry-mq/sdk";
import { count } from "./api.ts";
import { href } from "./app.tsx";
import { Chart } from "./chart.tsx";
import { Consumers, DeadLetters } from "./consumers.tsx";
import { ConsumerGroups } from "./groups.tsx";
import { Messages } from "./messages.tsx";
import { QueueForm } from "./queues.tsx";
import { Show, useAsync } from "./ui.tsx";

const tabs = [
  ["overview", "Charts"],
  ["messages", "Messages"],
  ["groups", "Consumer groups"],
  ["consumers", "Consumers"],
  ["dlq", "Dead letters"],
] as const;

export function QueuePage({ client, queueId, tab = "overview" }: { client: Client; queueId: string; tab?: string }) {
  const [editing, setEditing] = useState(false);
  const [queue, reload] = useAsync(
    async () => (await client.GET("/20210201/queues/{queueId}", { params: { path: { queueId } } })).data as Queue,
    [queueId],
  );
  const [stats] = useAsync(
    async () => (await client.GET("/20210201/queues/{queueId}/stats", { params: { path: { queueId } } })).data,
    [queueId],
    3000,
  );
  return (
    <Show value={queue} what="the queue" onRetry={reload}>
      {(q) => (
        <section aria-labelledby="queue-title">
          <p class="crumbs">
            <a href={href.compartment(q.compartmentId)}>Queues</a> /
          </p>
          <div class="page-head">
            <h1 id="queue-title">{q.displayName}</h1>
            <span class={`state state-${q.lifecycleState.toLowerCase()}`}>{q.lifecycleState}</span>
            <button type="button" class="secondary" onClick={() => setEditing(true)}>
              Edit queue
            </button>
          </div>
          <p class="muted">
            <code>{q.id}</code> · visibility {q.visibilityInSeconds} s · retention {q.retentionInSeconds} s ·{" "}
            {q.deadLetterQueueDeliveryCount
              ? `dead-letter after ${q.deadLetterQueueDeliveryCount} ${q.deadLetterQueueDeliveryCount === 1 ? "delivery" : "deliveries"}`
              : "no dead-letter queue"}
          </p>
          <StatsTiles stats={stats.value} />
          <nav class="tabs" aria-label="Queue sections">
            {tabs.map(([id, label]) => (
              <a key={id} href={href.queue(queueId, id)} aria-current={tab === id ? "page" : undefined}>
                {label}
              </a>
            ))}
          </nav>
          <div class="tab-body">
            {tab === "overview" && <QueueCharts client={client} queueId={queueId} />}
            {tab === "messages" && <Messages client={client} queue={q} />}
            {tab === "groups" && <ConsumerGroups client={client} queue={q} />}
            {tab === "consumers" && <Consumers client={client} queueId={queueId} />}
            {tab === "dlq" && <DeadLetters client={client} queue={q} />}
          </div>
          {editing && (
            <QueueForm client={client} compartmentId={q.compartmentId} queue={q}
              onClose={(changed) => { setEditing(false); if (changed) reload(); }} />
          )}
        </section>
      )}
    </Show>
  );
}

function StatsTiles({ stats }: { stats: Schemas["QueueStats"] | undefined }) {
  const tiles: [string, number | undefined][] = [
    ["Visible", stats?.queue.visibleMessages],
    ["In flight", stats?.queue.inFlightMessages],
    ["Delayed", stats?.queue.delayedMessages],
    ["In the DLQ", stats?.dlq.visibleMessages],
  ];
  return (
    <dl class="tiles" aria-label="Queue statistics">
      {tiles.map(([label, v]) => (
        <div class="tile" key={label}>
          <dt>{label}</dt>
          <dd>{count(v)}</dd>
        </div>
      ))}
    </dl>
  );
}

const ranges = { hour: { ms: 3600_000, resolution: "1m" }, day: { ms: 86400_000, resolution: "5m" } } as const;

/** The charts of the last hour or day, refreshed every 15 seconds (a minute is settled 30 s after its end). */
export function QueueCharts({ client, queueId }: { client: Client; queueId: string }) {
  const [range, setRange] = useState<keyof typeof ranges>("hour");
  const [metrics, reload] = useAsync(
    async () => {
      const { data } = await client.GET("/20210201/queues/{queueId}/metrics", {
        params: {
          path: { queueId },
          query: {
            start: new Date(Date.now() - ranges[range].ms).toISOString(),
            resolution: ranges[range].resolution,
            names: ["published", "delivered", "acknowledged", "deadLettered", "visible", "inFlight", "dlqMessages", "oldestMessageAge"],
          },
        },
      });
      return data;
    },
    [queueId, range],
    15000,
  );
  const by = (m: Schemas["QueueMetrics"], name: string) => m.items.find((s) => s.name === name);
  return (
    <div>
      <div class="toolbar">
        <label for="range">Range</label>
        <select id="range" value={range} onChange={(e) => setRange(e.currentTarget.value as keyof typeof ranges)}>
          <option value="hour">Last hour (per minute)</option>
          <option value="day">Last day (per 5 minutes)</option>
        </select>
        <button type="button" class="secondary" onClick={reload}>Refresh</button>
        <span class="muted">Refreshes every 15 s; a minute appears 30 s after it ends.</span>
      </div>
      <Show value={metrics} what="charts" onRetry={reload}>
        {(m) => (
          <div class="charts">
            <Chart title={`Messages per ${range === "hour" ? "minute" : "5 minutes"}`} unit="messages" lines={[
              { label: "published", series: by(m, "published") },
              { label: "delivered", series: by(m, "delivered") },
              { label: "acknowledged", series: by(m, "acknowledged") },
              { label: "dead-lettered", series: by(m, "deadLettered") },
            ]} />
            <Chart title="Depth" unit="messages" lines={[
              { label: "visible", series: by(m, "visible") },
              { label: "in flight", series: by(m, "inFlight") },
              { label: "in the DLQ", series: by(m, "dlqMessages") },
            ]} />
            <Chart title="Oldest message age" unit="seconds" lines={[{ label: "oldest age (s)", series: by(m, "oldestMessageAge") }]} />
          </div>
        )}
      </Show>
    </div>
  );
}
