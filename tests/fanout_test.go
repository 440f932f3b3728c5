package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of fanout (DESIGN sections 6 and 7): which consumer groups receive a message, discards, the
// filter applying only to messages published after it changed, sharing within a group versus fanout across
// groups, per-group leases and DLQs, and configuration changes reaching every node.

// TestFanoutBillingExample is the billing example of the OCI fanout documentation: the primary group (compliance)
// receives every message, the exec-expenses group only its team's.
func TestFanoutBillingExample(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	exec := c.NewGroup(t, q, "exec-expenses", `:team = "exec-expenses"`)

	res := c.Put(t, q,
		e2e.WithAttrs("dinner", map[string]any{"team": "exec-expenses", "amount": 420}),
		e2e.WithAttrs("laptop", map[string]any{"team": "engineering", "amount": 1999}),
		e2e.WithAttrs("flight", map[string]any{"team": "exec-expenses", "amount": 880}),
		e2e.Msg("no attributes"),
		e2e.WithAttrs("Exec", map[string]any{"team": "Exec-Expenses"}), // filters are case-sensitive
	)
	require.Equal(t, []int{2, 1, 2, 1, 1}, e2e.GroupCounts(res))
	for _, r := range res {
		require.Positive(t, r.Id)
	}

	// The exec-expenses group by OCID, then by displayName: each lease takes one of its two messages.
	byID := c.Get(t, q, e2e.OfGroup(exec.Id), e2e.Visibility(60))
	byName := c.Get(t, q, e2e.OfGroup("exec-expenses"), e2e.Visibility(60))
	require.Len(t, byID, 1)
	require.Len(t, byName, 1)
	require.ElementsMatch(t, []string{"dinner", "flight"}, append(e2e.Contents(byID), e2e.Contents(byName)...))
	require.Empty(t, c.Get(t, q, e2e.OfGroup("exec-expenses")))
	require.Equal(t, res[0].Id, min(byID[0].Id, byName[0].Id), "a message keeps its id in every group")
	require.Equal(t, res[2].Id, max(byID[0].Id, byName[0].Id))
	require.NotNil(t, byID[0].Attributes)
	require.Equal(t, "exec-expenses", (*byID[0].Attributes)["team"])

	// Compliance (the primary group: no consumerGroupId, the queue's OCID, or "primary") receives everything.
	compliance := c.Get(t, q, e2e.Limit(2), e2e.Visibility(60))
	compliance = append(compliance, c.Get(t, q, e2e.OfGroup(q), e2e.Limit(2), e2e.Visibility(60))...)
	compliance = append(compliance, c.Get(t, q, e2e.OfGroup("primary"), e2e.Limit(2), e2e.Visibility(60))...)
	require.ElementsMatch(t, []string{"dinner", "laptop", "flight", "no attributes", "Exec"}, e2e.Contents(compliance))

	// Acknowledging in one group leaves the other's copy alone.
	c.DeleteAll(t, q, byID, e2e.OfGroup(exec.Id))
	c.DeleteAll(t, q, byName, e2e.OfGroup("exec-expenses"))
	require.Zero(t, c.GroupStats(t, q, "exec-expenses").Queue.InFlightMessages)
	require.Equal(t, int64(5), c.Stats(t, q).Queue.InFlightMessages)
	c.DeleteAll(t, q, compliance)
	require.Zero(t, srv.StoredMessages(t, q))
}

