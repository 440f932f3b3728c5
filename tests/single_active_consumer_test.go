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
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of the single active consumer (DESIGN section 7, queue flag isSingleActiveConsumer): per
// consumer group one consumer receives, in publish order; standbys wait; the oldest standby takes over when the
// active consumer's lease lapses or it leaves, and receives the previous consumer's unacknowledged messages first;
// every node agrees on who is active.

func withSingleActiveConsumer(leaseSeconds int) queueOpts {
	return func(d *sdk.CreateQueueDetails) {
		on := true
		d.IsSingleActiveConsumer, d.ConsumerLeaseInSeconds = &on, &leaseSeconds
	}
}

// as names the consumer of a GetMessages call.
func as(consumer string) getOpts { return func(p *sdk.GetMessagesParams) { p.ConsumerId = &consumer } }

// getAsync runs a long poll in the background.
func getAsync(c *sdk.ClientWithResponses, queueID string, params *sdk.GetMessagesParams) <-chan getResult {
	done := make(chan getResult, 1)
	go func() {
		resp, err := c.GetMessagesWithResponse(context.Background(), queueID, params)
		if err == nil && resp.JSON200 == nil {
			err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body)
		}
		if err != nil {
			done <- getResult{err: err, at: time.Now()}
			return
		}
		done <- getResult{msgs: resp.JSON200.Messages, at: time.Now()}
	}()
	return done
}

type getResult struct {
	msgs []sdk.GetMessage
	at   time.Time
	err  error
}

// consumersOf lists the consumers of a queue's primary group as "id:STATUS", the active one first.
func consumersOf(t *testing.T, c *sdk.ClientWithResponses, queueID string) []string {
	t.Helper()
	resp, err := c.ListConsumersWithResponse(context.Background(), queueID, &sdk.ListConsumersParams{ConsumerGroupId: &queueID})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	out := []string{}
	for _, cs := range resp.JSON200.Items {
		require.Equal(t, queueID, cs.ConsumerGroupId, "the primary group's id is the queue's")
		require.GreaterOrEqual(t, cs.IdleSeconds, 0)
		out = append(out, cs.Id+":"+string(cs.Status))
	}
	return out
}

func leave(t *testing.T, c *sdk.ClientWithResponses, queueID, consumer string) {
	t.Helper()
	resp, err := c.DeleteConsumerWithResponse(context.Background(), queueID, consumer, &sdk.DeleteConsumerParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode(), string(resp.Body))
}

