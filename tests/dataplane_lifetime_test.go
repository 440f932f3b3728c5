package tests

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestDelayedMessage: a message published with delayInSeconds stays invisible (and is not counted as visible or
// in flight, but as delayed) until the delay ends, then is delivered like any other.
func TestDelayedMessage(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID)

	putAt := time.Now()
	c.Put(t, q, e2e.WithMeta("later", sdk.MessageMetadata{DelayInSeconds: e2e.Ptr(2)}), e2e.Msg("now"))
	now := c.Get(t, q, e2e.Limit(10))
	require.Len(t, now, 1, "only the undelayed message is visible")
	require.Equal(t, "now", now[0].Content)
	c.DeleteAll(t, q, now)

	st := c.Stats(t, q)
	require.EqualValues(t, 0, st.Queue.VisibleMessages)
	require.EqualValues(t, 0, st.Queue.InFlightMessages, "a delayed message was never leased")
	require.EqualValues(t, 1, st.Queue.DelayedMessages)
	require.EqualValues(t, len("later"), st.Queue.SizeInBytes, "a delayed message takes room in the queue")

	later := c.Get(t, q, e2e.Timeout(10))
	require.Len(t, later, 1)
	elapsed := time.Since(putAt)
	require.Equal(t, "later", later[0].Content)
	require.Equal(t, 1, later[0].DeliveryCount)
	require.GreaterOrEqual(t, elapsed, 2*time.Second, "delivered before the delay ended")
	require.Less(t, elapsed, 4*time.Second, "a waiting consumer finds the message soon after the delay ends")
	st = c.Stats(t, q)
	require.EqualValues(t, [3]int64{0, 1, 0}, [3]int64{st.Queue.VisibleMessages, st.Queue.InFlightMessages, st.Queue.DelayedMessages})
}

// TestDeduplication: within the window a repeated deduplicationId answers the first message's id (across puts and
// within a batch) and stores nothing; after the window the id is new again; without a window dedup ids are
// ignored.
func TestDeduplication(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDedup(2))
	dedup := func(content, id string) sdk.PutMessagesDetailsEntry {
		return e2e.WithMeta(content, sdk.MessageMetadata{DeduplicationId: e2e.Ptr(id)})
	}

	first := c.Put(t, q, dedup("a", "k1"))[0]
	firstAt := time.Now()
	again := c.Put(t, q, dedup("a, again", "k1"))[0]
	require.Equal(t, first.Id, again.Id)
	require.WithinDuration(t, first.ExpireAfter, again.ExpireAfter, time.Second, "a duplicate answers the original's expiry")

	batch := c.Put(t, q, dedup("b", "k2"), dedup("b, again", "k2"), dedup("a, third", "k1"), e2e.Msg("plain"))
	require.NotEqual(t, first.Id, batch[0].Id)
	require.Equal(t, batch[0].Id, batch[1].Id, "a duplicate within one batch")
	require.Equal(t, batch[0].ExpireAfter, batch[1].ExpireAfter)
	require.Equal(t, first.Id, batch[2].Id)
	require.NotEqual(t, batch[0].Id, batch[3].Id)
	c.RequireStats(t, q, 3, 0, 0, 0)
	require.EqualValues(t, 3, srv.StoredMessages(t, q))

	got := c.Get(t, q, e2e.Limit(10))
	require.ElementsMatch(t, []string{"a", "b", "plain"}, []string{got[0].Content, got[1].Content, got[2].Content})
	// The window runs from the first acceptance, not from consumption: a duplicate of a consumed message is
	// still a duplicate.
	c.DeleteAll(t, q, got)
	require.Equal(t, first.Id, c.Put(t, q, dedup("a, fourth", "k1"))[0].Id)
	c.RequireStats(t, q, 0, 0, 0, 0)

	// To 2.1 s after the first acceptance: past the window, which runs from there (not from the duplicates).
	srv.AdvanceClock(t, time.Until(firstAt.Add(2100*time.Millisecond)))
	after := c.Put(t, q, dedup("a, after the window", "k1"))[0]
	require.Greater(t, after.Id, batch[3].Id, "after the window the id is accepted as new")
	require.Equal(t, after.Id, c.Put(t, q, dedup("and deduplicated again", "k1"))[0].Id)
	c.RequireStats(t, q, 1, 0, 0, 0)

	// Without a window, deduplication ids are stored but ignored.
	plain := c.NewQueue(t, tenancyID)
	one := c.Put(t, plain, dedup("x", "k1"))[0]
	two := c.Put(t, plain, dedup("y", "k1"), dedup("z", "k1"))
	require.NotEqual(t, one.Id, two[0].Id)
	require.NotEqual(t, two[0].Id, two[1].Id)
	c.RequireStats(t, plain, 3, 0, 0, 0)
}

