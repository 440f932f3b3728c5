package tests

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of the tenant metrics (GET /queues/{id}/metrics): the series say what was done, across nodes
// and resolutions, and only to callers allowed to read them. Metering is manual here: each node's counts are
// flushed into chosen past minutes, and the maintainer's sampling of a minute is called directly.

func manualMetering(c *server.Config) { c.Metrics.Manual = true }

// metricsRange is three consecutive minutes in one 5-minute bucket, long enough ago to be settled.
func metricsRange() (t1, t2, t3 time.Time) {
	t1 = time.Now().UTC().Add(-20 * time.Minute).Truncate(5 * time.Minute)
	return t1, t1.Add(time.Minute), t1.Add(2 * time.Minute)
}

func getMetrics(t *testing.T, c *e2e.Client, queueID string, p sdk.GetQueueMetricsParams) *sdk.QueueMetrics {
	t.Helper()
	resp, err := c.GetQueueMetricsWithResponse(context.Background(), queueID, &p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	return resp.JSON200
}

// seriesOf returns the points of the named series as values, by bucket start.
func seriesOf(t *testing.T, m *sdk.QueueMetrics, name sdk.QueueMetricName) map[time.Time]float64 {
	t.Helper()
	for _, s := range m.Items {
		if s.Name == name {
			out := map[time.Time]float64{}
			for _, p := range s.Points {
				out[p.Timestamp.UTC()] = p.Value
			}
			return out
		}
	}
	t.Fatalf("no series %s", name)
	return nil
}

func sumOf(points map[time.Time]float64) float64 {
	var s float64
	for _, v := range points {
		s += v
	}
	return s
}

// TestQueueMetricsSayWhatWasDone: publish 100 (half through each of two nodes), consume and acknowledge 60,
// release 5 that then dead-letter, redrive them: every counter says so in the minute it happened, the gauges say
// what is left, at 1m, 5m and 1h, for the queue and for its primary consumer group.
func TestQueueMetricsSayWhatWasDone(t *testing.T) {
	t.Parallel()
	a, tenancyID, c := testserver.StartAdmin(t, manualMetering)
	b := a.Peer(t, manualMetering)
	cb := b.Client(t, a.AdminToken(t, tenancyID))
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(1))
	t1, t2, t3 := metricsRange()
	flush := func(minute time.Time) {
		require.NoError(t, a.Node.Metering().Flush(ctx, minute))
		require.NoError(t, b.Node.Metering().Flush(ctx, minute))
	}

	// Minute 1: 100 published, 50 through each node.
	var bytes float64
	for i := range 10 {
		client := c
		if i%2 == 1 {
			client = cb
		}
		var entries []sdk.PutMessagesDetailsEntry
		for k := range 10 {
			content := fmt.Sprintf("message-%03d", i*10+k)
			entries = append(entries, e2e.Msg(content))
			bytes += float64(len(content))
		}
		client.Put(t, q, entries...)
	}
	flush(t1)

	// Minute 2: 60 consumed and acknowledged.
	var consumed []sdk.GetMessage
	for len(consumed) < 60 {
		consumed = append(consumed, c.Get(t, q, e2e.Limit(min(20, 60-len(consumed))), e2e.Visibility(300))...)
	}
	c.DeleteAll(t, q, consumed)
	flush(t2)

	// Minute 3: node B takes 5 and releases them; the rest is consumed, and the lease that reaches the 5
	// dead-letters them (deliveries 1 of 1); then they are redriven.
	released := cb.Get(t, q, e2e.Limit(5), e2e.Visibility(300))
	require.Len(t, released, 5)
	for _, m := range released {
		cb.Release(t, q, m)
	}
	var next []sdk.GetMessage // the remaining 35: the released ones are leased last (visible last), and dead-lettered
	for got := c.Get(t, q, e2e.Limit(20), e2e.Visibility(300)); len(got) > 0; got = c.Get(t, q, e2e.Limit(20), e2e.Visibility(300)) {
		next = append(next, got...)
	}
	require.Len(t, next, 35)
	for _, m := range next {
		require.NotContains(t, e2e.Contents(released), m.Content)
	}
	red, err := cb.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, red.StatusCode(), string(red.Body))
	require.Equal(t, 5, red.JSON200.RedrivenMessages)
	flush(t3)
	require.NoError(t, a.Node.Metering().Sample(ctx, t3))

	delivered := float64(60 + 5 + len(next))
	end := t3.Add(time.Minute)
	m := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &t1, End: &end})
	require.Equal(t, sdk.QueueMetricsResolutionN1m, m.Resolution)
	require.Equal(t, t1, m.Start.UTC())
	require.Equal(t, end, m.End.UTC())
	require.Len(t, m.Items, 16, "every metric when names is absent")
	want := map[sdk.QueueMetricName][3]float64{
		sdk.QueueMetricNamePublished:      {100, 0, 0},
		sdk.QueueMetricNamePublishedBytes: {bytes, 0, 0},
		sdk.QueueMetricNameDelivered:      {0, 60, float64(5 + len(next))},
		sdk.QueueMetricNameAcknowledged:   {0, 60, 0},
		sdk.QueueMetricNameReleased:       {0, 0, 5},
		sdk.QueueMetricNameDeadLettered:   {0, 0, 5},
		sdk.QueueMetricNameRedriven:       {0, 0, 5},
		sdk.QueueMetricNameDiscarded:      {0, 0, 0},
		sdk.QueueMetricNameVisible:        {0, 0, 100 - 60 - float64(len(next))},
		sdk.QueueMetricNameInFlight:       {0, 0, float64(len(next))},
		sdk.QueueMetricNameDlqMessages:    {0, 0, 0},
	}
	for name, values := range want {
		got := seriesOf(t, m, name)
		require.Len(t, got, 3, name)
		for i, minute := range []time.Time{t1, t2, t3} {
			require.Equal(t, values[i], got[minute], "%s at minute %d", name, i+1)
		}
	}
	require.Positive(t, seriesOf(t, m, sdk.QueueMetricNameOldestMessageAge)[t3])
	for _, s := range m.Items {
		require.Equal(t, q, s.Dimensions.QueueId)
		require.Nil(t, s.Dimensions.ConsumerGroupId)
	}

	// The same at 5m and 1h: counters summed, gauges their maximum.
	for _, res := range []sdk.GetQueueMetricsParamsResolution{sdk.GetQueueMetricsParamsResolutionN5m, sdk.GetQueueMetricsParamsResolutionN1h} {
		start, stop := t1.Add(-time.Hour), end.Add(time.Hour)
		m := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &start, End: &stop, Resolution: &res,
			Names: &[]sdk.QueueMetricName{sdk.QueueMetricNamePublished, sdk.QueueMetricNameDelivered, sdk.QueueMetricNameAcknowledged, sdk.QueueMetricNameDeadLettered, sdk.QueueMetricNameVisible}})
		require.Len(t, m.Items, 5)
		require.Equal(t, sdk.QueueMetricNamePublished, m.Items[0].Name, "in the order of names")
		require.Equal(t, sdk.MetricSeriesKindCOUNTER, m.Items[0].Kind)
		require.Equal(t, sdk.MetricSeriesKindGAUGE, m.Items[4].Kind)
		require.EqualValues(t, 100, sumOf(seriesOf(t, m, sdk.QueueMetricNamePublished)), res)
		require.EqualValues(t, delivered, sumOf(seriesOf(t, m, sdk.QueueMetricNameDelivered)), res)
		require.EqualValues(t, 60, sumOf(seriesOf(t, m, sdk.QueueMetricNameAcknowledged)), res)
		require.EqualValues(t, 5, sumOf(seriesOf(t, m, sdk.QueueMetricNameDeadLettered)), res)
		require.EqualValues(t, 100-60-len(next), sumOf(seriesOf(t, m, sdk.QueueMetricNameVisible)), res)
	}

	// The primary consumer group's share is the whole queue's: it is the only group.
	group := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &t1, End: &end, ConsumerGroupId: e2e.Ptr("primary"),
		Names: &[]sdk.QueueMetricName{sdk.QueueMetricNamePublished, sdk.QueueMetricNameAcknowledged, sdk.QueueMetricNameVisible}})
	require.NotNil(t, group.ConsumerGroupId)
	require.EqualValues(t, 100, sumOf(seriesOf(t, group, sdk.QueueMetricNamePublished)))
	require.EqualValues(t, 60, sumOf(seriesOf(t, group, sdk.QueueMetricNameAcknowledged)))
	require.EqualValues(t, 100-60-len(next), seriesOf(t, group, sdk.QueueMetricNameVisible)[t3])

	// Operators see the same counts on /metrics, each node its own.
	require.EqualValues(t, 50, a.MetricValue(t, "ferry_queue_messages_published_total", q))
	require.EqualValues(t, 50, b.MetricValue(t, "ferry_queue_messages_published_total", q))
	require.EqualValues(t, 5, b.MetricValue(t, "ferry_queue_messages_redriven_total", q))
}