// TestSingleActiveConsumerStandby: the first consumer to ask is active and receives in publish order across
// channels; a second one receives nothing, not even by waiting, while the first keeps calling.
func TestSingleActiveConsumerStandby(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-standby")
	q := createQueue(t, c, tenancyID, withSingleActiveConsumer(5))
	var sent []int64
	for i := 0; i < 6; i++ {
		sent = append(sent, put(t, c, q, msgOn(fmt.Sprintf("m%d", i), []string{"a", "b"}[i%2]))[0].Id)
	}

	first := get(t, c, q, as("c1"), limit(2), visibility(300))
	require.Equal(t, sent[:2], ids(first), "publish order across channels")
	require.Empty(t, get(t, c, q, as("c2"), limit(10)), "a standby receives nothing")
	start := time.Now()
	require.Empty(t, get(t, c, q, as("c2"), limit(10), timeout(1)), "a standby's long poll waits and ends empty")
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Equal(t, []string{"c1:RUNNING", "c2:STANDBY"}, consumersOf(t, c, q))

	// The header names the consumer too.
	hdr := "c1"
	resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{XFerryConsumerId: &hdr, Limit: ptr(10),
		TimeoutInSeconds: ptr(0), VisibilityInSeconds: ptr(300)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Equal(t, sent[2:], ids(resp.JSON200.Messages))
	require.Empty(t, get(t, c, q, as("c2"), limit(10)))

	// Acknowledging needs no consumer id: receipts name the lease.
	deleteAll(t, c, q, append(first, resp.JSON200.Messages...))
	require.Zero(t, storedMessages(t, srv, q))
}

// TestSingleActiveConsumerFailover: when the active consumer stops calling, the standby that registered first
// takes over once the consumer lease (5 s) lapses — not after the messages' visibility (300 s) — and receives the
// previous consumer's unacknowledged messages first, in publish order, followed by the rest.
func TestSingleActiveConsumerFailover(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-failover")
	q := createQueue(t, c, tenancyID, withSingleActiveConsumer(5))
	var sent []int64
	for _, r := range put(t, c, q, msg("m0"), msg("m1"), msg("m2"), msg("m3"), msg("m4")) {
		sent = append(sent, r.Id)
	}
	held := get(t, c, q, as("c1"), limit(3), visibility(300))
	require.Equal(t, sent[:3], ids(held))
	lastCall := time.Now()
	deleteAll(t, c, q, held[:1]) // m0 done; m1 and m2 stay unacknowledged
	require.Empty(t, get(t, c, q, as("c3"), limit(10)), "c3 registers, as a standby")
	time.Sleep(50 * time.Millisecond)

	// c2 (registered after c3) and c3 both wait; c3 registered first, so c3 takes over. (c2's poll ends before
	// c3, which stops calling once it has its messages, lapses in turn.)
	c2 := getAsync(c, q, &sdk.GetMessagesParams{ConsumerId: ptr("c2"), Limit: ptr(10), TimeoutInSeconds: ptr(8), VisibilityInSeconds: ptr(300)})
	time.Sleep(50 * time.Millisecond)
	c3 := getAsync(c, q, &sdk.GetMessagesParams{ConsumerId: ptr("c3"), Limit: ptr(10), TimeoutInSeconds: ptr(12), VisibilityInSeconds: ptr(300)})
	r3 := <-c3
	require.NoError(t, r3.err)
	took := r3.at.Sub(lastCall)
	require.Greater(t, took, 4500*time.Millisecond, "not before the consumer lease lapsed")
	require.Less(t, took, 8*time.Second, "soon after it lapsed, long before the messages' visibility ends")
	require.Equal(t, sent[1:], ids(r3.msgs), "the previous consumer's unacknowledged messages first, in publish order")
	require.Equal(t, []int{2, 2, 1, 1}, deliveryCounts(r3.msgs))
	r2 := <-c2
	require.NoError(t, r2.err)
	require.Empty(t, r2.msgs, "c2 stays standby")
	require.Equal(t, []string{"c3:RUNNING", "c2:STANDBY"}, consumersOf(t, c, q), "c1 lapsed and is gone")

	// c1 comes back: it registers again, at the back.
	require.Empty(t, get(t, c, q, as("c1"), limit(10)))
	require.Equal(t, []string{"c3:RUNNING", "c2:STANDBY", "c1:STANDBY"}, consumersOf(t, c, q))
	// Its old receipts no longer hold the lease.
	del, err := c.DeleteMessageWithResponse(context.Background(), q, held[1].Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, del.StatusCode(), string(del.Body))
	deleteAll(t, c, q, r3.msgs)
	require.Zero(t, storedMessages(t, srv, q))
}

func deliveryCounts(msgs []sdk.GetMessage) []int {
	out := make([]int, len(msgs))
	for i, m := range msgs {
		out[i] = m.DeliveryCount
	}
	return out
}

// TestSingleActiveConsumerLeave: an active consumer that leaves hands over at once: the waiting standby receives
// the leaver's unacknowledged message within moments, with a 30 s consumer lease.
func TestSingleActiveConsumerLeave(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-leave")
	q := createQueue(t, c, tenancyID, withSingleActiveConsumer(30))
	sent := put(t, c, q, msg("m0"), msg("m1"))
	held := get(t, c, q, as("c1"), visibility(300))
	require.Equal(t, sent[0].Id, held[0].Id)

	waiting := getAsync(c, q, &sdk.GetMessagesParams{ConsumerId: ptr("c2"), Limit: ptr(10), TimeoutInSeconds: ptr(20), VisibilityInSeconds: ptr(300)})
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	left := time.Now()
	leave(t, c, q, "c1")
	r := <-waiting
	require.NoError(t, r.err)
	require.Less(t, r.at.Sub(left), 2*time.Second)
	require.Equal(t, []int64{sent[0].Id, sent[1].Id}, ids(r.msgs), "the leaver's message first")
	require.Equal(t, []string{"c2:RUNNING", "c1:EXIT"}, consumersOf(t, c, q), "one that left is listed as EXIT for a while")

	resp, err := c.DeleteConsumerWithResponse(context.Background(), q, "c1", &sdk.DeleteConsumerParams{})
	require.NoError(t, err)
	requireAPIError(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "NotAuthorizedOrNotFound", "c1")
	deleteAll(t, c, q, r.msgs)
}

// TestSingleActiveConsumerTwoNodes: two server processes on one database agree on the active consumer — when
// consumers race to register through both nodes exactly one receives, both nodes list the same — and a leave on
// one node wakes the standby waiting on the other.
func TestSingleActiveConsumerTwoNodes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-nodes")
	second := srv.Peer(t)
	c2 := second.AdminOf(t, tenancyID)
	var entries []sdk.PutMessagesDetailsEntry
	for i := 0; i < 20; i++ {
		entries = append(entries, msg(fmt.Sprintf("m%02d", i)))
	}
	// Eight consumers, half through each node, all at once; on a few queues, as each race is one chance to
	// catch two nodes deciding differently.
	var q string
	var list, active []string
	for race := 0; race < 4; race++ {
		q = createQueue(t, c, tenancyID, withSingleActiveConsumer(30))
		put(t, c, q, entries...)
		var mu sync.Mutex
		received := map[string]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 8; i++ {
			client := []*sdk.ClientWithResponses{c, c2}[i%2]
			id := fmt.Sprintf("racer-%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for round := 0; round < 3; round++ {
					resp, err := client.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{ConsumerId: &id,
						Limit: ptr(3), TimeoutInSeconds: ptr(0), VisibilityInSeconds: ptr(300)})
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
		list = consumersOf(t, c, q)
		require.Equal(t, list, consumersOf(t, c2, q), "both nodes list the same consumers")
		require.Len(t, list, 8)
		require.Equal(t, active[0]+":RUNNING", list[0])
		for _, cs := range list[1:] {
			require.True(t, strings.HasSuffix(cs, ":STANDBY"), cs)
		}
	}

	// A standby long-polls on the second node; the active consumer leaves through the first.
	<-second.Node.Messaging().Ready()
	next := strings.TrimSuffix(list[1], ":STANDBY")
	waiting := getAsync(c2, q, &sdk.GetMessagesParams{ConsumerId: &next, Limit: ptr(32), TimeoutInSeconds: ptr(20), VisibilityInSeconds: ptr(300)})
	require.Eventually(t, func() bool { return second.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	left := time.Now()
	leave(t, c, q, active[0])
	r := <-waiting
	require.NoError(t, r.err)
	require.Less(t, r.at.Sub(left), 2*time.Second, "the leave on one node wakes the standby on the other")
	require.Len(t, r.msgs, 20, "the leaver's 9 messages and the 11 others")
	require.Equal(t, next+":RUNNING", consumersOf(t, c, q)[0])
	require.Equal(t, next+":RUNNING", consumersOf(t, c2, q)[0])
}

// TestSingleActiveConsumerPerConsumerGroup: each consumer group has its own active consumer (with fanout, the same
// messages go to the active consumer of every group), and listing addresses one group.
func TestSingleActiveConsumerPerConsumerGroup(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-groups")
	q := createQueue(t, c, tenancyID, withSingleActiveConsumer(30), withConsumerGroups(true))
	audit := createGroup(t, c, q, "audit", "")
	put(t, c, q, msg("m0"), msg("m1"))

	require.Len(t, get(t, c, q, as("p1"), limit(10), visibility(60)), 2)
	require.Empty(t, get(t, c, q, as("p2"), limit(10)))
	require.Len(t, get(t, c, q, ofGroup("audit"), as("p2"), limit(10), visibility(60)), 2, "p2 registers first in audit: active there")
	require.Empty(t, get(t, c, q, ofGroup("audit"), as("p1"), limit(10)), "p1 is a standby in audit")
	require.Equal(t, []string{"p1:RUNNING", "p2:STANDBY"}, consumersOf(t, c, q))
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
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "sac-bad")
	tok := srv.Token(t, tenancyID, "admin", "Administrators")
	q := createQueue(t, c, tenancyID, withSingleActiveConsumer(5), withDLQ(1))
	put(t, c, q, msg("m0"))
	path := "/20210201/queues/" + q + "/messages?timeoutInSeconds=0"

	r := raw(t, srv, tok, http.MethodGet, path, nil)
	requireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "MissingParameter", "consumerId")
	r = raw(t, srv, tok, http.MethodGet, path+"&consumerId=bad%20id", nil)
	requireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerId")
	r = raw(t, srv, tok, http.MethodGet, path+"&consumerId="+strings.Repeat("x", 129), nil)
	requireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerId")
	req, err := http.NewRequest(http.MethodGet, srv.URL+path+"&consumerId=a", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Ferry-Consumer-Id", "b")
	resp, err := srv.HTTP.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "query and header disagree")
	require.Empty(t, consumersOf(t, c, q), "nothing registered by rejected calls")

	// The DLQ is not restricted to the active consumer.
	require.Len(t, get(t, c, q, as("c1"), visibility(0)), 1)
	require.Empty(t, get(t, c, q, as("c1")), "moved to the DLQ")
	require.Len(t, get(t, c, q, fromDLQ()), 1)

	// A queue without the flag ignores consumer ids; the flag can be turned on later.
	plain := createQueue(t, c, tenancyID)
	got, etag := cpGetQueue(t, c, plain)
	require.False(t, got.IsSingleActiveConsumer)
	require.Equal(t, 30, got.ConsumerLeaseInSeconds)
	put(t, c, plain, msg("p0"), msg("p1"))
	require.Len(t, get(t, c, plain, as("x"), visibility(300)), 1)
	require.Len(t, get(t, c, plain, as("y"), visibility(300)), 1)
	require.Empty(t, consumersOf(t, c, plain))
	on := true
	upd, err := c.UpdateQueueWithResponse(context.Background(), plain, &sdk.UpdateQueueParams{IfMatch: &etag},
		sdk.UpdateQueueDetails{IsSingleActiveConsumer: &on, ConsumerLeaseInSeconds: ptr(7)})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))
	require.True(t, upd.JSON200.IsSingleActiveConsumer)
	require.Equal(t, 7, upd.JSON200.ConsumerLeaseInSeconds)
	r = raw(t, srv, tok, http.MethodGet, "/20210201/queues/"+plain+"/messages?timeoutInSeconds=0", nil)
	requireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "MissingParameter", "consumerId")

	for _, lease := range []int{4, 301} {
		r = raw(t, srv, tok, http.MethodPost, "/20210201/queues", strings.NewReader(fmt.Sprintf(
			`{"compartmentId":%q,"displayName":"bad-lease","isSingleActiveConsumer":true,"consumerLeaseInSeconds":%d}`, tenancyID, lease)))
		requireAPIError(t, r.Status, r.Body, http.StatusBadRequest, "InvalidParameter", "consumerLeaseInSeconds")
	}
}