// TestConcurrentDuplicatePuts: the same deduplicationId published concurrently is stored once.
func TestConcurrentDuplicatePuts(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDedup(60))

	const n = 16
	idsSeen := make(chan int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.PutMessagesWithResponse(context.Background(), q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{
				Messages: []sdk.PutMessagesDetailsEntry{e2e.WithMeta("copy "+strconv.Itoa(i), sdk.MessageMetadata{DeduplicationId: e2e.Ptr("same")})},
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
	require.EqualValues(t, 1, srv.StoredMessages(t, q))
}

// TestRetention: a message past retentionInSeconds is never delivered, and the maintainer deletes it (counting it
// in ferry_queue_messages_expired_total).
func TestRetention(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	srv.Node.Maintainer().Stop() // this test runs the cycles itself, to observe the state between them
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithRetention(10))
	keep := c.NewQueue(t, tenancyID) // the default retention of a day
	ctx := context.Background()

	sent := c.Put(t, q, e2e.Msg("short-lived"), e2e.Msg("also short-lived"))
	c.Put(t, keep, e2e.Msg("long-lived"))
	ran, err := srv.Node.Maintainer().RunOnce(ctx) // records the id watermark that the later cycle uses
	require.NoError(t, err)
	require.True(t, ran)
	c.RequireStats(t, q, 2, 0, 0, 0)

	// To just past the messages' expiry; the watermark recorded above is now older than the retention.
	srv.AdvanceClock(t, time.Until(sent[0].ExpireAfter.Add(100*time.Millisecond)))
	// Expired but not deleted yet: invisible to consumers and to the stats.
	require.EqualValues(t, 2, srv.StoredMessages(t, q))
	require.Empty(t, c.Get(t, q, e2e.Limit(10)))
	c.RequireStats(t, q, 0, 0, 0, 0)

	ran, err = srv.Node.Maintainer().RunOnce(ctx) // the cycle after the retention deletes them
	require.NoError(t, err)
	require.True(t, ran)
	require.Zero(t, srv.StoredMessages(t, q))
	require.EqualValues(t, 1, srv.StoredMessages(t, keep), "other queues keep their messages")
	c.RequireStats(t, keep, 1, 0, 0, 0)

	expired := srv.MetricValue(t, "ferry_queue_messages_expired_total", q)
	require.EqualValues(t, 2, expired)
}

// TestPurgeTypes: NORMAL, DLQ and BOTH each delete only their messages, and only of the purged queue.
func TestPurgeTypes(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(1))
	other := c.NewQueue(t, tenancyID)
	c.Put(t, other, e2e.Msg("bystander"))

	// deadLetter moves n fresh messages to the DLQ (of an empty queue): one delivery each, then the next lease
	// dead-letters them.
	deadLetter := func(n int) {
		t.Helper()
		var entries []sdk.PutMessagesDetailsEntry
		for i := range n {
			entries = append(entries, e2e.Msg("poison "+strconv.Itoa(i)))
		}
		c.Put(t, q, entries...)
		require.Len(t, c.Get(t, q, e2e.Limit(n), e2e.Visibility(0)), n)
		require.Empty(t, c.Get(t, q, e2e.Limit(n)))
	}
	deadLetter(2)
	c.Put(t, q, e2e.Msg("a"), e2e.Msg("b"), e2e.Msg("c"))
	inFlight := c.Get(t, q, e2e.Limit(1)) // a leased message is purged too
	require.Len(t, inFlight, 1)
	c.RequireStats(t, q, 2, 1, 2, 0)

	srv.Purge(t, c, q, sdk.PurgeTypeNORMAL)
	c.RequireStats(t, q, 0, 0, 2, 0)
	del, err := c.DeleteMessageWithResponse(context.Background(), q, inFlight[0].Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	e2e.RequireAPIError(t, del.StatusCode(), del.Body, http.StatusNotFound, "NotAuthorizedOrNotFound", "receipt")

	c.Put(t, q, e2e.Msg("d"))
	c.RequireStats(t, q, 1, 0, 2, 0)
	srv.Purge(t, c, q, sdk.PurgeTypeDLQ)
	c.RequireStats(t, q, 1, 0, 0, 0)

	srv.Purge(t, c, q, sdk.PurgeTypeNORMAL)
	deadLetter(1)
	c.Put(t, q, e2e.Msg("e"), e2e.Msg("f"))
	c.RequireStats(t, q, 2, 0, 1, 0)
	srv.Purge(t, c, q, sdk.PurgeTypeBOTH)
	c.RequireStats(t, q, 0, 0, 0, 0)
	require.Zero(t, srv.StoredMessages(t, q))

	c.RequireStats(t, other, 1, 0, 0, 0)
	require.EqualValues(t, 1, srv.StoredMessages(t, ""), "only the bystander is left")
	// The queue works after a purge.
	c.Put(t, q, e2e.Msg("after"))
	require.Len(t, c.Get(t, q), 1)
}
