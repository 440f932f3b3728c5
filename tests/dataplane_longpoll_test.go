package tests

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestLongPollWakesAcrossNodes: a put on a second node wakes a long poll waiting on the first (NOTIFY crosses
// nodes), within 200 ms.
func TestLongPollWakesAcrossNodes(t *testing.T) {
	t.Parallel()
	// No fallback poll within the test: a long poll that answers was woken by the other node's NOTIFY, however
	// loaded the machine (the bounds below leave room for it).
	noFallback := func(c *server.Config) { c.Messaging.PollInterval = time.Minute }
	srv, tenancyID, c := testserver.StartAdmin(t, noFallback)
	second := srv.Peer(t, noFallback)
	c2 := second.AdminOf(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	<-srv.Node.Messaging().Ready() // the first node LISTENs

	for round := range 3 { // more than once: a wake-up is not a one-off
		done := c.GetAsync(q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(10)})
		require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
		putAt := time.Now()
		sent := c2.Put(t, q, e2e.Msg("from the second node "+strconv.Itoa(round)))
		r := <-done
		require.NoError(t, r.Err)
		require.Len(t, r.Msgs, 1)
		require.Equal(t, sent[0].Id, r.Msgs[0].Id)
		require.Less(t, r.At.Sub(putAt), 2*time.Second, "round %d", round)
		c.DeleteAll(t, q, r.Msgs)
	}

	// The same for a message on a channel that the first node has not seen yet (its channel list is cached).
	for _, channel := range []string{"orders", "payments"} {
		done := make(chan []sdk.GetMessage, 1)
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(10)})
			if err != nil || resp.JSON200 == nil {
				done <- nil
				return
			}
			done <- resp.JSON200.Messages
		}()
		require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
		putAt := time.Now()
		c2.Put(t, q, e2e.MsgOn("on "+channel, channel))
		got := <-done
		require.Len(t, got, 1, channel)
		require.Less(t, time.Since(putAt), 2*time.Second, "a put on the new channel %s woke the long poll", channel)
		c.DeleteAll(t, q, got)
	}
	// And a short poll on the first node soon sees a new channel's message published on the second (not only
	// at the next refresh of its channel list, a second later).
	putAt := time.Now()
	c2.Put(t, q, e2e.MsgOn("short poll", "refunds"))
	require.Eventually(t, func() bool {
		resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(0)})
		return err == nil && resp.JSON200 != nil && len(resp.JSON200.Messages) == 1
	}, 2*time.Second, 10*time.Millisecond)
	require.Less(t, time.Since(putAt), 800*time.Millisecond, "before the channel list's refresh, a second later")
}

// TestLongPollTimeouts: without messages a long poll answers an empty list after timeoutInSeconds, or after the
// queue's timeoutInSeconds when the call does not say.
func TestLongPollTimeouts(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithTimeout(1))

	start := time.Now()
	resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{}) // the queue's 1 s
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Empty(t, resp.JSON200.Messages)
	waitedAbout(t, time.Since(start), time.Second)

	start = time.Now()
	require.Empty(t, c.Get(t, q, e2e.Timeout(2)))
	waitedAbout(t, time.Since(start), 2*time.Second)

	start = time.Now()
	require.Empty(t, c.Get(t, q, e2e.Timeout(0)))
	require.Less(t, time.Since(start), 500*time.Millisecond, "timeoutInSeconds 0 answers at once")
	require.Zero(t, srv.Node.Messaging().Waiting())
}

// waitedAbout checks that an empty long poll answered at its timeout: not before it (less a timer's slack), and
// well before any other timeout the call could have used; the late side allows for a loaded machine, where a 2 s
// poll has answered after 3.1 s.
func waitedAbout(t *testing.T, waited, timeout time.Duration) {
	t.Helper()
	require.GreaterOrEqual(t, waited, timeout-50*time.Millisecond, "answered before the timeout")
	require.Less(t, waited, timeout+3*time.Second, "answered at the timeout")
}

// TestManyLongPollsHoldNoConnections: 200 long polls on an empty queue wait without holding database connections;
// when messages arrive each goes to one of them, and the others answer empty at their timeout.
func TestManyLongPollsHoldNoConnections(t *testing.T) {
	t.Parallel()
	const (
		waiters  = 200
		messages = 50
	)
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(600))

	results := make([]<-chan e2e.GetResult, waiters)
	start := time.Now()
	for i := range waiters {
		results[i] = c.GetAsync(q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(6)})
	}
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == waiters }, 10*time.Second, 10*time.Millisecond)
	// Each waiter looks once more right after registering; after that, waiting holds no connection: sample the
	// pool for a while. Waiters that held connections would take the whole pool (20); the node's background work
	// (maintenance, limits, metering) holds one or two at times, a few more when a loaded machine slows its
	// statements: every sample stays well under the pool's size, and most at the background's usual one or two.
	require.Eventually(t, func() bool { return srv.Pool.Stat().AcquiredConns() <= 2 }, 10*time.Second, 5*time.Millisecond)
	const samples = 20
	few := 0
	for range samples {
		acquired := srv.Pool.Stat().AcquiredConns()
		require.LessOrEqual(t, acquired, int32(6), "connections held while %d calls wait", waiters)
		if acquired <= 2 {
			few++
		}
		time.Sleep(10 * time.Millisecond) // sampling over a while is the subject: nothing to wait for
	}
	require.GreaterOrEqual(t, few, samples/2, "samples with at most 2 connections held while %d calls wait", waiters)

	putAt := time.Now()
	var sent []int64
	for b := 0; b < messages; b += 20 {
		var entries []sdk.PutMessagesDetailsEntry
		for i := b; i < min(b+20, messages); i++ {
			entries = append(entries, e2e.Msg("m"+strconv.Itoa(i)))
		}
		for _, r := range c.Put(t, q, entries...) {
			sent = append(sent, r.Id)
		}
	}

	var got []int64
	var lastDelivery time.Time
	empty := 0
	for _, result := range results {
		r := <-result
		require.NoError(t, r.Err)
		switch len(r.Msgs) {
		case 0:
			empty++
			require.GreaterOrEqual(t, r.At.Sub(start), 5*time.Second, "an empty answer comes at the timeout")
		case 1:
			got = append(got, r.Msgs[0].Id)
			if r.At.After(lastDelivery) {
				lastDelivery = r.At
			}
		default:
			t.Fatalf("limit 1 answered %d messages", len(r.Msgs))
		}
	}
	require.Equal(t, waiters-messages, empty)
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	require.Equal(t, sent, got, "every message went to exactly one waiter")
	require.Less(t, lastDelivery.Sub(putAt), 3*time.Second, "waiters took the messages as they arrived, not at their timeout")
	require.Zero(t, srv.Node.Messaging().Waiting())
	c.RequireStats(t, q, 0, messages, 0, 0)
}
