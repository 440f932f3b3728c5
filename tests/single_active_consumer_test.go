package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of the single active consumer (DESIGN section 7, queue flag isSingleActiveConsumer): per
// consumer group one consumer receives, in publish order; standbys wait; the oldest standby takes over when the
// active consumer's lease lapses or it leaves, and receives the previous consumer's unacknowledged messages first;
// every node agrees on who is active.

// TestSingleActiveConsumerStandby: the first consumer to ask is active and receives in publish order across
// channels; a second one receives nothing, not even by waiting, while the first keeps calling.
func TestSingleActiveConsumerStandby(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(5))
	var sent []int64
	for i := 0; i < 6; i++ {
		sent = append(sent, c.Put(t, q, e2e.MsgOn(fmt.Sprintf("m%d", i), []string{"a", "b"}[i%2]))[0].Id)
	}

	first := c.Get(t, q, e2e.As("c1"), e2e.Limit(2), e2e.Visibility(300))
	require.Equal(t, sent[:2], e2e.IDs(first), "publish order across channels")
	require.Empty(t, c.Get(t, q, e2e.As("c2"), e2e.Limit(10)), "a standby receives nothing")
	start := time.Now()
	require.Empty(t, c.Get(t, q, e2e.As("c2"), e2e.Limit(10), e2e.Timeout(1)), "a standby's long poll waits and ends empty")
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Equal(t, []string{"c1:RUNNING", "c2:STANDBY"}, c.ConsumersOf(t, q))

	// The header names the consumer too.
	hdr := "c1"
	resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{XFerryConsumerId: &hdr, Limit: e2e.Ptr(10),
		TimeoutInSeconds: e2e.Ptr(0), VisibilityInSeconds: e2e.Ptr(300)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, sent[2:], e2e.IDs(resp.JSON200.Messages))
	require.Empty(t, c.Get(t, q, e2e.As("c2"), e2e.Limit(10)))

	// Acknowledging needs no consumer id: receipts name the lease.
	c.DeleteAll(t, q, append(first, resp.JSON200.Messages...))
	require.Zero(t, srv.StoredMessages(t, q))
}

// TestSingleActiveConsumerFailover: when the active consumer stops calling, the standby that registered first
// takes over once the consumer lease (5 s) lapses — not after the messages' visibility (300 s) — and receives the
// previous consumer's unacknowledged messages first, in publish order, followed by the rest.
func TestSingleActiveConsumerFailover(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(5))
	var sent []int64
	for _, r := range c.Put(t, q, e2e.Msg("m0"), e2e.Msg("m1"), e2e.Msg("m2"), e2e.Msg("m3"), e2e.Msg("m4")) {
		sent = append(sent, r.Id)
	}
	held := c.Get(t, q, e2e.As("c1"), e2e.Limit(3), e2e.Visibility(300))
	require.Equal(t, sent[:3], e2e.IDs(held))
	lastCall := time.Now()
	c.DeleteAll(t, q, held[:1]) // m0 done; m1 and m2 stay unacknowledged
	require.Empty(t, c.Get(t, q, e2e.As("c3"), e2e.Limit(10)), "c3 registers, as a standby")

	// c2 (registered after c3) and c3 both wait; c3 registered first, so c3 takes over. (c2's poll ends before
	// c3, which stops calling once it has its messages, lapses in turn.)
	c2 := c.GetAsync(q, &sdk.GetMessagesParams{ConsumerId: e2e.Ptr("c2"), Limit: e2e.Ptr(10), TimeoutInSeconds: e2e.Ptr(8), VisibilityInSeconds: e2e.Ptr(300)})
	// c2 is registered and waits (as a standby) before c3 calls again.
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	c3 := c.GetAsync(q, &sdk.GetMessagesParams{ConsumerId: e2e.Ptr("c3"), Limit: e2e.Ptr(10), TimeoutInSeconds: e2e.Ptr(12), VisibilityInSeconds: e2e.Ptr(300)})
	r3 := <-c3
	require.NoError(t, r3.Err)
	took := r3.At.Sub(lastCall)
	require.Greater(t, took, 4500*time.Millisecond, "not before the consumer lease lapsed")
	require.Less(t, took, 8*time.Second, "soon after it lapsed, long before the messages' visibility ends")
	require.Equal(t, sent[1:], e2e.IDs(r3.Msgs), "the previous consumer's unacknowledged messages first, in publish order")
	require.Equal(t, []int{2, 2, 1, 1}, e2e.DeliveryCounts(r3.Msgs))
	r2 := <-c2
	require.NoError(t, r2.Err)
	require.Empty(t, r2.Msgs, "c2 stays standby")
	require.Equal(t, []string{"c3:RUNNING", "c2:STANDBY"}, c.ConsumersOf(t, q), "c1 lapsed and is gone")

	// c1 comes back: it registers again, at the back.
	require.Empty(t, c.Get(t, q, e2e.As("c1"), e2e.Limit(10)))
	require.Equal(t, []string{"c3:RUNNING", "c2:STANDBY", "c1:STANDBY"}, c.ConsumersOf(t, q))
	// Its old receipts no longer hold the lease.
	del, err := c.DeleteMessageWithResponse(context.Background(), q, held[1].Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, del.StatusCode(), string(del.Body))
	c.DeleteAll(t, q, r3.Msgs)
	require.Zero(t, srv.StoredMessages(t, q))
}

