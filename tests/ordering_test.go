package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of ordered message groups (DESIGN section 7, metadata.messageGroupId): within a consumer
// group, a message group's messages are delivered one at a time in publish order; groups do not block each
// other nor unordered messages; the DLQ, a purge and a redrive keep a group moving; a delayed message is out of
// its group's order.

// TestOrderedGroupsConcurrentConsumers publishes interleaved ordered groups and unordered messages and consumes
// them with 8 concurrent consumers (random batch sizes and processing times). Without lease expiries every
// message is processed exactly once and each group strictly in publish order, never two of a group at a time.
// With a short visibility and consumers that randomly stall past it, each group is still acknowledged in
// publish order, and a consumer is never handed a message of a group before the earlier one was acknowledged.
func TestOrderedGroupsConcurrentConsumers(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)

	type scenario struct {
		name       string
		groups     int
		perGroup   int
		unordered  int
		visibility int
		stall      float64 // probability that a consumer stalls past the visibility before acknowledging
	}
	for _, sc := range []scenario{
		{name: "no-expiry", groups: 24, perGroup: 20, unordered: 60, visibility: 60},
		{name: "expiries", groups: 8, perGroup: 8, unordered: 10, visibility: 1, stall: 0.15},
	} {
		t.Run(sc.name, func(t *testing.T) {
			q := c.NewQueue(t, tenancyID, e2e.WithVisibility(sc.visibility), e2e.WithTimeout(1))
			// A random interleaving of the groups (each in its own order) and the unordered messages.
			var entries []sdk.PutMessagesDetailsEntry
			nextSeq := make([]int, sc.groups+1) // the last slot counts unordered messages
			for len(entries) < sc.groups*sc.perGroup+sc.unordered {
				g := rand.IntN(sc.groups + 1)
				switch {
				case g == sc.groups && nextSeq[g] < sc.unordered:
					entries = append(entries, e2e.Msg("u:"+strconv.Itoa(nextSeq[g])))
				case g < sc.groups && nextSeq[g] < sc.perGroup:
					entries = append(entries, e2e.InGroup(fmt.Sprintf("g%d:%d", g, nextSeq[g]), "g"+strconv.Itoa(g)))
				default:
					continue
				}
				nextSeq[g]++
			}
			published := map[string][]string{} // group → contents in publish order
			for start := 0; start < len(entries); start += 20 {
				batch := entries[start:min(start+20, len(entries))]
				c.Put(t, q, batch...)
				for _, e := range batch {
					published[groupKey(e)] = append(published[groupKey(e)], e.Content)
				}
			}
			total := len(entries)

			var (
				mu        sync.Mutex
				locks     = map[string]*sync.Mutex{}
				acked     = map[string][]string{} // group → acknowledged contents, in acknowledgement order
				inFlight  = map[string]string{}   // group → the content a consumer is processing (no expiry)
				delivered = map[string]int{}      // content → deliveries
				failures  []string
				done      atomic.Int64
			)
			groupLock := func(g string) *sync.Mutex {
				mu.Lock()
				defer mu.Unlock()
				if locks[g] == nil {
					locks[g] = &sync.Mutex{}
				}
				return locks[g]
			}
			fail := func(format string, args ...any) {
				mu.Lock()
				failures = append(failures, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			var wg sync.WaitGroup
			deadline := time.Now().Add(45 * time.Second)
			for consumer := 0; consumer < 8; consumer++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for done.Load() < int64(total) && time.Now().Before(deadline) {
						resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{
							Limit: e2e.Ptr(1 + rand.IntN(8)), TimeoutInSeconds: e2e.Ptr(1)})
						if err != nil || resp.JSON200 == nil {
							fail("get: %v %s", err, resp.Body)
							return
						}
						for _, m := range resp.JSON200.Messages {
							g := e2e.GroupOf(m)
							mu.Lock()
							delivered[m.Content]++
							mu.Unlock()
							if g != "" {
								// The message handed out must be the group's next unacknowledged one. The group's
								// bookkeeping lock is held around every acknowledgement, so it is up to date here.
								l := groupLock(g)
								l.Lock()
								mu.Lock()
								next := len(acked[g])
								if next >= len(published[g]) || published[g][next] != m.Content {
									failures = append(failures, fmt.Sprintf("group %s: delivered %s while %d were acknowledged (%v)", g, m.Content, next, acked[g]))
								}
								if sc.stall == 0 {
									if other, busy := inFlight[g]; busy {
										failures = append(failures, fmt.Sprintf("group %s: %s delivered while %s is being processed", g, m.Content, other))
									}
									inFlight[g] = m.Content
								}
								mu.Unlock()
								l.Unlock()
							}
						}
						for _, m := range resp.JSON200.Messages {
							time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // processing time (the interleaving is the subject)
							if sc.stall > 0 && rand.Float64() < sc.stall {
								time.Sleep(time.Duration(sc.visibility)*time.Second + 300*time.Millisecond) // the lease expires: a consumer stalling past it is the subject
							}
							g := e2e.GroupOf(m)
							var l *sync.Mutex
							if g != "" {
								l = groupLock(g)
								l.Lock()
								if sc.stall == 0 {
									mu.Lock()
									delete(inFlight, g) // before the acknowledgement unblocks the next one
									mu.Unlock()
								}
							}
							del, err := c.DeleteMessageWithResponse(context.Background(), q, m.Receipt, &sdk.DeleteMessageParams{})
							switch {
							case err != nil:
								fail("delete: %v", err)
							case del.StatusCode() == http.StatusNoContent:
								done.Add(1)
								if g != "" {
									mu.Lock()
									acked[g] = append(acked[g], m.Content)
									mu.Unlock()
								}
							case (del.StatusCode() == http.StatusConflict || del.StatusCode() == http.StatusNotFound) && sc.stall > 0:
								// The lease expired and the message went to another consumer (who may have
								// acknowledged it already).
							default:
								fail("delete %s: %d %s", m.Content, del.StatusCode(), del.Body)
							}
							if l != nil {
								l.Unlock()
							}
						}
					}
				}()
			}
			wg.Wait()
			require.Empty(t, failures[:min(len(failures), 10)])
			require.Equal(t, int64(total), done.Load(), "every message acknowledged")
			for g, want := range published {
				if g == "" {
					continue
				}
				require.Equal(t, want, acked[g], "group %s is acknowledged in publish order, each message once", g)
			}
			if sc.stall == 0 {
				for content, n := range delivered {
					require.Equal(t, 1, n, "%s delivered exactly once", content)
				}
				require.Len(t, delivered, total)
			}
			require.Zero(t, srv.StoredMessages(t, q))
		})
	}
}