// TestQueueMetricsOfConsumerGroups: the whole queue counts a published message once, each group the copies it
// received; a group's series are its own.
func TestQueueMetricsOfConsumerGroups(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, manualMetering)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	billing := c.NewGroup(t, q, "billing", `:team = "billing"`)
	t1, _, _ := metricsRange()
	c.Put(t, q,
		e2e.WithAttrs("one", map[string]any{"team": "billing"}),
		e2e.WithAttrs("two", map[string]any{"team": "billing"}),
		e2e.WithAttrs("three", map[string]any{"team": "ops"}))
	got := c.Get(t, q, e2e.OfGroup("billing"), e2e.Limit(10), e2e.Visibility(300))
	require.Len(t, got, 2)
	c.DeleteAll(t, q, got[:1], e2e.OfGroup("billing"))
	require.NoError(t, srv.Node.Metering().Flush(ctx, t1))
	require.NoError(t, srv.Node.Metering().Sample(ctx, t1))

	end := t1.Add(time.Minute)
	names := &[]sdk.QueueMetricName{sdk.QueueMetricNamePublished, sdk.QueueMetricNameDelivered, sdk.QueueMetricNameAcknowledged, sdk.QueueMetricNameVisible, sdk.QueueMetricNameInFlight}
	whole := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &t1, End: &end, Names: names})
	require.EqualValues(t, 3, seriesOf(t, whole, sdk.QueueMetricNamePublished)[t1], "messages, not copies")
	require.EqualValues(t, 3, seriesOf(t, whole, sdk.QueueMetricNameVisible)[t1], "every group's copies: 3 primary")
	require.EqualValues(t, 1, seriesOf(t, whole, sdk.QueueMetricNameInFlight)[t1])
	g := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &t1, End: &end, Names: names, ConsumerGroupId: &billing.Id})
	require.Equal(t, billing.Id, *g.ConsumerGroupId)
	require.Equal(t, billing.Id, *g.Items[0].Dimensions.ConsumerGroupId)
	require.EqualValues(t, 2, seriesOf(t, g, sdk.QueueMetricNamePublished)[t1], "the copies billing received")
	require.EqualValues(t, 2, seriesOf(t, g, sdk.QueueMetricNameDelivered)[t1])
	require.EqualValues(t, 1, seriesOf(t, g, sdk.QueueMetricNameAcknowledged)[t1])
	require.EqualValues(t, 0, seriesOf(t, g, sdk.QueueMetricNameVisible)[t1])
	require.EqualValues(t, 1, seriesOf(t, g, sdk.QueueMetricNameInFlight)[t1])
	primary := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Start: &t1, End: &end, Names: names, ConsumerGroupId: e2e.Ptr("primary")})
	require.EqualValues(t, 3, seriesOf(t, primary, sdk.QueueMetricNamePublished)[t1])
	require.EqualValues(t, 3, seriesOf(t, primary, sdk.QueueMetricNameVisible)[t1])
}

