package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// database shows ferry's side of PostgreSQL: the pool, vacuum's progress on the message tables, the statements by
// name, and LISTEN/NOTIFY between nodes.
func database() *dashboard.DashboardBuilder {
	return newDashboard("ferry-database", "ferry / database",
		"The connection pool, vacuum's progress on the message tables, the data plane's statements by name, and the LISTEN/NOTIFY wake-ups between nodes.").
		WithVariable(instanceVariable()).
		WithRow(row("Pool")).
		WithPanel(graph("Connections", "Connections of each node's pool in use and idle, and the pool's size (FERRY_DB_MAX_CONNS).", "short",
			q(`sum by (instance, db_client_connection_state) (db_client_connection_count{`+nodes+`})`, "{{db_client_connection_state}} {{instance}}"),
			q(`max by (instance) (db_client_connection_max{`+nodes+`})`, "max {{instance}}"))).
		WithPanel(graph("Acquires", "Connections acquired per second, and those that had to wait for a free one (FerryDBPoolSaturated fires when more than 5 % wait).", "short",
			q(`sum by (instance) (rate(ferry_db_pool_acquires_total{`+nodes+`}[$__rate_interval]))`, "acquired {{instance}}"),
			q(`sum by (instance) (rate(ferry_db_pool_waited_acquires_total{`+nodes+`}[$__rate_interval]))`, "waited {{instance}}"),
			q(`sum by (instance) (rate(ferry_db_pool_canceled_acquires_total{`+nodes+`}[$__rate_interval]))`, "canceled {{instance}}"))).
		WithPanel(graph("Mean acquire wait", "Time to get a connection from the pool, on average.", "s",
			q(`sum by (instance) (rate(ferry_db_pool_acquire_duration_seconds_total{`+nodes+`}[$__rate_interval]))
  / sum by (instance) (rate(ferry_db_pool_acquires_total{`+nodes+`}[$__rate_interval]))`, "{{instance}}"))).
		WithRow(row("Vacuum")).
		WithPanel(graph("Message tables' row versions", "Live and dead row versions of the message tables (all partitions). Every lease and acknowledgement leaves a dead one, which leases walk until vacuum removes it: dead rows that keep growing mean vacuum does not keep up.", "short",
			q(`max by (db_collection_name) (ferry_db_table_live_tuples{`+nodes+`})`, "live {{db_collection_name}}"),
			q(`max by (db_collection_name) (ferry_db_table_dead_tuples{`+nodes+`})`, "dead {{db_collection_name}}"))).
		WithPanel(graph("Oldest open transaction", "Age of the oldest open transaction on ferry's database: vacuum removes no row version newer than it (FerryDBTransactionHeldOpen fires above 10 minutes).", "s",
			q(`max(ferry_db_oldest_transaction_age_seconds{`+nodes+`})`, "oldest"))).
		WithRow(row("Statements")).
		WithPanel(graph("Statements per second", "Statements per second by name (the data plane's; \"other\" is the control plane's).", "short",
			q(`sum by (db_query_summary) (rate(db_client_operation_duration_seconds_count{`+nodes+`}[$__rate_interval]))`, "{{db_query_summary}}"))).
		WithPanel(graph("Statement latency p99", "99th percentile of each statement's duration (FerryDBStatementsSlow fires above 500 ms).", "s",
			q(`histogram_quantile(0.99, sum by (db_query_summary, le) (rate(db_client_operation_duration_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "{{db_query_summary}}"))).
		WithPanel(graph("Database time by statement", "Seconds of statement time per second, by statement: where the database's time goes.", "s",
			q(`sum by (db_query_summary) (rate(db_client_operation_duration_seconds_sum{`+nodes+`}[$__rate_interval]))`, "{{db_query_summary}}"))).
		WithRow(row("LISTEN/NOTIFY")).
		WithPanel(graph("NOTIFY lag", "Time from a node's NOTIFY (wake-ups of long polls and watches) to its receipt: local is a node's own notifications, remote another node's (including the clocks' skew).", "s",
			q(`histogram_quantile(0.5, sum by (origin, le) (rate(ferry_notify_lag_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "p50 {{origin}}"),
			q(`histogram_quantile(0.99, sum by (origin, le) (rate(ferry_notify_lag_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "p99 {{origin}}"))).
		WithPanel(graph("Notifications received", "Notifications per second each node receives on its LISTEN connection.", "short",
			q(`sum by (instance, origin) (rate(ferry_notify_lag_seconds_count{`+nodes+`}[$__rate_interval]))`, "{{origin}} {{instance}}"))).
		WithPanel(graph("LISTEN reconnections", "Times a node re-established its LISTEN connection (it missed other nodes' wake-ups meanwhile).", "short",
			q(`sum by (instance) (increase(ferry_listen_reconnects_total{`+nodes+`}[$__rate_interval]))`, "{{instance}}")))
}
