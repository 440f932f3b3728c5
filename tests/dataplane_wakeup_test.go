package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/services/server"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestLongPollWakesForEveryBurst races puts against long-polling consumers that are busy leasing and
// acknowledging: bursts of 1–4 concurrent puts, each burst awaited before the next. A put whose wake-up was lost
// is found only when a consumer polls again — or, in a steady stream, by the next put's wake-up, which hides the
// loss as a millisecond of latency. The fallback poll is off and every burst is awaited, so a lost wake-up leaves
// its message waiting for the 5 s the test gives it: every message must arrive within 2 s of its put
// (milliseconds, normally; the margin is for a loaded test machine, where 0.5 s was once not enough).
func TestLongPollWakesForEveryBurst(t *testing.T) {
	t.Parallel()
	const (
		consumers = 4
		bursts    = 400
		late      = 2 * time.Second
	)
	_, tenancyID, c := testserver.StartAdmin(t, noFallbackPoll)
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(600))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	arrived := map[string]chan struct{}{} // content → closed when received
	arrival := func(content string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch := arrived[content]
		if ch == nil {
			ch = make(chan struct{})
			arrived[content] = ch
		}
		return ch
	}
	var wg sync.WaitGroup
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, wait := 32, 20
			for ctx.Err() == nil {
				resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{Limit: &n, TimeoutInSeconds: &wait})
				if err != nil || resp.StatusCode() != http.StatusOK {
					continue
				}
				var entries []sdk.DeleteMessagesDetailsEntry
				for _, m := range resp.JSON200.Messages {
					close(arrival(m.Content))
					entries = append(entries, sdk.DeleteMessagesDetailsEntry{Receipt: m.Receipt})
				}
				if len(entries) > 0 {
					_, _ = c.DeleteMessagesWithResponse(context.WithoutCancel(ctx), q, &sdk.DeleteMessagesParams{},
						sdk.DeleteMessagesDetails{Entries: entries})
				}
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	var slow []string
	var lat []time.Duration
	for b := range bursts {
		k := 1 + b%4
		var puts sync.WaitGroup
		for i := range k {
			content := "b" + strconv.Itoa(b) + "-" + strconv.Itoa(i)
			ch := arrival(content)
			puts.Add(1)
			go func() {
				defer puts.Done()
				start := time.Now()
				c.Put(t, q, e2e.Msg(content))
				select {
				case <-ch:
				case <-time.After(5 * time.Second):
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				if d > late {
					slow = append(slow, fmt.Sprintf("%s after %s", content, d.Round(time.Millisecond)))
				}
				mu.Unlock()
			}()
		}
		puts.Wait()
		time.Sleep(time.Duration(b%3) * time.Millisecond) // varied gaps between bursts are the subject

	}
	slices.Sort(lat)
	t.Logf("put→receive over %d messages: p50 %s, p99 %s, max %s", len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	require.Empty(t, slow, "messages received more than %s after their put (a lost wake-up)", late)
}

// TestDLQLongPollDoesNotTakeTheQueuesWakeUps: a long poll on the DLQ waits apart from the queue's own. A put
// wakes a waiter of the queue, not the DLQ reader that has waited longest (which would find nothing and leave the
// queue's consumer to its fallback poll, a second later).
func TestDLQLongPollDoesNotTakeTheQueuesWakeUps(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, noFallbackPoll)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(3))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dlqDone := make(chan struct{})
	go func() { // the DLQ reader waits first
		defer close(dlqDone)
		wait, dlq := 10, true
		_, _ = c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{TimeoutInSeconds: &wait, Dlq: &dlq})
	}()
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	got := make(chan time.Time, 1)
	go func() {
		wait := 10
		resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{TimeoutInSeconds: &wait})
		if err == nil && resp.JSON200 != nil && len(resp.JSON200.Messages) == 1 {
			got <- time.Now()
		}
		close(got)
	}()
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 2 }, 5*time.Second, 5*time.Millisecond)
	start := time.Now()
	c.Put(t, q, e2e.Msg("for the queue"))
	at, ok := <-got
	require.True(t, ok, "the queue's long poll got the message")
	// Woken, it takes milliseconds; not woken, it would have answered nothing after its 10 s (no fallback poll).
	require.Less(t, at.Sub(start), 3*time.Second, "the queue's long poll was woken by the put")
	cancel()
	<-dlqDone
}

// TestDLQLongPollWakesWhenAMessageIsDeadLettered: a lease that moves a message to the DLQ wakes a long poll
// waiting on the DLQ, on the same node and on another one (NOTIFY crosses nodes).
func TestDLQLongPollWakesWhenAMessageIsDeadLettered(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t, noFallbackPoll)
	second := srv.Peer(t, noFallbackPoll)
	c2 := second.AdminOf(t, tenancyID)
	<-srv.Node.Messaging().Ready() // the first node LISTENs
	for _, tc := range []struct {
		name   string
		leaser *e2e.Client // the node whose lease dead-letters the message
	}{{"same node", c}, {"across nodes", c2}} {
		t.Run(tc.name, func(t *testing.T) {
			q := c.NewQueue(t, tenancyID, e2e.WithDLQ(1))
			c.Put(t, q, e2e.Msg("poison"))
			require.Len(t, tc.leaser.Get(t, q, e2e.Visibility(1)), 1) // its only delivery

			got := c.GetAsync(q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(10), Dlq: e2e.Ptr(true)}) // on the first node's DLQ
			require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
			time.Sleep(1200 * time.Millisecond) // the lease (1 s) expires: real time passing is the subject
			start := time.Now()
			require.Empty(t, tc.leaser.Get(t, q), "the next lease dead-letters the message instead of delivering it")
			r := <-got
			require.NoError(t, r.Err)
			require.Len(t, r.Msgs, 1, "the DLQ's long poll got the message")
			// Woken, it takes milliseconds; not woken, it would have answered nothing after its 10 s (no fallback poll).
			require.Less(t, r.At.Sub(start), 3*time.Second, "the DLQ's long poll was woken by the dead-lettering lease")
		})
	}
}

// noFallbackPoll turns the waiting GetMessages' fallback poll off (a minute, longer than any call here waits): a
// long poll that answers with a message was woken, however slow the machine, so the tests' time bounds can leave
// room for a loaded machine without letting a lost wake-up pass.
func noFallbackPoll(c *server.Config) { c.Messaging.PollInterval = time.Minute }
