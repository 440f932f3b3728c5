package tests

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestLongPollWakesAcrossNodes: a put on a second node wakes a long poll waiting on the first (NOTIFY crosses
// nodes), within 200 ms.
func TestLongPollWakesAcrossNodes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	second := testserver.Start(t, testserver.WithDatabase(srv.DatabaseURL), testserver.WithSecret(srv.Secret))
	c2 := second.Client(t, second.Token(t, tenancyID, "admin", "Administrators"))
	q := createQueue(t, c, tenancyID)
	<-srv.Node.Messaging().Ready() // the first node LISTENs

	for round := range 3 { // more than once: a wake-up is not a one-off
		type result struct {
			msgs []sdk.GetMessage
			at   time.Time
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: ptr(10)})
			if err == nil && resp.JSON200 == nil {
				err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body)
			}
			if err != nil {
				done <- result{err: err}
				return
			}
			done <- result{msgs: resp.JSON200.Messages, at: time.Now()}
		}()
		require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
		putAt := time.Now()
		sent := put(t, c2, q, msg("from the second node "+strconv.Itoa(round)))
		r := <-done
		require.NoError(t, r.err)
		require.Len(t, r.msgs, 1)
		require.Equal(t, sent[0].Id, r.msgs[0].Id)
		require.Less(t, r.at.Sub(putAt), 200*time.Millisecond, "round %d", round)
		deleteAll(t, c, q, r.msgs)
	}
}

// TestLongPollTimeouts: without messages a long poll answers an empty list after timeoutInSeconds, or after the
// queue's timeoutInSeconds when the call does not say.
func TestLongPollTimeouts(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID, withTimeout(1))

	start := time.Now()
	resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{}) // the queue's 1 s
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Empty(t, resp.JSON200.Messages)
	require.InDelta(t, 1.0, time.Since(start).Seconds(), 0.5)

	start = time.Now()
	require.Empty(t, get(t, c, q, timeout(2)))
	require.InDelta(t, 2.0, time.Since(start).Seconds(), 0.5)

	start = time.Now()
	require.Empty(t, get(t, c, q, timeout(0)))
	require.Less(t, time.Since(start), 500*time.Millisecond, "timeoutInSeconds 0 answers at once")
	require.Zero(t, srv.Node.Messaging().Waiting())
}

// TestManyLongPollsHoldNoConnections: 200 long polls on an empty queue wait without holding database connections;
// when messages arrive each goes to one of them, and the others answer empty at their timeout.
func TestManyLongPollsHoldNoConnections(t *testing.T) {
	t.Parallel()
	const (
		waiters  = 200
		messages = 50
	)
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID, withVisibility(600))

	type result struct {
		msgs []sdk.GetMessage
		at   time.Time
		err  error
	}
	results := make(chan result, waiters)
	start := time.Now()
	for range waiters {
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: ptr(6)})
			if err == nil && resp.JSON200 == nil {
				err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body)
			}
			if err != nil {
				results <- result{err: err}
				return
			}
			results <- result{msgs: resp.JSON200.Messages, at: time.Now()}
		}()
	}
	require.Eventually(t, func() bool { return srv.Node.Messaging().Waiting() == waiters }, 10*time.Second, 10*time.Millisecond)
	// Each waiter looks once more right after registering; after that, waiting holds no connection: sample the
	// pool for a while.
	require.Eventually(t, func() bool { return srv.Pool.Stat().AcquiredConns() <= 2 }, 10*time.Second, 5*time.Millisecond)
	for range 20 {
		require.LessOrEqual(t, srv.Pool.Stat().AcquiredConns(), int32(2), "connections held while %d calls wait", waiters)
		time.Sleep(10 * time.Millisecond)
	}

	putAt := time.Now()
	var sent []int64
	for b := 0; b < messages; b += 20 {
		var entries []sdk.PutMessagesDetailsEntry
		for i := b; i < min(b+20, messages); i++ {
			entries = append(entries, msg("m"+strconv.Itoa(i)))
		}
		for _, r := range put(t, c, q, entries...) {
			sent = append(sent, r.Id)
		}
	}

	var got []int64
	var lastDelivery time.Time
	empty := 0
	for range waiters {
		r := <-results
		require.NoError(t, r.err)
		switch len(r.msgs) {
		case 0:
			empty++
			require.GreaterOrEqual(t, r.at.Sub(start), 5*time.Second, "an empty answer comes at the timeout")
		case 1:
			got = append(got, r.msgs[0].Id)
			if r.at.After(lastDelivery) {
				lastDelivery = r.at
			}
		default:
			t.Fatalf("limit 1 answered %d messages", len(r.msgs))
		}
	}
	require.Equal(t, waiters-messages, empty)
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	require.Equal(t, sent, got, "every message went to exactly one waiter")
	require.Less(t, lastDelivery.Sub(putAt), 3*time.Second, "waiters took the messages as they arrived, not at their timeout")
	require.Zero(t, srv.Node.Messaging().Waiting())
	requireStats(t, c, q, 0, messages, 0, 0)
}

