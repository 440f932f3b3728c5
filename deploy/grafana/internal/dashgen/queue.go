package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// queue shows one queue: what flows through it, what it holds, who consumes it. Per-queue series exist for the
// busiest queues (FERRY_METRICS_TOP_QUEUES); the others are together in queue="other".
func queue() *dashboard.DashboardBuilder {
	const one = `job=~"$job", tenancy="$tenancy", queue="$queue"`
	return newDashboard("ferry-queue", "ferry / queue",
		"One queue: messages in and out, depth, dead letters, the oldest message and the consumers. The busiest queues have series of their own; the others are summed into queue \"other\".").
		WithVariable(queryVariable("tenancy", "Tenancy", `label_values(ferry_queue_messages_published_total{job=~"$job"}, tenancy)`)).
		WithVariable(queryVariable("queue", "Queue", `label_values(ferry_queue_messages_published_total{job=~"$job", tenancy="$tenancy"}, queue)`)).
		WithRow(row("Flow")).
		WithPanel(graph("Messages in and out", "Messages per second published, delivered (redeliveries included), acknowledged and released (negative acknowledgement or visibility 0).", "short",
			q(`sum(rate(ferry_queue_messages_published_total{`+one+`}[$__rate_interval]))`, "published"),
			q(`sum(rate(ferry_queue_messages_delivered_total{`+one+`}[$__rate_interval]))`, "delivered"),
			q(`sum(rate(ferry_queue_messages_acknowledged_total{`+one+`}[$__rate_interval]))`, "acknowledged"),
			q(`sum(rate(ferry_queue_messages_released_total{`+one+`}[$__rate_interval]))`, "released"))).
		WithPanel(graph("Dead letters, redrives and drops", "Messages per second moved to the dead-letter queues and back, discarded at publish (no consumer group took them) and expired by retention.", "short",
			q(`sum(rate(ferry_queue_messages_dead_lettered_total{`+one+`}[$__rate_interval]))`, "dead-lettered"),
			q(`sum(rate(ferry_queue_messages_redriven_total{`+one+`}[$__rate_interval]))`, "redriven"),
			q(`sum(rate(ferry_queue_messages_discarded_total{`+one+`}[$__rate_interval]))`, "discarded"),
			q(`sum(rate(ferry_queue_messages_expired_total{`+one+`}[$__rate_interval]))`, "expired"))).
		WithPanel(graph("Bytes published", "Bytes per second of the messages published.", "Bps",
			q(`sum(rate(ferry_queue_published_bytes_total{`+one+`}[$__rate_interval]))`, "published"))).
		WithRow(row("Depth")).
		WithPanel(graph("Messages", "Messages visible (waiting to be received), in flight (leased, not yet acknowledged) and delayed, sampled from the database about once a minute.", "short",
			q(`max(ferry_queue_messages_visible{`+one+`})`, "visible"),
			q(`max(ferry_queue_messages_in_flight{`+one+`})`, "in flight"),
			q(`max(ferry_queue_messages_delayed{`+one+`})`, "delayed"))).
		WithPanel(graph("Dead-letter queues", "Messages in the queue's dead-letter queues (FerryDeadLettersGrowing fires while they keep growing).", "short",
			q(`max(ferry_queue_dlq_messages{`+one+`})`, "dead letters"))).
		WithPanel(graph("Oldest message", "Age of the oldest visible message (FerryOldestMessageTooOld fires above 30 minutes).", "s",
			q(`max(ferry_queue_oldest_message_age_seconds{`+one+`})`, "oldest"))).
		WithRow(row("Consumers")).
		WithPanel(graph("Consumers", "Registered consumers: watches and single active consumers (long polls do not register; see the deliveries).", "short",
			q(`max(ferry_queue_consumers{`+one+`})`, "consumers"))).
		WithPanel(graph("Delivery latency (tenancy)", "Time from put to first delivery, for the whole tenancy of the queue.", "s",
			q(`histogram_quantile(0.5, sum by (le) (rate(ferry_message_delivery_latency_seconds_bucket{job=~"$job", tenancy="$tenancy"}[$__rate_interval])))`, "p50"),
			q(`histogram_quantile(0.99, sum by (le) (rate(ferry_message_delivery_latency_seconds_bucket{job=~"$job", tenancy="$tenancy"}[$__rate_interval])))`, "p99"))).
		WithPanel(graph("Deliveries per acknowledgement", "Deliveries divided by acknowledgements: 1 when every message is handled at the first attempt; more when consumers fail or let leases expire.", "short",
			q(`sum(rate(ferry_queue_messages_delivered_total{`+one+`}[$__rate_interval])) / sum(rate(ferry_queue_messages_acknowledged_total{`+one+`}[$__rate_interval]))`, "deliveries per ack")))
}