// groupKey is the messageGroupId of a message to publish ("" without one).
func groupKey(e sdk.PutMessagesDetailsEntry) string {
	if e.Metadata == nil || e.Metadata.MessageGroupId == nil {
		return ""
	}
	return *e.Metadata.MessageGroupId
}

// TestOrderedGroupsDoNotBlockEachOther: one lease takes the head of every group (and the unordered messages),
// never a second message of a group; acknowledging a head releases exactly its group's next message.
func TestOrderedGroupsDoNotBlockEachOther(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	c.Put(t, q, e2e.InGroup("a1", "A"), e2e.InGroup("b1", "B"), e2e.InGroup("a2", "A"), e2e.Msg("u1"), e2e.InGroup("b2", "B"), e2e.InGroup("a3", "A"), e2e.Msg("u2"))

	first := c.Get(t, q, e2e.Limit(32), e2e.Visibility(60))
	require.ElementsMatch(t, []string{"a1", "b1", "u1", "u2"}, e2e.Contents(first))
	for _, m := range first {
		if m.Content == "a1" {
			require.Equal(t, "A", e2e.GroupOf(m), "the message carries its messageGroupId")
		}
	}
	require.Empty(t, c.Get(t, q, e2e.Limit(32)), "a2 and b2 wait for their heads")
	c.RequireStats(t, q, 3, 4, 0, 0) // waiting messages count as visible

	// Acknowledging B's head releases b2 only; A stays blocked behind a1.
	c.DeleteAll(t, q, pick(first, "b1", "u1", "u2"))
	next := c.Get(t, q, e2e.Limit(32), e2e.Visibility(60))
	require.Equal(t, []string{"b2"}, e2e.Contents(next))
	c.DeleteAll(t, q, append(pick(first, "a1"), next...))
	require.Equal(t, []string{"a2"}, e2e.Contents(c.Get(t, q, e2e.Limit(32), e2e.Visibility(0))), "a lease that ends keeps the head first")
	a2 := c.Get(t, q, e2e.Limit(32), e2e.Visibility(60))
	require.Equal(t, []string{"a2"}, e2e.Contents(a2), "the released head is delivered again, before a3")
	require.Equal(t, 2, a2[0].DeliveryCount)
	c.DeleteAll(t, q, a2)
	last := c.Get(t, q, e2e.Limit(32), e2e.Visibility(60))
	require.Equal(t, []string{"a3"}, e2e.Contents(last))
	c.DeleteAll(t, q, last)
	require.Zero(t, srv.StoredMessages(t, q))
}

