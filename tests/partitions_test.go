package tests

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of queue-based load balancing (docs/partitions.md): partitioned queues, PARTITION consumer
// groups, exclusive partition assignment with rebalancing, committed offsets with generations, seek.

// newPartitioned creates a partitioned queue (primary group disabled) with one PARTITION group named "stream".
func newPartitioned(t *testing.T, c *e2e.Client, tenancyID string, partitions int, opts ...e2e.QueueOption) string {
	t.Helper()
	q := c.NewQueue(t, tenancyID, append([]e2e.QueueOption{e2e.WithPartitions(partitions, false)}, opts...)...)
	g := c.NewGroup(t, q, "stream", "", e2e.ByPartition())
	require.Equal(t, sdk.ConsumerGroupLoadBalancingPARTITION, *g.LoadBalancing)
	return q
}

// TestPartitionsRebalance is the seed example: 3 partitions, 2 consumers → one owns 2, the other 1; a third joins →
// 1 each, and the partitions that did not move keep their owner and generation; one leaves → its partition moves
// at once. A moved partition is released by its old owner before the new owner reads it.
func TestPartitionsRebalance(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 3)
	for i := 0; i < 30; i++ {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), fmt.Sprintf("key-%d", i%7)))
	}

	r1 := c.ReadPartitions(t, q, "stream", "c1", 100, 0)
	require.Equal(t, []int{0, 1, 2}, e2e.Owned(r1), "the only consumer owns every partition")
	require.Len(t, r1.Messages, 30)

	// c2 joins: c1 keeps two partitions; the third is asked of c1, which still owns it until it calls again.
	r2 := c.ReadPartitions(t, q, "stream", "c2", 100, 0)
	require.Empty(t, e2e.Owned(r2), "c1 has not released the partition yet")
	require.Empty(t, r2.Messages)
	r1 = c.ReadPartitions(t, q, "stream", "c1", 100, 0)
	require.Equal(t, []int{0, 1}, e2e.Owned(r1), "c1 released the third partition by calling")
	for _, m := range r1.Messages {
		require.Contains(t, []int{0, 1}, m.Partition, "c1 reads only what it owns")
	}
	r2 = c.ReadPartitions(t, q, "stream", "c2", 100, 0)
	require.Equal(t, []int{2}, e2e.Owned(r2))
	require.Greater(t, r2.Generation, r1.Partitions[0].Generation, "the moved partition has a newer generation")
	keep := map[int]int64{}
	for _, p := range append(r1.Partitions, r2.Partitions...) {
		keep[p.Partition] = p.Generation
	}

	// c3 joins: one partition of c1 moves to c3; the others stay where they are, at their generation.
	require.Empty(t, e2e.Owned(c.ReadPartitions(t, q, "stream", "c3", 100, 0)))
	r1 = c.ReadPartitions(t, q, "stream", "c1", 100, 0)
	r2 = c.ReadPartitions(t, q, "stream", "c2", 100, 0)
	r3 := c.ReadPartitions(t, q, "stream", "c3", 100, 0)
	require.Len(t, r1.Partitions, 1)
	require.Equal(t, []int{2}, e2e.Owned(r2), "c2's partition did not move")
	require.Len(t, r3.Partitions, 1)
	require.Equal(t, keep[2], r2.Partitions[0].Generation, "an untouched partition keeps its generation")
	require.Equal(t, keep[r1.Partitions[0].Partition], r1.Partitions[0].Generation)
	owners := map[string][]int{}
	for _, cs := range c.GroupConsumers(t, q, "stream") {
		require.Equal(t, sdk.ConsumerKindPARTITION, cs.Kind)
		require.Equal(t, sdk.ConsumerStatusRUNNING, cs.Status)
		owners[cs.Id] = *cs.Partitions
	}
	require.Equal(t, map[string][]int{"c1": e2e.Owned(r1), "c2": {2}, "c3": e2e.Owned(r3)}, owners)

	// c2 leaves: its partition moves at once to a remaining consumer, which reads it from its committed offset.
	c.LeaveGroup(t, q, "stream", "c2")
	r1 = c.ReadPartitions(t, q, "stream", "c1", 100, 0)
	r3 = c.ReadPartitions(t, q, "stream", "c3", 100, 0)
	all := append(e2e.Owned(r1), e2e.Owned(r3)...)
	sort.Ints(all)
	require.Equal(t, []int{0, 1, 2}, all)
	require.Contains(t, append(e2e.Owned(r1), e2e.Owned(r3)...), 2)
	var gotTwo int
	for _, m := range append(r1.Messages, r3.Messages...) {
		if m.Partition == 2 {
			gotTwo++
		}
	}
	require.Equal(t, int(keep2Latest(t, c, q)+1), gotTwo, "nothing of partition 2 was committed: all of it is read again")

	// A fourth consumer stands by when every partition is taken... only once it is not needed: 3 partitions, 3
	// consumers → 1 each; a fifth would stand by.
	for _, id := range []string{"c4", "c5"} {
		c.ReadPartitions(t, q, "stream", id, 1, 0)
	}
	c.ReadPartitions(t, q, "stream", "c1", 1, 0)
	c.ReadPartitions(t, q, "stream", "c3", 1, 0)
	standby := 0
	for _, cs := range c.GroupConsumers(t, q, "stream") {
		if cs.Status == sdk.ConsumerStatusSTANDBY {
			standby++
			require.Empty(t, *cs.Partitions)
		}
	}
	require.Equal(t, 1, standby, "4 consumers, 3 partitions: one stands by")
}

// keep2Latest is partition 2's latest offset, from GetStats.
func keep2Latest(t *testing.T, c *e2e.Client, q string) int64 {
	t.Helper()
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.DisplayName == "stream" {
			return (*g.Partitions)[2].LatestOffset
		}
	}
	t.Fatal("no stream group in the stats")
	return 0
}
