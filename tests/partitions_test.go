package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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

// delivery is one message as a consumer read it.
type delivery struct {
	consumer   string
	partition  int
	offset     int64
	generation int64
}

// TestPartitionsConcurrentConsumers: consumers read and commit concurrently while others join and leave; no
// message is delivered to two owners of one generation, each owner reads its partitions in offset order from the
// committed offset, and every message is committed in the end.
func TestPartitionsConcurrentConsumers(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 4)
	const total = 400
	for i := 0; i < total; i += 20 {
		batch := make([]sdk.PutMessagesDetailsEntry, 20)
		for k := range batch {
			batch[k] = e2e.Keyed(fmt.Sprintf("m%d", i+k), fmt.Sprintf("source-%d", (i+k)%13))
		}
		c.Put(t, q, batch...)
	}

	var mu sync.Mutex
	var log []delivery
	stop := make(chan struct{})
	consume := func(id string, quit <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-quit:
				return
			default:
			}
			resp, err := c.TryReadPartitions(q, "stream", id, 15, 1)
			if err != nil || resp.StatusCode() != http.StatusOK {
				t.Errorf("%s read: %v %s", id, err, e2e.Body(resp))
				return
			}
			mu.Lock()
			for _, m := range resp.JSON200.Messages {
				log = append(log, delivery{id, m.Partition, m.Offset, m.Generation})
			}
			mu.Unlock()
			if len(resp.JSON200.Messages) == 0 {
				continue
			}
			commit, err := c.TryCommit(q, "stream", id, e2e.LastOffsets(resp.JSON200.Messages)...)
			if err != nil || (commit.StatusCode() != http.StatusNoContent && commit.StatusCode() != http.StatusConflict) {
				t.Errorf("%s commit: %v %s", id, err, e2e.Body(commit))
				return
			}
		}
	}
	var wg sync.WaitGroup
	quitB := make(chan struct{})
	for _, id := range []string{"a", "b", "c"} {
		quit := (<-chan struct{})(nil)
		if id == "b" {
			quit = quitB
		}
		wg.Add(1)
		go func() { defer wg.Done(); consume(id, quit) }()
	}
	time.Sleep(300 * time.Millisecond)
	wg.Add(1)
	go func() { defer wg.Done(); consume("d", nil) }() // joins
	time.Sleep(300 * time.Millisecond)
	close(quitB)
	c.LeaveGroup(t, q, "stream", "b") // leaves
	require.Eventually(t, func() bool {
		for _, g := range *c.Stats(t, q).ConsumerGroups {
			if g.DisplayName == "stream" {
				return *g.Lag == 0
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "everything is committed")
	close(stop)
	wg.Wait()

	owner := map[[2]int64]string{} // (partition, generation) → the consumer that read it
	read := map[int]map[int64]bool{}
	last := map[[3]string]int64{} // (consumer, partition, generation) → last offset read
	for _, d := range log {
		key := [2]int64{int64(d.partition), d.generation}
		if o, ok := owner[key]; ok {
			require.Equal(t, o, d.consumer, "partition %d generation %d was delivered to two owners", d.partition, d.generation)
		}
		owner[key] = d.consumer
		if read[d.partition] == nil {
			read[d.partition] = map[int64]bool{}
		}
		read[d.partition][d.offset] = true
		k := [3]string{d.consumer, fmt.Sprint(d.partition), fmt.Sprint(d.generation)}
		if prev, ok := last[k]; ok {
			// A read starts after the committed offset: the next read of an owner goes on where its commit was,
			// or (its commit refused) repeats; never goes back past what it committed.
			require.GreaterOrEqual(t, d.offset, prev-15, "offset order within partition %d", d.partition)
		}
		last[k] = d.offset
	}
	n := 0
	for p, offsets := range read {
		for o := int64(0); o < int64(len(offsets)); o++ {
			require.True(t, offsets[o], "partition %d: offset %d never read (offsets are dense)", p, o)
		}
		n += len(offsets)
	}
	require.Equal(t, total, n, "every message was read")
}

// TestPartitionsCrashReplaysFromCommit: a consumer that stops without committing (its consumer lease lapses)
// loses its partition to another, which resumes after the last committed offset; the crashed consumer's late
// commit is refused with 409 StaleGeneration, and commits nothing.
func TestPartitionsCrashReplaysFromCommit(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 1, func(d *sdk.CreateQueueDetails) { d.ConsumerLeaseInSeconds = e2e.Ptr(5) })
	for i := 0; i < 10; i++ {
		c.Put(t, q, e2e.Msg(fmt.Sprintf("m%d", i)))
	}
	r := c.ReadPartitions(t, q, "stream", "crashy", 4, 0)
	require.Len(t, r.Messages, 4)
	for i, m := range r.Messages {
		require.Equal(t, int64(i), m.Offset, "offsets are dense from 0, in publish order")
		require.Equal(t, fmt.Sprintf("m%d", i), m.Content)
	}
	c.CommitRead(t, q, "stream", "crashy", r.Messages[:2]) // processed m0, m1
	again := c.ReadPartitions(t, q, "stream", "crashy", 4, 0)
	require.Equal(t, int64(2), again.Messages[0].Offset, "a read starts after the committed offset")
	gen := again.Messages[0].Generation

	// crashy stops calling. next registers and waits: the partition moves once crashy's lease (5 s) lapses.
	start := time.Now()
	next := c.ReadPartitions(t, q, "stream", "next", 100, 0)
	require.Empty(t, next.Partitions, "crashy still holds its lease")
	next = c.ReadPartitions(t, q, "stream", "next", 100, 15)
	require.Less(t, time.Since(start), 12*time.Second)
	require.Equal(t, []int{0}, e2e.Owned(next))
	require.Equal(t, "m2", next.Messages[0].Content, "the new owner resumes after the last commit")
	require.Len(t, next.Messages, 8)
	require.Greater(t, next.Messages[0].Generation, gen)

	resp, err := c.TryCommit(q, "stream", "crashy", sdk.PartitionOffset{Partition: 0, Offset: 5, Generation: gen})
	e2e.RequireError(t, resp, err, http.StatusConflict, "StaleGeneration", "partition(s) 0")
	require.Equal(t, "m2", c.ReadPartitions(t, q, "stream", "next", 1, 0).Messages[0].Content, "the stale commit changed nothing")
}

// TestPartitionsSeek: a group seeks to an offset or a time to replay; the owner's commits of what it read
// before the seek are refused.
func TestPartitionsSeek(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 2)
	for i := 0; i < 6; i++ {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("early%d", i), fmt.Sprint(i)))
	}
	time.Sleep(50 * time.Millisecond)
	between := time.Now().UTC()
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 4; i++ {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("late%d", i), fmt.Sprint(i)))
	}
	r := c.ReadPartitions(t, q, "stream", "solo", 100, 0)
	require.Len(t, r.Messages, 10)
	c.CommitRead(t, q, "stream", "solo", r.Messages)
	require.Empty(t, c.ReadPartitions(t, q, "stream", "solo", 100, 0).Messages, "all committed")

	zero := int64(0)
	sought := c.Seek(t, q, "stream", sdk.SeekPartitionsDetails{Offset: &zero})
	require.Len(t, sought.Partitions, 2)
	for _, p := range sought.Partitions {
		require.Equal(t, int64(-1), p.CommittedOffset)
	}
	replay := c.ReadPartitions(t, q, "stream", "solo", 100, 0)
	require.Len(t, replay.Messages, 10, "replayed from offset 0")
	resp, err := c.TryCommit(q, "stream", "solo", e2e.LastOffsets(r.Messages)...)
	e2e.RequireError(t, resp, err, http.StatusConflict, "StaleGeneration")

	c.Seek(t, q, "stream", sdk.SeekPartitionsDetails{Time: &between})
	late := c.ReadPartitions(t, q, "stream", "solo", 100, 0)
	var contents []string
	for _, m := range late.Messages {
		contents = append(contents, m.Content)
	}
	sort.Strings(contents)
	require.Equal(t, []string{"late0", "late1", "late2", "late3"}, contents, "replayed from the first message at or after the time")

	// One partition only, past its end: nothing more to read there.
	far := int64(1000)
	c.Seek(t, q, "stream", sdk.SeekPartitionsDetails{Offset: &far, Partitions: &[]int{late.Messages[0].Partition}})
	for _, m := range c.ReadPartitions(t, q, "stream", "solo", 100, 0).Messages {
		require.NotEqual(t, late.Messages[0].Partition, m.Partition)
	}
}