// TestFanoutDiscarded: with the primary group disabled, a message no group takes is discarded: the put answers
// consumerGroups 0, nothing is stored, and it is counted in the stats and in ferry_queue_messages_discarded_total.
func TestFanoutDiscarded(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	c.NewGroup(t, q, "only-a", `:kind = "a"`)
	other := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))

	res := c.Put(t, q, e2e.WithAttrs("b", map[string]any{"kind": "b"}), e2e.Msg("none"), e2e.WithAttrs("a", map[string]any{"kind": "a"}))
	require.Equal(t, []int{0, 0, 1}, e2e.GroupCounts(res))
	require.Zero(t, res[0].Id, "a discarded message has no id")
	require.Zero(t, res[1].Id)
	require.Positive(t, res[2].Id)
	require.Equal(t, int64(1), srv.StoredMessages(t, q), "discarded messages are not stored")
	res = c.Put(t, q, e2e.Msg("none again"))
	require.Equal(t, []int{0}, e2e.GroupCounts(res))
	require.Equal(t, int64(1), srv.StoredMessages(t, q))

	st := c.Stats(t, q)
	require.Equal(t, e2e.Ptr(int64(3)), st.DiscardedMessages)
	require.Zero(t, st.Queue.VisibleMessages, "the disabled primary group holds nothing")
	require.Equal(t, int64(1), c.GroupStats(t, q, "only-a").Queue.VisibleMessages)
	require.Empty(t, c.Get(t, q), "nothing for the disabled primary group")
	require.Equal(t, []string{"a"}, c.Drain(t, q, e2e.OfGroup("only-a")))
	require.EqualValues(t, 3, srv.MetricValue(t, "ferry_queue_messages_discarded_total", q))

	// Another queue's discards are its own (none here: its primary group takes everything).
	c.Put(t, other, e2e.Msg("kept"))
	require.Equal(t, e2e.Ptr(int64(0)), c.Stats(t, other).DiscardedMessages)

	// A rejected batch writes nothing: not its messages, and not its discards either.
	bad := c.PutErr(t, q, e2e.Msg("would be discarded"), sdk.PutMessagesDetailsEntry{Content: "x",
		Attributes: &sdk.MessageAttributes{"": "empty key"}})
	require.Equal(t, http.StatusBadRequest, bad.StatusCode(), string(bad.Body))
	// A batch refused for size (429: the fanned-out copies exceed maxSizeInBytes) also discards nothing.
	small := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false), e2e.WithMaxSize(1<<20))
	for i := range 5 {
		c.NewGroup(t, small, fmt.Sprintf("g%d", i), ":big")
	}
	big := e2e.WithAttrs(strings.Repeat("x", 250<<10), map[string]any{"big": 1})
	full := c.PutErr(t, small, e2e.Msg("would be discarded"), big)
	require.Equal(t, http.StatusTooManyRequests, full.StatusCode(), string(full.Body))
	require.EqualValues(t, 0, *c.Stats(t, small).DiscardedMessages, "a refused batch discards nothing")
	require.Zero(t, srv.StoredMessages(t, small))
	require.Equal(t, e2e.Ptr(int64(3)), c.Stats(t, q).DiscardedMessages)
	require.EqualValues(t, 3, srv.MetricValue(t, "ferry_queue_messages_discarded_total", q))
}