// pick returns the messages with the given contents.
func pick(msgs []sdk.GetMessage, wanted ...string) []sdk.GetMessage {
	var out []sdk.GetMessage
	for _, m := range msgs {
		if slices.Contains(wanted, m.Content) {
			out = append(out, m)
		}
	}
	return out
}

// TestOrderedGroupsUnorderedNotSlowed: a group with a long backlog behind a leased head holds back nothing but
// itself: unordered messages published after it are delivered at once, in batches.
func TestOrderedGroupsUnorderedNotSlowed(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	for batch := 0; batch < 25; batch++ {
		var entries []sdk.PutMessagesDetailsEntry
		for i := 0; i < 20; i++ {
			entries = append(entries, e2e.InGroup(fmt.Sprintf("long-%03d", batch*20+i), "long"))
		}
		c.Put(t, q, entries...)
	}
	head := c.Get(t, q, e2e.Visibility(300))
	require.Equal(t, []string{"long-000"}, e2e.Contents(head))
	for i := 0; i < 40; i++ {
		c.Put(t, q, e2e.Msg("free-"+strconv.Itoa(i)))
	}
	start := time.Now()
	var free []string
	for len(free) < 40 {
		got := c.Get(t, q, e2e.Limit(32), e2e.Visibility(300))
		require.NotEmpty(t, got, "unordered messages are deliverable")
		for _, m := range got {
			require.True(t, strings.HasPrefix(m.Content, "free-"), "only unordered messages: %s", m.Content)
			free = append(free, m.Content)
		}
	}
	require.Less(t, time.Since(start), 5*time.Second)
	require.Empty(t, c.Get(t, q, e2e.Limit(32)), "the group's 499 waiting messages stay behind its head")
	require.Equal(t, int64(499), c.Stats(t, q).Queue.VisibleMessages)
}

// TestOrderedGroupDLQUnblocks: a head that is dead-lettered unblocks its group in the same lease (the next message
// is delivered by the very call that moved it); redriven, it rejoins its group after the current head.
func TestOrderedGroupDLQUnblocks(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(1))
	c.Put(t, q, e2e.InGroup("m1", "G"), e2e.InGroup("m2", "G"), e2e.InGroup("m3", "G"))

	first := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m1"}, e2e.Contents(first))
	c.Release(t, q, first[0]) // a failed delivery: visible again, its delivery count at the limit
	second := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m2"}, e2e.Contents(second), "m1 moved to the DLQ and m2 is delivered by the same call")
	c.RequireStats(t, q, 1, 1, 1, 0)

	// Redriven while m2 is in flight, m1 waits behind m2 and comes before m3.
	resp, err := c.RedriveMessagesWithResponse(context.Background(), q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, 1, resp.JSON200.RedrivenMessages)
	require.Empty(t, c.Get(t, q, e2e.Limit(10)), "m2 is still the group's head")
	c.DeleteAll(t, q, second)
	third := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m1"}, e2e.Contents(third))
	c.DeleteAll(t, q, third)
	fourth := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m3"}, e2e.Contents(fourth))
	c.DeleteAll(t, q, fourth)
	require.Zero(t, srv.StoredMessages(t, q))
}

