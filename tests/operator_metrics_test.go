package tests

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// The operators' metrics are on their own listener; the API port has no /metrics unless a metrics token is set.
// Requests are recorded under OTel's http.server.request.duration with their route and OCI operation, refused
// ones too.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	client.NewNamedQueue(t, tenancyID, "counted")
	require.Equal(t, http.StatusUnauthorized, srv.Raw(t, "", http.MethodGet, "/20210201/queues/"+tenancyID, "", nil).Status)

	resp, err := srv.HTTP.Client().Get(srv.MetricsURL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"), resp.Header.Get("Content-Type"))
	page := srv.Scrape(t)
	for _, want := range []string{
		`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="202",http_route="/20210201/queues",operation="CreateQueue"} 1`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="401",http_route="/20210201/queues/:queueId",operation="GetQueue"} 1`,
	} {
		require.True(t, strings.Contains(page, want), "the page has no line %s", want)
	}

	for _, authorization := range []string{"", "Bearer garbage", "Bearer " + srv.AdminToken(t, tenancyID)} {
		var headers []string
		if authorization != "" {
			headers = []string{"Authorization", authorization}
		}
		metrics := srv.Raw(t, "", http.MethodGet, "/metrics", "", nil, headers...)
		require.Equal(t, http.StatusNotFound, metrics.Status, "%s", metrics.Body)
		e2e.RequireErrorBody(t, metrics.Body, "NotAuthorizedOrNotFound", "FERRY_METRICS_LISTEN")
	}
}

// With FERRY_METRICS_TOKEN, /metrics is also on the API port, for the bearer of that token only: not for
// anonymous callers, a wrong token, or a tenant's valid JWT.
func TestMetricsTokenOnAPIPort(t *testing.T) {
	t.Parallel()
	const token = "operator-secret-7c1d"
	srv, tenancyID, _ := testserver.StartAdmin(t, func(c *server.Config) { c.MetricsToken = token })
	for _, authorization := range []string{"", "Bearer", "Bearer operator-secret", "Bearer " + token + "x", "Basic " + token,
		"Bearer " + srv.AdminToken(t, tenancyID)} {
		var headers []string
		if authorization != "" {
			headers = []string{"Authorization", authorization}
		}
		resp := srv.Raw(t, "", http.MethodGet, "/metrics", "", nil, headers...)
		require.Equal(t, http.StatusUnauthorized, resp.Status, "%q: %s", authorization, resp.Body)
		e2e.RequireErrorBody(t, resp.Body, "NotAuthenticated", "FERRY_METRICS_TOKEN")
	}
	for _, authorization := range []string{"Bearer " + token, "bearer " + token} {
		resp := srv.Raw(t, "", http.MethodGet, "/metrics", "", nil, "Authorization", authorization)
		require.Equal(t, http.StatusOK, resp.Status, "%q: %s", authorization, resp.Body)
		require.Contains(t, string(resp.Body), "http_server_request_duration_seconds_bucket{")
	}
}

// Every instrument has a description and a unit (OTel's view of them: the Prometheus text keeps no units).
func TestMetricsDescribed(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	q := client.NewQueue(t, tenancyID)
	client.Put(t, q, e2e.Msg("one"))
	client.DeleteAll(t, q, client.Get(t, q))

	var rm metricdata.ResourceMetrics
	require.NoError(t, srv.Metrics.Collect(context.Background(), &rm))
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			require.NotEmpty(t, m.Description, "%s has no description", m.Name)
			require.NotEmpty(t, m.Unit, "%s has no unit", m.Name)
			seen++
		}
	}
	require.Greater(t, seen, 10)
}

// IAM's metrics tell a denial (no policy allows: 404 to the caller) from a request whose target does not exist
// (also 404 to the caller), and count the denial under the permission it lacked.
func TestIAMMetrics(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam-metrics")
	q := e.Admin.NewQueue(t, e.ID)
	status, body := e.Client(t, "mallory", "Nobody").TryPut(t, q, "denied")
	e2e.RequireDenied(t, status, body)
	status, _ = e.Admin.TryGetQueue(t, strings.Replace(q, "ocid1.queue.", "ocid1.queue.x", 1))
	require.Equal(t, http.StatusNotFound, status)

	page := e.Server.Scrape(t)
	require.Equal(t, 1.0, metricSum(t, page, "ferry_iam_denials_total", `permission="QUEUE_PUSH"`))
	require.Equal(t, 1.0, metricSum(t, page, "ferry_iam_denials_total"), "one denial in all")
	require.Equal(t, 1.0, metricSum(t, page, "ferry_iam_decision_duration_seconds_count", `result="denied"`))
	require.Equal(t, 1.0, metricSum(t, page, "ferry_iam_decision_duration_seconds_count", `result="failed"`))
	require.GreaterOrEqual(t, metricSum(t, page, "ferry_iam_decision_duration_seconds_count", `result="allowed"`), 1.0)
}

// A put on one node wakes the other through NOTIFY: both record the lag, the receiver as remote, the sender (which
// hears its own notification) as local.
func TestNotifyLagMetrics(t *testing.T) {
	t.Parallel()
	a, tenancyID, client := testserver.StartAdmin(t)
	b := a.Peer(t)
	<-b.Node.Messaging().Ready()
	q := client.NewQueue(t, tenancyID)
	client.Put(t, q, e2e.Msg("wake the others"))
	for node, origin := range map[*testserver.Server]string{a: "local", b: "remote"} {
		require.Eventually(t, func() bool {
			return metricSum(t, node.Scrape(t), "ferry_notify_lag_seconds_count", `origin="`+origin+`"`) > 0
		}, 10*time.Second, 20*time.Millisecond, "no %s NOTIFY lag recorded", origin)
	}
	require.Zero(t, metricSum(t, a.Scrape(t), "ferry_notify_lag_seconds_count", `origin="remote"`), "a heard no one else")
}

// metricSum sums the samples of the metric name whose labels include every one of labels (name="value").
func metricSum(t *testing.T, page, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(page, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(series, l)
		}
		if matches {
			v, err := strconv.ParseFloat(value, 64)
			require.NoError(t, err, line)
			sum += v
		}
	}
	return sum
}