// TestSingleActiveConsumerLeave: an active consumer that leaves hands over at once: the waiting standby receives
// the leaver's unacknowledged message within moments, with a 30 s consumer lease.
func TestSingleActiveConsumerLeave(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(30))
	sent := c.Put(t, q, e2e.Msg("m0"), e2e.Msg("m1"))
	held := c.Get(t, q, e2e.As("c1"), e2e.Visibility(300))
	require.Equal(t, sent[0].Id, held[0].Id)

	waiting := c.GetAsync(q, &sdk.GetMessagesParams{ConsumerId: e2e.Ptr("c2"), Limit: e2e.Ptr(10), TimeoutInSeconds: e2e.Ptr(20), VisibilityInSeconds: e2e.Ptr(300)})
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	left := time.Now()
	c.Leave(t, q, "c1")
	r := <-waiting
	require.NoError(t, r.Err)
	require.Less(t, r.At.Sub(left), 2*time.Second)
	require.Equal(t, []int64{sent[0].Id, sent[1].Id}, e2e.IDs(r.Msgs), "the leaver's message first")
	require.Equal(t, []string{"c2:RUNNING", "c1:EXIT"}, c.ConsumersOf(t, q), "one that left is listed as EXIT for a while")

	resp, err := c.DeleteConsumerWithResponse(context.Background(), q, "c1", &sdk.DeleteConsumerParams{})
	require.NoError(t, err)
	e2e.RequireAPIError(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "NotAuthorizedOrNotFound", "c1")
	c.DeleteAll(t, q, r.Msgs)
}