// TestDelayedMessage: a message published with delayInSeconds stays invisible (and is not counted as visible or
// in flight, but as delayed) until the delay ends, then is delivered like any other.
func TestDelayedMessage(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID)

	putAt := time.Now()
	put(t, c, q, withMeta("later", sdk.MessageMetadata{DelayInSeconds: ptr(2)}), msg("now"))
	now := get(t, c, q, limit(10))
	require.Len(t, now, 1, "only the undelayed message is visible")
	require.Equal(t, "now", now[0].Content)
	deleteAll(t, c, q, now)

	st := stats(t, c, q)
	require.EqualValues(t, 0, st.Queue.VisibleMessages)
	require.EqualValues(t, 0, st.Queue.InFlightMessages, "a delayed message was never leased")
	require.EqualValues(t, 1, st.Queue.DelayedMessages)
	require.EqualValues(t, len("later"), st.Queue.SizeInBytes, "a delayed message takes room in the queue")

	later := get(t, c, q, timeout(10))
	require.Len(t, later, 1)
	elapsed := time.Since(putAt)
	require.Equal(t, "later", later[0].Content)
	require.Equal(t, 1, later[0].DeliveryCount)
	require.GreaterOrEqual(t, elapsed, 2*time.Second, "delivered before the delay ended")
	require.Less(t, elapsed, 4*time.Second, "a waiting consumer finds the message soon after the delay ends")
	st = stats(t, c, q)
	require.EqualValues(t, [3]int64{0, 1, 0}, [3]int64{st.Queue.VisibleMessages, st.Queue.InFlightMessages, st.Queue.DelayedMessages})
}

// TestDeduplication: within the window a repeated deduplicationId answers the first message's id (across puts and
// within a batch) and stores nothing; after the window the id is new again; without a window dedup ids are
// ignored.
func TestDeduplication(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID, withDedup(2))
	dedup := func(content, id string) sdk.PutMessagesDetailsEntry {
		return withMeta(content, sdk.MessageMetadata{DeduplicationId: ptr(id)})
	}

	first := put(t, c, q, dedup("a", "k1"))[0]
	firstAt := time.Now()
	again := put(t, c, q, dedup("a, again", "k1"))[0]
	require.Equal(t, first.Id, again.Id)
	require.WithinDuration(t, first.ExpireAfter, again.ExpireAfter, time.Second, "a duplicate answers the original's expiry")

	batch := put(t, c, q, dedup("b", "k2"), dedup("b, again", "k2"), dedup("a, third", "k1"), msg("plain"))
	require.NotEqual(t, first.Id, batch[0].Id)
	require.Equal(t, batch[0].Id, batch[1].Id, "a duplicate within one batch")
	require.Equal(t, batch[0].ExpireAfter, batch[1].ExpireAfter)
	require.Equal(t, first.Id, batch[2].Id)
	require.NotEqual(t, batch[0].Id, batch[3].Id)
	requireStats(t, c, q, 3, 0, 0, 0)
	require.EqualValues(t, 3, storedMessages(t, srv, q))

	got := get(t, c, q, limit(10))
	require.ElementsMatch(t, []string{"a", "b", "plain"}, []string{got[0].Content, got[1].Content, got[2].Content})
	// The window runs from the first acceptance, not from consumption: a duplicate of a consumed message is
	// still a duplicate.
	deleteAll(t, c, q, got)
	require.Equal(t, first.Id, put(t, c, q, dedup("a, fourth", "k1"))[0].Id)
	requireStats(t, c, q, 0, 0, 0, 0)

	time.Sleep(time.Until(firstAt.Add(2100 * time.Millisecond))) // the window itself is the subject
	after := put(t, c, q, dedup("a, after the window", "k1"))[0]
	require.Greater(t, after.Id, batch[3].Id, "after the window the id is accepted as new")
	require.Equal(t, after.Id, put(t, c, q, dedup("and deduplicated again", "k1"))[0].Id)
	requireStats(t, c, q, 1, 0, 0, 0)

	// Without a window, deduplication ids are stored but ignored.
	plain := createQueue(t, c, tenancyID)
	one := put(t, c, plain, dedup("x", "k1"))[0]
	two := put(t, c, plain, dedup("y", "k1"), dedup("z", "k1"))
	require.NotEqual(t, one.Id, two[0].Id)
	require.NotEqual(t, two[0].Id, two[1].Id)
	requireStats(t, c, plain, 3, 0, 0, 0)
}

