package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// iam shows authorization: how many decisions, how fast, and who is refused (callers only see a 404).
func iam() *dashboard.DashboardBuilder {
	return newDashboard("ferry-iam", "ferry / IAM",
		"Authentication and authorization: decisions by result, their latency, denials by permission, and the 401s and 404s callers get.").
		WithVariable(instanceVariable()).
		WithRow(row("Decisions")).
		WithPanel(graph("Decisions by result", "Requests authorized per second: allowed, denied (no policy allows; the caller gets 404) or failed (no decision: the target does not exist, or the database did not answer).", "reqps",
			q(`sum by (result) (rate(ferry_iam_decision_duration_seconds_count{`+nodes+`}[$__rate_interval]))`, "{{result}}"))).
		WithPanel(graph("Decision latency", "Time to authorize a request, remembered decisions included (FerryIAMDecisionsSlow fires when p99 passes 50 ms).", "s",
			q(`histogram_quantile(0.5, sum by (le) (rate(ferry_iam_decision_duration_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "p50"),
			q(`histogram_quantile(0.99, sum by (le) (rate(ferry_iam_decision_duration_seconds_bucket{`+nodes+`}[$__rate_interval])))`, "p99"))).
		WithPanel(graph("Denials by permission", "Requests per second that no policy allowed, by the permission they needed (FerryIAMDenialsSpike fires on a jump).", "reqps",
			q(`sum by (permission) (rate(ferry_iam_denials_total{`+nodes+`}[$__rate_interval]))`, "{{permission}}"))).
		WithRow(row("What callers see")).
		WithPanel(graph("Not authenticated", "Requests per second answered 401: a missing, invalid or expired token.", "reqps",
			q(`sum(rate(http_server_request_duration_seconds_count{`+nodes+`, http_response_status_code="401"}[$__rate_interval])) or vector(0)`, "401"))).
		WithPanel(graph("Not found or not authorized by operation", "Requests per second answered 404 NotAuthorizedOrNotFound, by operation: denials and missing resources look the same to callers.", "reqps",
			q(`sum by (operation) (rate(http_server_request_duration_seconds_count{`+nodes+`, http_response_status_code="404"}[$__rate_interval]))`, "{{operation}}"))).
		WithPanel(number("Denied share", "Share of the decisions that were denials over the dashboard's time range.", "percentunit",
			q(`sum(increase(ferry_iam_decision_duration_seconds_count{`+nodes+`, result="denied"}[$__range])) / sum(increase(ferry_iam_decision_duration_seconds_count{`+nodes+`}[$__range]))`, "denied")))
}