// TestQueueMetricsAccess: a queue's metrics are read with QUEUE_METRICS_READ (read queue-metrics, or read
// queues), and are a 404 to anyone else: another tenancy, or a caller with other rights on the queue.
func TestQueueMetricsAccess(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "metrics", manualMetering)
	q := e.Admin.NewNamedQueue(t, e.ID, "orders").Id
	e.Policy(t, e.ID,
		"Allow group Watchers to read queue-metrics in tenancy",
		"Allow group Readers to read queues in tenancy",
		"Allow group Producers to use queue-push in tenancy",
		"Allow group Others to read queue-metrics in tenancy where target.queue.name = 'other'",
	)
	try := func(c *e2e.Client, queueID string) (int, []byte) {
		resp, err := c.GetQueueMetricsWithResponse(context.Background(), queueID, &sdk.GetQueueMetricsParams{})
		require.NoError(t, err)
		return resp.StatusCode(), resp.Body
	}
	for _, allowed := range []*e2e.Client{e.Client(t, "w", "Watchers"), e.Client(t, "r", "Readers"), e.Admin} {
		status, body := try(allowed, q)
		require.Equal(t, http.StatusOK, status, string(body))
	}
	for _, denied := range []*e2e.Client{e.Client(t, "p", "Producers"), e.Client(t, "o", "Others"), e.Client(t, "n")} {
		status, body := try(denied, q)
		e2e.RequireDenied(t, status, body)
	}
	// Another tenancy's administrator: as if the queue did not exist.
	_, other := e.Server.Admin(t, "metrics-other")
	status, body := try(other, q)
	e2e.RequireDenied(t, status, body)
	// Watchers read metrics, not the queue itself.
	status, _ = e.Client(t, "w", "Watchers").TryGetQueue(t, q)
	require.Equal(t, http.StatusNotFound, status)
	// The policy simulator knows the permission.
	for groups, allowed := range map[string]bool{"Watchers": true, "Readers": true, "Producers": false} {
		sim := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "s", Groups: &[]string{groups},
			Permission: sdk.AuthorizeDetailsPermissionQUEUEMETRICSREAD, QueueId: &q})
		require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
		require.Equal(t, allowed, sim.JSON200.Allowed, groups)
	}
}