// TestOrderedGroupDelayDoesNotBlock: a delayed message of a group holds nothing back while it is delayed, and it
// is delivered when its delay ends even while the group's head is leased (a delay takes it out of the order).
func TestOrderedGroupDelayDoesNotBlock(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	group, delay := "G", 2
	c.Put(t, q, e2e.WithMeta("late", sdk.MessageMetadata{MessageGroupId: &group, DelayInSeconds: &delay}))
	putAt := time.Now()
	c.Put(t, q, e2e.InGroup("m2", group), e2e.InGroup("m3", group))

	m2 := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m2"}, e2e.Contents(m2), "the delayed message does not block its group")
	require.Empty(t, c.Get(t, q, e2e.Limit(10)), "m3 waits for m2")
	c.DeleteAll(t, q, m2)
	m3 := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m3"}, e2e.Contents(m3))

	// m3 is still leased: the delayed message arrives anyway when its delay ends.
	var late []sdk.GetMessage
	require.Eventually(t, func() bool {
		late = c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
		return len(late) > 0
	}, 10*time.Second, 50*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(putAt), time.Duration(delay)*time.Second-200*time.Millisecond)
	require.Equal(t, []string{"late"}, e2e.Contents(late))
	require.Equal(t, group, e2e.GroupOf(late[0]), "it still carries its messageGroupId")
	c.DeleteAll(t, q, append(late, m3...))
	require.Zero(t, srv.StoredMessages(t, q))
}

// TestOrderedGroupsPerConsumerGroup: each consumer group orders its own copy: a head leased in one group does not
// hold back the other group's copy of the next message.
func TestOrderedGroupsPerConsumerGroup(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	c.NewGroup(t, q, "audit", "")
	c.Put(t, q, e2e.InGroup("m1", "G"), e2e.InGroup("m2", "G"))

	primary := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m1"}, e2e.Contents(primary))
	audit := c.Get(t, q, e2e.OfGroup("audit"), e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m1"}, e2e.Contents(audit))
	c.DeleteAll(t, q, audit, e2e.OfGroup("audit"))
	require.Equal(t, []string{"m2"}, e2e.Contents(c.Get(t, q, e2e.OfGroup("audit"), e2e.Limit(10), e2e.Visibility(60))))
	require.Empty(t, c.Get(t, q, e2e.Limit(10)), "the primary group's m2 still waits for its m1")
	c.DeleteAll(t, q, primary)
	require.Equal(t, []string{"m2"}, e2e.Contents(c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))))
}