// TestFanoutNotRetroactive: a filter is evaluated once, at publish time. Messages stored before a filter change
// stay where they were delivered; a disabled group receives nothing; a re-enabled or new group receives only
// what is published after the change.
func TestFanoutNotRetroactive(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	g := c.NewGroup(t, q, "g", `:v = 1`)
	v := func(content string, n int) sdk.PutMessagesDetailsEntry {
		return e2e.WithAttrs(content, map[string]any{"v": n})
	}

	require.Equal(t, []int{1, 0}, e2e.GroupCounts(c.Put(t, q, v("m1 v1", 1), v("m2 v2", 2))))
	c.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(`:v = 2`)})
	require.Equal(t, []int{0, 1}, e2e.GroupCounts(c.Put(t, q, v("m3 v1", 1), v("m4 v2", 2))), "the new filter applies at once")
	require.Equal(t, []string{"m1 v1", "m4 v2"}, c.Drain(t, q, e2e.OfGroup("g")), "m1 stays although it no longer matches")

	c.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
	require.Equal(t, []int{0}, e2e.GroupCounts(c.Put(t, q, v("m5 v2 while disabled", 2))))
	require.Empty(t, c.Drain(t, q, e2e.OfGroup("g")), "a disabled group receives nothing")
	c.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
	require.Equal(t, []int{1}, e2e.GroupCounts(c.Put(t, q, v("m6 v2 re-enabled", 2))))
	require.Equal(t, []string{"m6 v2 re-enabled"}, c.Drain(t, q, e2e.OfGroup("g")), "only what was published after re-enabling")

	// Messages already stored for a group that is disabled are still delivered to it (only new ones are not).
	require.Equal(t, []int{1}, e2e.GroupCounts(c.Put(t, q, v("m7 before disabling", 2))))
	c.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
	require.Equal(t, []string{"m7 before disabling"}, c.Drain(t, q, e2e.OfGroup("g")))

	// A new group receives only what is published after it was created; so does the re-enabled primary group.
	require.Equal(t, []int{0}, e2e.GroupCounts(c.Put(t, q, v("m8", 2))))
	c.NewGroup(t, q, "late", "")
	c.ChangeGroup(t, q, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
	require.Equal(t, []int{2}, e2e.GroupCounts(c.Put(t, q, v("m9", 2))))
	require.Equal(t, []string{"m9"}, c.Drain(t, q, e2e.OfGroup("late")))
	require.Equal(t, []string{"m9"}, c.Drain(t, q))
	require.Equal(t, e2e.Ptr(int64(4)), c.Stats(t, q).DiscardedMessages, "m2, m3, m5 and m8")
}