// TestSingleActiveConsumerTwoNodes: two server processes on one database agree on the active consumer — when
// consumers race to register through both nodes exactly one receives, both nodes list the same — and a leave on
// one node wakes the standby waiting on the other.
func TestSingleActiveConsumerTwoNodes(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	second := srv.Peer(t)
	c2 := second.AdminOf(t, tenancyID)
	var entries []sdk.PutMessagesDetailsEntry
	for i := 0; i < 20; i++ {
		entries = append(entries, e2e.Msg(fmt.Sprintf("m%02d", i)))
	}
	// Eight consumers, half through each node, all at once; on a few queues, as each race is one chance to
	// catch two nodes deciding differently.
	var q string
	var list, active []string
	for race := 0; race < 4; race++ {
		q = c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(30))
		c.Put(t, q, entries...)
		var mu sync.Mutex
		received := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 8; i++ {
			client := []*e2e.Client{c, c2}[i%2]
			id := fmt.Sprintf("racer-%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for round := 0; round < 3; round++ {
					resp, err := client.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{ConsumerId: &id,
						Limit: e2e.Ptr(3), TimeoutInSeconds: e2e.Ptr(0), VisibilityInSeconds: e2e.Ptr(300)})
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
					mu.Lock()
					received[id] += len(resp.JSON200.Messages)
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		active = nil
		for id, n := range received {
			if n > 0 {
				active = append(active, id)
			}
		}
		require.Len(t, active, 1, "race %d: exactly one consumer received: %v", race, received)
		list = c.ConsumersOf(t, q)
		require.Equal(t, list, c2.ConsumersOf(t, q), "both nodes list the same consumers")
		require.Len(t, list, 8)
		require.Equal(t, active[0]+":RUNNING", list[0])
		for _, cs := range list[1:] {
			require.True(t, strings.HasSuffix(cs, ":STANDBY"), cs)
		}
	}

	// A standby long-polls on the second node; the active consumer leaves through the first.
	<-second.Node.Messaging().Ready()
	next := strings.TrimSuffix(list[1], ":STANDBY")
	waiting := c2.GetAsync(q, &sdk.GetMessagesParams{ConsumerId: &next, Limit: e2e.Ptr(32), TimeoutInSeconds: e2e.Ptr(20), VisibilityInSeconds: e2e.Ptr(300)})
	require.Eventually(t, func() bool { return second.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	left := time.Now()
	c.Leave(t, q, active[0])
	r := <-waiting
	require.NoError(t, r.Err)
	require.Less(t, r.At.Sub(left), 2*time.Second, "the leave on one node wakes the standby on the other")
	require.Len(t, r.Msgs, 20, "the leaver's 9 messages and the 11 others")
	require.Equal(t, next+":RUNNING", c.ConsumersOf(t, q)[0])
	require.Equal(t, next+":RUNNING", c2.ConsumersOf(t, q)[0])
}

// TestSingleActiveConsumerPerConsumerGroup: each consumer group has its own active consumer (with fanout, the same
// messages go to the active consumer of every group), and listing addresses one group.
func TestSingleActiveConsumerPerConsumerGroup(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(30), e2e.WithConsumerGroups(true))
	audit := c.NewGroup(t, q, "audit", "")
	c.Put(t, q, e2e.Msg("m0"), e2e.Msg("m1"))

	require.Len(t, c.Get(t, q, e2e.As("p1"), e2e.Limit(10), e2e.Visibility(60)), 2)
	require.Empty(t, c.Get(t, q, e2e.As("p2"), e2e.Limit(10)))
	require.Len(t, c.Get(t, q, e2e.OfGroup("audit"), e2e.As("p2"), e2e.Limit(10), e2e.Visibility(60)), 2, "p2 registers first in audit: active there")
	require.Empty(t, c.Get(t, q, e2e.OfGroup("audit"), e2e.As("p1"), e2e.Limit(10)), "p1 is a standby in audit")
	require.Equal(t, []string{"p1:RUNNING", "p2:STANDBY"}, c.ConsumersOf(t, q))
	resp, err := c.ListConsumersWithResponse(context.Background(), q, &sdk.ListConsumersParams{ConsumerGroupId: &audit.Id})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Len(t, resp.JSON200.Items, 2)
	require.Equal(t, "p2", resp.JSON200.Items[0].Id)
	require.Equal(t, sdk.ConsumerStatusRUNNING, resp.JSON200.Items[0].Status)
	require.Equal(t, audit.Id, resp.JSON200.Items[0].ConsumerGroupId)
}

// TestSingleActiveConsumerBadInput: the consumer id is required on such queues (and only there), well-formed and
// not contradictory; the queue settings are validated.
func TestSingleActiveConsumerBadInput(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	tok := srv.Token(t, tenancyID, "admin", "Administrators")
	q := c.NewQueue(t, tenancyID, e2e.WithSingleActiveConsumer(5), e2e.WithDLQ(1))
	c.Put(t, q, e2e.Msg("m0"))
	path := "/20210201/queues/" + q + "/messages?timeoutInSeconds=0"

	r := srv.RawJSON(t, tok, http.MethodGet, path, nil)
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "MissingParameter", "consumerId")
	r = srv.RawJSON(t, tok, http.MethodGet, path+"&consumerId=bad%20id", nil)
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerId")
	r = srv.RawJSON(t, tok, http.MethodGet, path+"&consumerId="+strings.Repeat("x", 129), nil)
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerId")
	req, err := http.NewRequest(http.MethodGet, srv.URL+path+"&consumerId=a", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Ferry-Consumer-Id", "b")
	resp, err := srv.HTTP.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "query and header disagree")
	require.Empty(t, c.ConsumersOf(t, q), "nothing registered by rejected calls")

	// The DLQ is not restricted to the active consumer.
	require.Len(t, c.Get(t, q, e2e.As("c1"), e2e.Visibility(0)), 1)
	require.Empty(t, c.Get(t, q, e2e.As("c1")), "moved to the DLQ")
	require.Len(t, c.Get(t, q, e2e.FromDLQ()), 1)

	// A queue without the flag ignores consumer ids; the flag can be turned on later.
	plain := c.NewQueue(t, tenancyID)
	got, etag := c.QueueWithETag(t, plain)
	require.False(t, got.IsSingleActiveConsumer)
	require.Equal(t, 30, got.ConsumerLeaseInSeconds)
	c.Put(t, plain, e2e.Msg("p0"), e2e.Msg("p1"))
	require.Len(t, c.Get(t, plain, e2e.As("x"), e2e.Visibility(300)), 1)
	require.Len(t, c.Get(t, plain, e2e.As("y"), e2e.Visibility(300)), 1)
	require.Empty(t, c.ConsumersOf(t, plain))
	on := true
	upd, err := c.UpdateQueueWithResponse(context.Background(), plain, &sdk.UpdateQueueParams{IfMatch: &etag},
		sdk.UpdateQueueDetails{IsSingleActiveConsumer: &on, ConsumerLeaseInSeconds: e2e.Ptr(7)})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, upd.StatusCode(), string(upd.Body))
	require.True(t, upd.JSON202.IsSingleActiveConsumer)
	require.Equal(t, 7, upd.JSON202.ConsumerLeaseInSeconds)
	r = srv.RawJSON(t, tok, http.MethodGet, "/20210201/queues/"+plain+"/messages?timeoutInSeconds=0", nil)
	e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "MissingParameter", "consumerId")

	for _, lease := range []int{4, 301} {
		r = srv.RawJSON(t, tok, http.MethodPost, "/20210201/queues", strings.NewReader(fmt.Sprintf(
			`{"compartmentId":%q,"displayName":"bad-lease","isSingleActiveConsumer":true,"consumerLeaseInSeconds":%d}`, tenancyID, lease)))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerLeaseInSeconds")
	}
}