// TestQueueMetricsBadInput: unknown names and resolutions, an empty or too long range answer 400.
func TestQueueMetricsBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, manualMetering)
	q := c.NewQueue(t, tenancyID)
	token := srv.AdminToken(t, tenancyID)
	base := "/20210201/queues/" + q + "/metrics"
	start := time.Now().UTC().Add(-3 * 24 * time.Hour).Format(time.RFC3339)
	for _, query := range []string{
		"?names=bogus", "?resolution=2m", "?aggregation=median", "?start=yesterday",
		"?start=" + start, // 3 days at 1m: more than 1440 buckets
		"?start=2026-01-01T00:10:00Z&end=2026-01-01T00:00:00Z",
		"?consumerGroupId=nope",
	} {
		r := srv.Raw(t, token, http.MethodGet, base+query, "", nil)
		want := http.StatusBadRequest
		if query == "?consumerGroupId=nope" {
			want = http.StatusNotFound
		}
		require.Equal(t, want, r.Status, "%s: %s", query, r.Body)
		e2e.RequireErrorBody(t, r.Body, map[int]string{400: "InvalidParameter", 404: "NotAuthorizedOrNotFound"}[want])
	}
	// 3 days at 1h is fine; an empty queue's series are zeros.
	r := srv.Raw(t, token, http.MethodGet, base+"?resolution=1h&names=published&start="+start, "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// TestIdleQueuesCostNothing: beside 10,000 idle queues, one busy queue: flushes, samples and maintenance cycles
// write rollups for the busy queue only — an idle queue costs no row and no statement.
func TestIdleQueuesCostNothing(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, manualMetering)
	ctx := context.Background()
	busy := c.NewQueue(t, tenancyID)
	idle := c.NewQueue(t, tenancyID)
	_, err := srv.Pool.Exec(ctx, `INSERT INTO queues SELECT (jsonb_populate_record(NULL::queues, to_jsonb(q) ||
			jsonb_build_object('id', q.id || '-' || g, 'display_name', 'idle-' || g, 'no', nextval('queue_numbers')))).*
		FROM queues q, generate_series(1, 9999) g WHERE q.id = $1`, idle)
	require.NoError(t, err)
	var queues int
	require.NoError(t, srv.Pool.QueryRow(ctx, `SELECT count(*) FROM queues WHERE tenancy_id = $1`, tenancyID).Scan(&queues))
	require.Equal(t, 10001, queues)

	t1, _, _ := metricsRange()
	meter := srv.Node.Metering()
	for i := range 5 {
		minute := t1.Add(time.Duration(i) * time.Minute)
		if i == 0 {
			c.Put(t, busy, e2e.Msg("one"), e2e.Msg("two"))
		}
		require.NoError(t, meter.Flush(ctx, minute))
		require.NoError(t, meter.Sample(ctx, minute))
	}
	srv.RunMaintainer(t)
	var other, rows int
	require.NoError(t, srv.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE queue_id <> $1), count(*) FROM queue_metrics`, busy).
		Scan(&other, &rows))
	require.Zero(t, other, "no rollup of an idle queue")
	// The busy queue: its traffic's minute (whole queue and primary group), and a sample each minute while its
	// messages wait.
	require.Equal(t, 10, rows)
}