// TestFanoutSharingVersusFanout: consumers of one group share its messages (each delivered to exactly one of
// them), while every group receives every message.
func TestFanoutSharingVersusFanout(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	c.NewGroup(t, q, "A", "")
	c.NewGroup(t, q, "B", "")

	const n = 60
	var want []string
	for batch := range n / 20 {
		var entries []sdk.PutMessagesDetailsEntry
		for i := range 20 {
			content := fmt.Sprintf("m%03d", batch*20+i)
			want = append(want, content)
			entries = append(entries, e2e.Msg(content))
		}
		require.Equal(t, slices.Repeat([]int{2}, 20), e2e.GroupCounts(c.Put(t, q, entries...)))
	}

	// Two consumers of group A, concurrently, each leasing small batches until the group is empty.
	var mu sync.Mutex
	seen := map[string]int{}
	perConsumer := [2]int{}
	var wg sync.WaitGroup
	for consumer := range 2 {
		wg.Go(func() {
			for {
				resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{
					ConsumerGroupId: e2e.Ptr("A"), Limit: e2e.Ptr(3), VisibilityInSeconds: e2e.Ptr(300), TimeoutInSeconds: e2e.Ptr(0)})
				if err != nil || resp.JSON200 == nil || len(resp.JSON200.Messages) == 0 {
					return
				}
				mu.Lock()
				for _, m := range resp.JSON200.Messages {
					seen[m.Content]++
				}
				perConsumer[consumer] += len(resp.JSON200.Messages)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, n, "every message delivered in group A")
	for content, times := range seen {
		require.Equal(t, 1, times, "%s was delivered to both consumers of group A", content)
	}
	require.Equal(t, n, perConsumer[0]+perConsumer[1])
	require.Positive(t, perConsumer[0], "both consumers got a share")
	require.Positive(t, perConsumer[1], "both consumers got a share")

	// Group B still has every message: A's leases are A's.
	require.Equal(t, want, c.Drain(t, q, e2e.OfGroup("B")))
	require.Equal(t, int64(2*n), srv.StoredMessages(t, q), "one row per (message, group)")
}

// TestFanoutPerGroupDLQ: each group has its own delivery counts and DLQ: a message dead-lettered in one group is
// untouched in the others, a group's deadLetterQueueDeliveryCount overrides the queue's, and redrive is per group.
func TestFanoutPerGroupDLQ(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true), e2e.WithDLQ(2))
	a := c.NewGroup(t, q, "A", "")                  // inherits 2
	b := c.NewGroup(t, q, "B", "", e2e.GroupDLQ(1)) // overrides: 1
	c.NewGroup(t, q, "C", "", e2e.GroupDLQ(0))      // no DLQ at all

	res := c.Put(t, q, e2e.Msg("poison"))
	require.Equal(t, []int{4}, e2e.GroupCounts(res))
	id := res[0].Id

	// lease delivers once with visibility 0 (the lease ends at once) and returns the delivery count, or 0 when
	// the lease moved the message to the DLQ instead.
	lease := func(ref string) int {
		got := c.Get(t, q, e2e.OfGroup(ref), e2e.Visibility(0))
		if len(got) == 0 {
			return 0
		}
		require.Equal(t, id, got[0].Id)
		return got[0].DeliveryCount
	}
	require.Equal(t, 1, lease("A"))
	require.Equal(t, 2, lease("A"))
	require.Equal(t, 0, lease("A"), "a third delivery moves A's copy to A's DLQ")
	sa := c.GroupStats(t, q, "A")
	require.Equal(t, [2]int64{0, 1}, [2]int64{sa.Queue.VisibleMessages, sa.Dlq.VisibleMessages})

	// B's copy is untouched by A's dead-lettering; its own limit is 1.
	sb := c.GroupStats(t, q, b.Id)
	require.Equal(t, [2]int64{1, 0}, [2]int64{sb.Queue.VisibleMessages, sb.Dlq.VisibleMessages})
	require.Equal(t, 1, lease("B"))
	require.Equal(t, 0, lease("B"), "B's own count (1) applies, not the queue's (2)")
	sb = c.GroupStats(t, q, "B")
	require.Equal(t, [2]int64{0, 1}, [2]int64{sb.Queue.VisibleMessages, sb.Dlq.VisibleMessages})

	// C never dead-letters; the primary group follows the queue's count.
	for i := 1; i <= 4; i++ {
		require.Equal(t, i, lease("C"))
	}
	require.Equal(t, 1, lease("primary"))
	require.Equal(t, 2, lease(q))
	require.Equal(t, 0, lease(""+q))
	c.RequireStats(t, q, 0, 0, 1, 0) // the primary group's own view
	sc := c.GroupStats(t, q, "C")
	require.Equal(t, [2]int64{1, 0}, [2]int64{sc.Queue.VisibleMessages, sc.Dlq.VisibleMessages})

	// The consumerGroups array of the stats says the same of every group, in one answer.
	all := map[string][2]int64{}
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		all[g.DisplayName] = [2]int64{g.Queue.VisibleMessages, g.Dlq.VisibleMessages}
		require.Zero(t, g.Queue.InFlightMessages+g.Dlq.InFlightMessages)
		require.Equal(t, int64(len("poison")), g.Queue.SizeInBytes+g.Dlq.SizeInBytes, g.DisplayName)
	}
	require.Equal(t, map[string][2]int64{"primary": {0, 1}, "A": {0, 1}, "B": {0, 1}, "C": {1, 0}}, all)
	inFlight := c.Get(t, q, e2e.OfGroup("C"), e2e.Visibility(60))
	for _, g := range *c.Stats(t, q).ConsumerGroups {
		require.Equal(t, map[bool]int64{true: 1, false: 0}[g.DisplayName == "C"], g.Queue.InFlightMessages, g.DisplayName)
	}
	c.DeleteAll(t, q, inFlight, e2e.OfGroup("C"))

	// Each group's DLQ holds its own copy, read and acknowledged with consumerGroupId and dlq=true.
	dlqA := c.Get(t, q, e2e.OfGroup("A"), e2e.FromDLQ(), e2e.Visibility(60))
	require.Len(t, dlqA, 1)
	require.Equal(t, id, dlqA[0].Id)
	badDel, err := c.DeleteMessageWithResponse(ctx, q, dlqA[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: e2e.Ptr("B"), Dlq: e2e.Ptr(true)})
	e2e.RequireError(t, badDel, err, http.StatusBadRequest, "InvalidParameter", "receipt")

	// Redrive is per group: A's redrive leaves B's DLQ alone.
	rd, err := c.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{ConsumerGroupId: e2e.Ptr("A")})
	e2e.RequireStatus(t, rd, err, http.StatusOK)
	require.Equal(t, 1, rd.JSON200.RedrivenMessages)
	sa = c.GroupStats(t, q, a.Id)
	require.Equal(t, [2]int64{1, 0}, [2]int64{sa.Queue.VisibleMessages, sa.Dlq.VisibleMessages})
	sb = c.GroupStats(t, q, b.Id)
	require.Equal(t, [2]int64{0, 1}, [2]int64{sb.Queue.VisibleMessages, sb.Dlq.VisibleMessages})
	c.RequireStats(t, q, 0, 0, 1, 0)
	require.Equal(t, 1, lease("A"), "a redriven message starts counting again")

	// Without consumerGroupId redrive addresses the primary group; by OCID it addresses B.
	rd, err = c.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
	e2e.RequireStatus(t, rd, err, http.StatusOK)
	require.Equal(t, 1, rd.JSON200.RedrivenMessages)
	c.RequireStats(t, q, 1, 0, 0, 0)
	sb = c.GroupStats(t, q, b.Id)
	require.Equal(t, int64(1), sb.Dlq.VisibleMessages)
	rd, err = c.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{ConsumerGroupId: &b.Id})
	e2e.RequireStatus(t, rd, err, http.StatusOK)
	require.Equal(t, 1, rd.JSON200.RedrivenMessages)

	// B inherits the queue's count again after -1: two deliveries before its DLQ.
	c.ChangeGroup(t, b.Id, sdk.UpdateConsumerGroupDetails{DeadLetterQueueDeliveryCount: e2e.Ptr(-1)})
	require.Equal(t, 1, lease("B"))
	require.Equal(t, 2, lease("B"))
	require.Equal(t, 0, lease("B"))
}