// TestPartitionsBesideMessageGroups: MESSAGE groups of a partitioned queue keep working beside a PARTITION group
// (fanout applies to both), and each kind refuses the other's API.
func TestPartitionsBesideMessageGroups(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithPartitions(3, true))
	c.NewGroup(t, q, "stream", "", e2e.ByPartition())
	c.NewGroup(t, q, "red", `:color = "red"`)
	c.Put(t, q, e2e.WithAttrs("r1", map[string]any{"color": "red"}), e2e.WithAttrs("b1", map[string]any{"color": "blue"}),
		e2e.InGroup("o1", "g"), e2e.InGroup("o2", "g"))

	primary := c.Get(t, q, e2e.Limit(10))
	require.Len(t, primary, 3, "the primary group gets every message (the ordered group one at a time)")
	red := c.Get(t, q, e2e.OfGroup("red"), e2e.Limit(10))
	require.Len(t, red, 1)
	require.Equal(t, "r1", red[0].Content)
	stream := c.ReadPartitions(t, q, "stream", "s1", 100, 0)
	require.Len(t, stream.Messages, 4, "the partition group reads every message")
	ids := map[int64]bool{}
	for _, m := range primary {
		ids[m.Id] = true
	}
	for _, m := range stream.Messages {
		if m.Content == "r1" {
			require.True(t, ids[m.Id], "a message has one id in every group")
		}
	}
	c.DeleteAll(t, q, primary)
	c.DeleteAll(t, q, red, e2e.OfGroup("red"))
	require.Len(t, c.ReadPartitions(t, q, "stream", "s1", 100, 0).Messages, 4, "acknowledgements of MESSAGE groups delete nothing of the partitions")

	status, body := c.TryGet(t, q, e2e.OfGroup("stream"))
	e2e.RequireAPIError(t, status, body, http.StatusBadRequest, "InvalidParameter", "partitions/messages")
	resp, err := c.TryReadPartitions(q, "red", "s1", 10, 0)
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "GetMessages")

	stats := c.Stats(t, q)
	for _, g := range *stats.ConsumerGroups {
		if g.DisplayName == "stream" {
			require.Equal(t, sdk.ConsumerGroupStatsLoadBalancingPARTITION, *g.LoadBalancing)
			require.Equal(t, int64(4), *g.Lag)
		} else {
			require.Equal(t, sdk.ConsumerGroupStatsLoadBalancingMESSAGE, *g.LoadBalancing)
		}
	}
	_ = srv
}