// TestOrderedGroupPurgeUnblocks: a purge or retention that removes a group's head (here: what was published before
// the purge, while a later message already waits behind it) lets the group continue with the message that is left.
func TestOrderedGroupPurgeUnblocks(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	before := c.Put(t, q, e2e.InGroup("m1", "G"), e2e.InGroup("m2", "G"))
	require.Equal(t, []string{"m1"}, e2e.Contents(c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))))
	c.Put(t, q, e2e.InGroup("m3", "G"))

	// The purge's batches, as the work request runs them, up to the last message published before it started.
	purged, err := srv.Node.Messaging().Messages().PurgeBatch(context.Background(), q, persistence.PurgeScope{UpTo: before[1].Id}, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(2), purged)
	m3 := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"m3"}, e2e.Contents(m3), "the group continues after the purge")
	c.DeleteAll(t, q, m3)

	// Retention deletes the oldest messages the same way (ids up to a cutoff), and the group continues too.
	ret := c.Put(t, q, e2e.InGroup("r1", "R"), e2e.InGroup("r2", "R"), e2e.InGroup("r3", "R"))
	require.Equal(t, []string{"r1"}, e2e.Contents(c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))))
	expired, err := srv.Node.Messaging().Messages().ExpireBatch(context.Background(), q, ret[1].Id, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(2), expired)
	r3 := c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))
	require.Equal(t, []string{"r3"}, e2e.Contents(r3), "the group continues after retention removed its head")
	c.DeleteAll(t, q, r3)

	// A purge through the API empties waiting messages too; the group then starts afresh.
	c.Put(t, q, e2e.InGroup("n1", "G"), e2e.InGroup("n2", "G"))
	srv.Purge(t, c, q, sdk.PurgeTypeNORMAL)
	require.Zero(t, srv.StoredMessages(t, q))
	c.Put(t, q, e2e.InGroup("n3", "G"))
	require.Equal(t, []string{"n3"}, e2e.Contents(c.Get(t, q, e2e.Limit(10), e2e.Visibility(60))))
}

// TestOrderedGroupConcurrentPuts: producers racing on one group (from two nodes) never create two heads: at any
// time exactly one of the group's messages is deliverable.
func TestOrderedGroupConcurrentPuts(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	second := srv.Peer(t)
	c2 := second.AdminOf(t, tenancyID)
	q := c.NewQueue(t, tenancyID)

	for round := 0; round < 5; round++ {
		group := "race-" + strconv.Itoa(round)
		var wg sync.WaitGroup
		for p := 0; p < 8; p++ {
			client := c
			if p%2 == 1 {
				client = c2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.PutMessagesWithResponse(context.Background(), q, &sdk.PutMessagesParams{},
					sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{e2e.InGroup("x", group), e2e.InGroup("y", group)}})
				if err == nil && resp.StatusCode() != http.StatusOK {
					err = fmt.Errorf("put: %d %s", resp.StatusCode(), resp.Body)
				}
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		var heads int64
		require.NoError(t, srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM messages
			WHERE queue_no = (SELECT no FROM queues WHERE id = $1) AND message_group = $2 AND visible_at <> 'infinity'`, q, group).Scan(&heads))
		require.Equal(t, int64(1), heads, "round %d: one head per group", round)
	}
	// Consuming walks every group to its end one message at a time: each lease holds at most one message per
	// group, and all 80 arrive.
	received := 0
	for {
		got := c.Get(t, q, e2e.Limit(32), e2e.Visibility(60))
		if len(got) == 0 {
			break
		}
		seen := map[string]bool{}
		for _, m := range got {
			require.False(t, seen[e2e.GroupOf(m)], "two messages of group %s in one lease", e2e.GroupOf(m))
			seen[e2e.GroupOf(m)] = true
		}
		received += len(got)
		c.DeleteAll(t, q, got)
	}
	require.Equal(t, 5*16, received)
}

// TestOrderedBadInput: messageGroupId is 1 to 128 characters.
func TestOrderedBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)
	tok := srv.Token(t, tenancyID, "admin", "Administrators")
	for _, body := range []string{
		`{"messages":[{"content":"x","metadata":{"messageGroupId":""}}]}`,
		`{"messages":[{"content":"x","metadata":{"messageGroupId":"` + strings.Repeat("g", 129) + `"}}]}`,
		`{"messages":[{"content":"x","metadata":{"messageGroupId":"a\u0000b"}}]}`,
		`{"messages":[{"content":"x","metadata":{"messageGroupId":7}}]}`,
	} {
		r := srv.RawJSON(t, tok, http.MethodPost, "/20210201/queues/"+q+"/messages", strings.NewReader(body))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "messageGroupId")
	}
	c.Put(t, q, e2e.InGroup("ok", strings.Repeat("é", 128)))
	require.Zero(t, srv.StoredMessages(t, q)-1)
}