// TestFanoutCrossNode: a group created or changed through one node takes effect for puts on another node within a
// second (ferry_config NOTIFY), well before the group cache's TTL.
func TestFanoutCrossNode(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	srv2 := srv.Peer(t)
	tenancyID, c1 := srv.Admin(t, "fanout-nodes")
	c2 := srv2.AdminOf(t, tenancyID)
	select {
	case <-srv2.Node.Messaging().Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("node 2 is not listening")
	}
	q := c1.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))

	// putOn2 publishes through node 2 until the message reaches want groups, and returns how long that took.
	putOn2 := func(want int, attrs map[string]any) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			res := c2.Put(t, q, e2e.WithAttrs("probe", attrs))
			if *res[0].ConsumerGroups == want {
				return time.Since(start)
			}
			require.Less(t, time.Since(start), 3*time.Second, "node 2 still routes to %d groups, not %d", *res[0].ConsumerGroups, want)
			time.Sleep(10 * time.Millisecond) // the interval of this bounded poll
		}
	}
	require.Equal(t, []int{0}, e2e.GroupCounts(c2.Put(t, q, e2e.Msg("cached"))), "node 2 caches the queue's groups: none takes it")

	g := c1.NewGroup(t, q, "g", "")
	require.Less(t, putOn2(1, nil), time.Second, "a group created on node 1")
	c1.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(":x")})
	require.Less(t, putOn2(0, nil), time.Second, "a filter changed on node 1")
	require.Equal(t, []int{1}, e2e.GroupCounts(c2.Put(t, q, e2e.WithAttrs("x", map[string]any{"x": 1}))))
	c1.ChangeGroup(t, q, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
	require.Less(t, putOn2(2, map[string]any{"x": 1}), time.Second, "the primary group enabled on node 1")
	del, err := c1.DeleteConsumerGroupWithResponse(context.Background(), g.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	require.Less(t, putOn2(1, map[string]any{"x": 1}), time.Second, "a group deleted on node 1")
	upd, err := c1.UpdateQueueWithResponse(context.Background(), q, &sdk.UpdateQueueParams{},
		sdk.UpdateQueueDetails{Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: e2e.Ptr(false)}}})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Less(t, putOn2(0, nil), time.Second, "the primary group disabled through UpdateQueue on node 1")

	// Node 2 also resolves the new group's name at once for consumers.
	c1.NewGroup(t, q, "fresh", "")
	require.Eventually(t, func() bool {
		resp, err := c2.GetStatsWithResponse(context.Background(), q, &sdk.GetStatsParams{ConsumerGroupId: e2e.Ptr("fresh")})
		return err == nil && resp.StatusCode() == http.StatusOK
	}, time.Second, 10*time.Millisecond)
}