// TestConcurrentDuplicatePuts: the same deduplicationId published concurrently is stored once.
func TestConcurrentDuplicatePuts(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID, withDedup(60))

	const n = 16
	idsSeen := make(chan int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.PutMessagesWithResponse(context.Background(), q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{
				Messages: []sdk.PutMessagesDetailsEntry{withMeta("copy "+strconv.Itoa(i), sdk.MessageMetadata{DeduplicationId: ptr("same")})},
			})
			if err != nil || resp.JSON200 == nil {
				idsSeen <- -1
				return
			}
			idsSeen <- resp.JSON200.Messages[0].Id
		}()
	}
	wg.Wait()
	close(idsSeen)
	distinct := map[int64]bool{}
	for id := range idsSeen {
		distinct[id] = true
	}
	require.Len(t, distinct, 1, "every concurrent put answers the same id: %v", distinct)
	require.NotContains(t, distinct, int64(-1))
	require.EqualValues(t, 1, storedMessages(t, srv, q))
}

// TestRetention: a message past retentionInSeconds is never delivered, and the maintainer deletes it (counting it
// in ferry_messages_expired).
func TestRetention(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	srv.Node.Maintainer().Stop() // this test runs the cycles itself, to observe the state between them
	tenancyID, c := srv.Admin(t, "dp")
	q := createQueue(t, c, tenancyID, withRetention(10))
	keep := createQueue(t, c, tenancyID) // the default retention of a day
	ctx := context.Background()

	sent := put(t, c, q, msg("short-lived"), msg("also short-lived"))
	put(t, c, keep, msg("long-lived"))
	ran, err := srv.Node.Maintainer().RunOnce(ctx) // records the id watermark that the later cycle uses
	require.NoError(t, err)
	require.True(t, ran)
	requireStats(t, c, q, 2, 0, 0, 0)

	time.Sleep(time.Until(sent[0].ExpireAfter.Add(100 * time.Millisecond))) // the retention itself is the subject
	// Expired but not deleted yet: invisible to consumers and to the stats.
	require.EqualValues(t, 2, storedMessages(t, srv, q))
	require.Empty(t, get(t, c, q, limit(10)))
	requireStats(t, c, q, 0, 0, 0, 0)

	require.Eventually(t, func() bool {
		if _, err := srv.Node.Maintainer().RunOnce(ctx); err != nil {
			return false
		}
		var n int64
		return srv.Pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE queue_id = $1`, q).Scan(&n) == nil && n == 0
	}, 10*time.Second, 100*time.Millisecond)
	require.Zero(t, storedMessages(t, srv, q))
	require.EqualValues(t, 1, storedMessages(t, srv, keep), "other queues keep their messages")
	requireStats(t, c, keep, 1, 0, 0, 0)

	expired := metricValue(t, srv, "ferry_messages_expired", q)
	require.EqualValues(t, 2, expired)
}

// metricValue sums the samples of a Prometheus metric (name or name_total) that carry the queue label.
func metricValue(t *testing.T, srv *testserver.Server, name, queueID string) float64 {
	t.Helper()
	resp, err := srv.HTTP.Client().Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+"_total{") {
			continue
		}
		if !strings.Contains(line, `queue="`+queueID+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += v
		found = true
	}
	require.NoError(t, sc.Err())
	require.True(t, found, "no %s sample for queue %s in /metrics", name, queueID)
	return sum
}