// TestPartitionsTwoNodes: consumers on two nodes of one database share the partitions; a consumer that joins on
// one node makes a waiting owner on the other release a partition, and a consumer removed through one node has its
// partitions taken over on the other.
func TestPartitionsTwoNodes(t *testing.T) {
	t.Parallel()
	srvA, tenancyID, a := testserver.StartAdmin(t)
	srvB := srvA.Peer(t)
	b := srvB.AdminOf(t, tenancyID)
	q := newPartitioned(t, a, tenancyID, 4)
	for i := 0; i < 40; i++ {
		a.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), fmt.Sprintf("k%d", i)))
	}
	require.Len(t, a.ReadPartitions(t, q, "stream", "on-a", 100, 0).Partitions, 4)

	// on-a waits in a long poll on node A (it has read everything: nothing new until it commits... it has not
	// committed, so commit first, then wait); on-b joins on node B.
	r := a.ReadPartitions(t, q, "stream", "on-a", 100, 0)
	a.CommitRead(t, q, "stream", "on-a", r.Messages)
	waiting := make(chan sdk.PartitionMessages, 1)
	go func() {
		resp, err := a.TryReadPartitions(q, "stream", "on-a", 100, 20)
		if err == nil && resp.JSON200 != nil {
			waiting <- *resp.JSON200
		}
		close(waiting)
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	require.Empty(t, b.ReadPartitions(t, q, "stream", "on-b", 100, 0).Partitions, "on-a still owns them")
	released, ok := <-waiting
	require.True(t, ok)
	require.Less(t, time.Since(start), 5*time.Second, "the waiting owner answered when asked for partitions")
	require.Len(t, released.Partitions, 2, "on-a released two partitions")
	onB := b.ReadPartitions(t, q, "stream", "on-b", 100, 0)
	require.Len(t, onB.Partitions, 2)
	require.Empty(t, onB.Messages, "what on-a committed is not read again")

	// New messages go to both; on-b is removed through node A; on-a takes everything over.
	for i := 0; i < 20; i++ {
		b.Put(t, q, e2e.Keyed(fmt.Sprintf("n%d", i), fmt.Sprintf("k%d", i)))
	}
	a.LeaveGroup(t, q, "stream", "on-b")
	r = a.ReadPartitions(t, q, "stream", "on-a", 100, 0)
	require.Len(t, r.Partitions, 4)
	require.Len(t, r.Messages, 20)
}

