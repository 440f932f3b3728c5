package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// overview is the first dashboard an operator opens: is ferry serving, how fast, how much, and are the nodes
// healthy.
func overview() *dashboard.DashboardBuilder {
	return newDashboard("ferry-overview", "ferry / overview",
		"Requests, errors and latency by operation; messages across all queues; long polls and watches; the nodes' processes.").
		WithVariable(instanceVariable()).
		WithRow(row("Requests")).
		WithPanel(graph("Requests by operation", "Requests per second of both planes, by OCI operation.", "reqps",
			q(`sum by (operation) (rate(http_server_request_duration_seconds_count{`+nodes+`}[$__rate_interval]))`, "{{operation}}"))).
		WithPanel(graph("Responses by status", "Responses per second by HTTP status: 4xx are the callers' mistakes (404 includes IAM denials), 5xx ferry's.", "reqps",
			q(`sum by (http_response_status_code) (rate(http_server_request_duration_seconds_count{`+nodes+`}[$__rate_interval]))`, "{{http_response_status_code}}"))).
		WithPanel(graph("Server errors", "Share of requests answered 5xx (the FerryHighErrorRatio alert fires above 1 %).", "percentunit",
			q(`(sum(rate(http_server_request_duration_seconds_count{`+nodes+`, http_response_status_code=~"5.."}[$__rate_interval])) or vector(0))
  / sum(rate(http_server_request_duration_seconds_count{`+nodes+`}[$__rate_interval]))`, "5xx"))).
		WithPanel(graph("Latency p99 by operation", "99th percentile of each operation's duration, long polls and watches left out (they last as long as they wait).", "s",
			q(`histogram_quantile(0.99, sum by (operation, le) (rate(http_server_request_duration_seconds_bucket{`+nodes+`, operation!~"GetMessages|WatchMessages"}[$__rate_interval])))`, "{{operation}}"))).
		WithPanel(graph("Latency p50 by operation", "Median duration of each operation, long polls and watches left out.", "s",
			q(`histogram_quantile(0.5, sum by (operation, le) (rate(http_server_request_duration_seconds_bucket{`+nodes+`, operation!~"GetMessages|WatchMessages"}[$__rate_interval])))`, "{{operation}}"))).
		WithPanel(graph("Long polls and watches", "GetMessages calls waiting for messages, and watches (push consumers) open, per node.", "short",
			q(`sum by (instance) (ferry_receives_waiting{`+nodes+`})`, "long polls {{instance}}"),
			q(`sum by (instance) (ferry_watches_open{`+nodes+`})`, "watches {{instance}}"))).
		WithRow(row("Messages (all queues)")).
		WithPanel(graph("Messages per second", "Across all queues: published, delivered (leases, redeliveries included), acknowledged, released and dead-lettered.", "short",
			q(`sum(rate(ferry_queue_messages_published_total{`+jobs+`}[$__rate_interval]))`, "published"),
			q(`sum(rate(ferry_queue_messages_delivered_total{`+jobs+`}[$__rate_interval]))`, "delivered"),
			q(`sum(rate(ferry_queue_messages_acknowledged_total{`+jobs+`}[$__rate_interval]))`, "acknowledged"),
			q(`sum(rate(ferry_queue_messages_released_total{`+jobs+`}[$__rate_interval]))`, "released"),
			q(`sum(rate(ferry_queue_messages_dead_lettered_total{`+jobs+`}[$__rate_interval]))`, "dead-lettered"))).
		WithPanel(graph("Messages stored", "Visible, in flight and in dead-letter queues, all queues together (sampled from the database about once a minute).", "short",
			q(`sum(max by (tenancy, queue) (ferry_queue_messages_visible{`+jobs+`}))`, "visible"),
			q(`sum(max by (tenancy, queue) (ferry_queue_messages_in_flight{`+jobs+`}))`, "in flight"),
			q(`sum(max by (tenancy, queue) (ferry_queue_dlq_messages{`+jobs+`}))`, "dead letters"))).
		WithPanel(graph("Oldest messages", "The five queues whose oldest visible message waits longest (FerryOldestMessageTooOld fires above 30 minutes).", "s",
			q(`topk(5, max by (tenancy, queue) (ferry_queue_oldest_message_age_seconds{`+jobs+`}))`, "{{queue}}"))).
		WithPanel(graph("Delivery latency", "Time from put to first delivery, all tenancies.", "s",
			q(`histogram_quantile(0.5, sum by (le) (rate(ferry_message_delivery_latency_seconds_bucket{`+jobs+`}[$__rate_interval])))`, "p50"),
			q(`histogram_quantile(0.99, sum by (le) (rate(ferry_message_delivery_latency_seconds_bucket{`+jobs+`}[$__rate_interval])))`, "p99"))).
		WithPanel(graph("Busiest queues", "The five queues that take the most messages per second.", "short",
			q(`topk(5, sum by (tenancy, queue) (rate(ferry_queue_messages_published_total{`+jobs+`}[$__rate_interval])))`, "{{queue}}"))).
		WithPanel(graph("Dead letters per queue", "The five queues whose dead-letter queues hold the most messages.", "short",
			q(`topk(5, max by (tenancy, queue) (ferry_queue_dlq_messages{`+jobs+`}))`, "{{queue}}"))).
		WithRow(row("Nodes")).
		WithPanel(graph("CPU", "CPU seconds per second of each ferry process.", "short",
			q(`rate(process_cpu_seconds_total{`+nodes+`}[$__rate_interval])`, "{{instance}}"))).
		WithPanel(graph("Memory", "Resident memory and live Go heap of each ferry process.", "bytes",
			q(`process_resident_memory_bytes{`+nodes+`}`, "resident {{instance}}"),
			q(`go_memstats_heap_inuse_bytes{`+nodes+`}`, "heap {{instance}}"))).
		WithPanel(graph("Goroutines", "Goroutines of each ferry process: long polls hold none, each watch a few.", "short",
			q(`go_goroutines{`+nodes+`}`, "{{instance}}"))).
		WithPanel(graph("Database connections", "Connections of each node's pool in use, against the pool's size (the database dashboard has more).", "short",
			q(`sum by (instance) (db_client_connection_count{`+nodes+`, db_client_connection_state="used"})`, "used {{instance}}"),
			q(`max by (instance) (db_client_connection_max{`+nodes+`})`, "max {{instance}}"))).
		WithPanel(graph("NOTIFY lag p99", "How late nodes hear each other's wake-ups (LISTEN/NOTIFY), per receiving node.", "s",
			q(`histogram_quantile(0.99, sum by (instance, le) (rate(ferry_notify_lag_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "{{instance}}"))).
		WithPanel(graph("GC pauses", "Time the Go garbage collector stops the world, per second.", "s",
			q(`rate(go_gc_duration_seconds_sum{`+nodes+`}[$__rate_interval])`, "{{instance}}")))
}
