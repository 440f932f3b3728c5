package tests

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestPartitionLagMetrics: a PARTITION group's lag (latest offset − committed offset over its partitions) is what
// GetStats says, what /metrics exports per group once the maintainer sampled it, and what the metrics API's
// partitionLag series says, for the group and (summed over the PARTITION groups) for the whole queue.
func TestPartitionLagMetrics(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, manualMetering)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithPartitions(3, false))
	stream := c.NewGroup(t, q, "stream", "", e2e.ByPartition())
	batch := c.NewGroup(t, q, "batch", "", e2e.ByPartition())
	for i := range 30 {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), fmt.Sprintf("key-%d", i%5)))
	}
	// stream reads everything and commits the first 8 messages of its read (in partition order); batch reads nothing.
	r := c.ReadPartitions(t, q, "stream", "w1", 100, 0)
	require.Len(t, r.Messages, 30)
	c.CommitRead(t, q, "stream", "w1", r.Messages[:8])
	lags := map[string]int64{}
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.Lag != nil {
			lags[g.DisplayName] = *g.Lag
		}
	}
	require.Equal(t, map[string]int64{"stream": 22, "batch": 30}, lags, "GetStats: 30 − 8 and 30")

	// A minute recent enough for the export (it shows the samples of the last 3 minutes) and settled for the API.
	t1 := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Minute)
	meter := srv.Node.Metering()
	require.NoError(t, meter.Flush(ctx, t1))
	require.NoError(t, meter.Sample(ctx, t1))

	// Prometheus: one series per PARTITION group (the queue is in the top: it is the only one).
	exported := func(groupID string) (int64, bool) {
		m := regexp.MustCompile(`(?m)^ferry_queue_partition_lag\{([^}]*)\} (\d+)$`).FindAllStringSubmatch(srv.Scrape(t), -1)
		for _, s := range m {
			if regexp.MustCompile(`consumer_group="` + regexp.QuoteMeta(groupID) + `"`).MatchString(s[1]) {
				require.Contains(t, s[1], `queue="`+q+`"`)
				require.Contains(t, s[1], `tenancy="`+tenancyID+`"`)
				n, err := strconv.ParseInt(s[2], 10, 64)
				require.NoError(t, err)
				return n, true
			}
		}
		return 0, false
	}
	require.Eventually(t, func() bool { _, ok := exported(stream.Id); return ok }, 30*time.Second, 100*time.Millisecond,
		"the node did not export the sampled partition lag")
	n, _ := exported(stream.Id)
	require.EqualValues(t, 22, n)
	n, ok := exported(batch.Id)
	require.True(t, ok)
	require.EqualValues(t, 30, n)

	// The metrics API: the group's series and the whole queue's (the sum of its PARTITION groups').
	end := t1.Add(time.Minute)
	names := []sdk.QueueMetricName{sdk.QueueMetricNamePartitionLag}
	res := sdk.GetQueueMetricsParamsResolutionN1m
	group := getMetrics(t, c, q, sdk.GetQueueMetricsParams{ConsumerGroupId: &stream.Id, Names: &names,
		Resolution: &res, Start: &t1, End: &end})
	require.Equal(t, map[time.Time]float64{t1: 22}, seriesOf(t, group, sdk.QueueMetricNamePartitionLag))
	whole := getMetrics(t, c, q, sdk.GetQueueMetricsParams{Names: &names, Resolution: &res, Start: &t1, End: &end})
	require.Equal(t, map[time.Time]float64{t1: 52}, seriesOf(t, whole, sdk.QueueMetricNamePartitionLag))

	// Committing the rest: the next sample says 0 for stream, and the queue is still sampled while batch lags.
	r = c.ReadPartitions(t, q, "stream", "w1", 100, 0)
	c.CommitRead(t, q, "stream", "w1", r.Messages)
	t2 := t1.Add(time.Minute)
	require.NoError(t, meter.Sample(ctx, t2))
	require.Eventually(t, func() bool { n, ok := exported(stream.Id); return ok && n == 0 }, 30*time.Second, 100*time.Millisecond,
		"the exported lag did not follow the commit")
	n, _ = exported(batch.Id)
	require.EqualValues(t, 30, n, "a queue whose PARTITION group lags is sampled without traffic")
}