// TestPartitionsBadInput: every misuse answers 4xx with a code and a message naming the field.
func TestPartitionsBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.AdminToken(t, tenancyID)
	for _, body := range []string{
		`{"compartmentId":"` + tenancyID + `","displayName":"x","partitionCount":0}`,
		`{"compartmentId":"` + tenancyID + `","displayName":"x","partitionCount":257}`,
		`{"compartmentId":"` + tenancyID + `","displayName":"x","partitionCount":2,"deduplicationWindowInSeconds":60}`,
	} {
		r := srv.Call(t, token, http.MethodPost, "/20210201/queues", json.RawMessage(body))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter")
	}
	plain := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	r := srv.Call(t, token, http.MethodPost, "/20210201/consumerGroups", map[string]any{"queueId": plain, "displayName": "p", "loadBalancing": "PARTITION"})
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "partitionCount")

	q := newPartitioned(t, c, tenancyID, 2)
	r = srv.Call(t, token, http.MethodPost, "/20210201/consumerGroups", map[string]any{"queueId": q, "displayName": "f", "loadBalancing": "PARTITION", "filter": "a = 1"})
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "filter")

	resp, err := c.TryReadPartitions(q, "stream", "", 10, 0)
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "MissingParameter", "X-Ferry-Consumer-Id")
	c.Put(t, q, e2e.Keyed("m", "k"))
	read := c.ReadPartitions(t, q, "stream", "me", 10, 0)
	p := read.Messages[0].Partition
	for _, o := range []sdk.PartitionOffset{
		{Partition: p, Offset: 5, Generation: read.Generation},
		{Partition: 7, Offset: 0, Generation: read.Generation},
	} {
		resp, err := c.TryCommit(q, "stream", "me", o)
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "partition")
	}
	resp2, err := c.SeekPartitionsWithResponse(context.Background(), q, &sdk.SeekPartitionsParams{ConsumerGroupId: e2e.Ptr("stream")}, sdk.SeekPartitionsDetails{})
	e2e.RequireError(t, resp2, err, http.StatusBadRequest, "InvalidParameter", "exactly one")
	r = srv.Call(t, token, http.MethodPut, "/20210201/queues/"+q, map[string]any{"deduplicationWindowInSeconds": 30})
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "deduplication")
	long := strings.Repeat("k", 129)
	put := c.PutErr(t, q, sdk.PutMessagesDetailsEntry{Content: "x", Metadata: &sdk.MessageMetadata{PartitionKey: &long}})
	require.Equal(t, http.StatusBadRequest, put.StatusCode(), string(put.Body))
}

// TestPartitionsRetention: a partition's messages are kept whatever the groups committed (two groups read them at
// their own pace; a committed group replays them), and go when the retention ends: never returned once expired,
// deleted by the maintainer.
func TestPartitionsRetention(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := newPartitioned(t, c, tenancyID, 2, e2e.WithRetention(60))
	c.NewGroup(t, q, "audit", "", e2e.ByPartition())
	for i := 0; i < 6; i++ {
		c.Put(t, q, e2e.Keyed(fmt.Sprintf("m%d", i), fmt.Sprint(i)))
	}
	stream := c.ReadPartitions(t, q, "stream", "s", 100, 0)
	require.Len(t, stream.Messages, 6)
	c.CommitRead(t, q, "stream", "s", stream.Messages)
	require.Len(t, c.ReadPartitions(t, q, "audit", "a", 100, 0).Messages, 6, "another group reads them at its own pace")
	stored := func() int64 {
		var n int64
		require.NoError(t, srv.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM partition_messages WHERE queue_no = (SELECT no FROM queues WHERE id = $1)`, q).Scan(&n))
		return n
	}
	srv.RunMaintainer(t)
	require.Equal(t, int64(6), stored(), "committing deletes nothing")

	srv.AdvanceClock(t, 61*time.Second)
	require.Empty(t, c.ReadPartitions(t, q, "audit", "a", 100, 0).Messages, "expired messages are not returned")
	srv.RunMaintainer(t)
	require.Zero(t, stored(), "the maintainer deleted the expired messages")
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		if g.DisplayName == "stream" {
			require.Zero(t, *g.Lag)
		}
	}
}