// TestFanoutSameNodeReadsItsWrites: a put right after a group change on the same node sees the change (no
// waiting for the node's own NOTIFY), even while other puts keep the cache warm.
func TestFanoutSameNodeReadsItsWrites(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	// Keeps the group cache busy: a refill racing a change must not bring the old groups back.
	defer c.KeepPutting(1, q, e2e.WithAttrs("noise", map[string]any{"noise": 1}))()
	for i := range 20 {
		g := c.NewGroup(t, q, fmt.Sprintf("g%d", i), fmt.Sprintf(":n = %d", i))
		require.Equal(t, []int{1}, e2e.GroupCounts(c.Put(t, q, e2e.WithAttrs("hit", map[string]any{"n": i}))), "right after creating g%d", i)
		c.ChangeGroup(t, g.Id, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
		require.Equal(t, []int{0}, e2e.GroupCounts(c.Put(t, q, e2e.WithAttrs("miss", map[string]any{"n": i}))), "right after disabling g%d", i)
	}
}

// TestFanoutLongPollPerGroup: a put wakes the long polls of the groups that received the message, at once, and a
// long poll in a group whose filter did not match keeps waiting.
func TestFanoutLongPollPerGroup(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	c.NewGroup(t, q, "red", `:color = "red"`)
	c.NewGroup(t, q, "blue", `:color = "blue"`)

	type answer struct {
		msgs []sdk.GetMessage
		at   time.Time
	}
	poll := func(group string, seconds int) chan answer {
		done := make(chan answer, 1)
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{
				ConsumerGroupId: &group, TimeoutInSeconds: &seconds, VisibilityInSeconds: e2e.Ptr(60)})
			if err != nil || resp.JSON200 == nil {
				done <- answer{at: time.Now()}
				return
			}
			done <- answer{msgs: resp.JSON200.Messages, at: time.Now()}
		}()
		return done
	}
	red, blue := poll("red", 10), poll("blue", 2)
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 2 }, 5*time.Second, 5*time.Millisecond)
	putAt := time.Now()
	require.Equal(t, []int{1}, e2e.GroupCounts(c.Put(t, q, e2e.WithAttrs("for red", map[string]any{"color": "red"}))))
	got := <-red
	require.Equal(t, []string{"for red"}, e2e.Contents(got.msgs))
	// Woken by the put, not by its 10-second timeout: the bound leaves room for a loaded machine running the
	// suite in parallel (latency is the benchmarks' to measure).
	require.Less(t, got.at.Sub(putAt), 2*time.Second, "the red long poll was woken by the put")
	other := <-blue
	require.Empty(t, other.msgs, "blue's filter did not match: its long poll ran to its timeout")
	require.GreaterOrEqual(t, other.at.Sub(putAt), time.Second)
}

// TestFanoutDeduplication: a duplicate answers the original's id and group count and stores no further copy in
// any group.
func TestFanoutDeduplication(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true), e2e.WithDedup(60))
	c.NewGroup(t, q, "a", `:k = "a"`)
	c.NewGroup(t, q, "b", "")
	dedup := func(content, id string, attrs map[string]any) sdk.PutMessagesDetailsEntry {
		e := e2e.WithAttrs(content, attrs)
		e.Metadata = &sdk.MessageMetadata{DeduplicationId: &id}
		return e
	}

	first := c.Put(t, q, dedup("one", "d1", map[string]any{"k": "a"}), dedup("one again", "d1", map[string]any{"k": "a"}),
		dedup("two", "d2", nil))
	require.Equal(t, []int{3, 3, 2}, e2e.GroupCounts(first))
	require.Equal(t, first[0].Id, first[1].Id, "a duplicate within the batch answers the first's id")
	require.Equal(t, int64(5), srv.StoredMessages(t, q), "3 copies of one, 2 of two")

	again := c.Put(t, q, dedup("one later", "d1", map[string]any{"k": "a"}), dedup("two later", "d2", nil))
	require.Equal(t, []int64{first[0].Id, first[2].Id}, []int64{again[0].Id, again[1].Id})
	require.Equal(t, []int{3, 2}, e2e.GroupCounts(again))
	require.Equal(t, first[0].ExpireAfter, again[0].ExpireAfter)
	require.Equal(t, int64(5), srv.StoredMessages(t, q))
	require.Equal(t, []string{"one", "two"}, c.Drain(t, q, e2e.OfGroup("b")))
	require.Equal(t, []string{"one"}, c.Drain(t, q, e2e.OfGroup("a")))
}

// TestFanoutCapabilityReadsItsWrites: turning the CONSUMER_GROUPS capability (or the primary group) on and off
// through UpdateQueue applies to the next put on the same node, even while other puts keep the caches warm.
func TestFanoutCapabilityReadsItsWrites(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	c.NewGroup(t, q, "a", "")
	c.NewGroup(t, q, "b", "")
	defer c.KeepPutting(2, q, e2e.Msg("noise"))()
	setCaps := func(caps []sdk.Capability) {
		resp, err := c.UpdateQueueWithResponse(context.Background(), q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{Capabilities: &caps})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	}
	groups := func(primary bool) []sdk.Capability {
		return []sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: &primary}}
	}
	for i := range 15 {
		setCaps([]sdk.Capability{})
		require.Equal(t, []int{1}, e2e.GroupCounts(c.Put(t, q, e2e.Msg("plain"))), "round %d: without the capability", i)
		setCaps(groups(false))
		require.Equal(t, []int{2}, e2e.GroupCounts(c.Put(t, q, e2e.Msg("a and b"))), "round %d: a and b", i)
		setCaps(groups(true))
		require.Equal(t, []int{3}, e2e.GroupCounts(c.Put(t, q, e2e.Msg("all"))), "round %d: primary, a and b", i)
	}
}

// TestFanoutPurge: a purge of every consumer group (consumerGroupId "all") empties all of them (NORMAL: their
// queues, DLQ: their DLQs). Purges of one group are in dataplane_oci_test.go.
func TestFanoutPurge(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true), e2e.WithDLQ(1))
	c.NewGroup(t, q, "a", "")
	c.Put(t, q, e2e.Msg("dead"))
	for _, ref := range []string{"primary", "a"} {
		require.Len(t, c.Get(t, q, e2e.OfGroup(ref), e2e.Visibility(0)), 1)
		require.Empty(t, c.Get(t, q, e2e.OfGroup(ref)), "%s: the second lease moves the message to the DLQ", ref)
	}
	c.Put(t, q, e2e.Msg("alive"))
	for _, ref := range []string{"primary", "a"} {
		st := c.GroupStats(t, q, ref)
		require.Equal(t, [2]int64{1, 1}, [2]int64{st.Queue.VisibleMessages, st.Dlq.VisibleMessages}, ref)
	}
	srv.Purge(t, c, q, sdk.PurgeTypeDLQ, e2e.PurgeGroup("all"))
	for _, ref := range []string{"primary", "a"} {
		st := c.GroupStats(t, q, ref)
		require.Equal(t, [2]int64{1, 0}, [2]int64{st.Queue.VisibleMessages, st.Dlq.VisibleMessages}, ref)
	}
	srv.Purge(t, c, q, sdk.PurgeTypeNORMAL, e2e.PurgeGroup("all"))
	require.Zero(t, srv.StoredMessages(t, q))
}
