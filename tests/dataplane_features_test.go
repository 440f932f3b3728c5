package tests

import (
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
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestLongPollWakesAcrossNodes: a put on a second node wakes a long poll waiting on the first (NOTIFY crosses
// nodes), within 200 ms.
func TestLongPollWakesAcrossNodes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	second := srv.Peer(t)
	c2 := second.AdminOf(t, tenancyID)
	q := c.NewQueue(t, tenancyID)
	<-srv.Node.Messaging().Ready() // the first node LISTENs

	for round := range 3 { // more than once: a wake-up is not a one-off
		type result struct {
			msgs []sdk.GetMessage
			at   time.Time
			err  error
		}
		done := make(chan result, 1)
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(10)})
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
		sent := c2.Put(t, q, e2e.Msg("from the second node "+strconv.Itoa(round)))
		r := <-done
		require.NoError(t, r.err)
		require.Len(t, r.msgs, 1)
		require.Equal(t, sent[0].Id, r.msgs[0].Id)
		require.Less(t, r.at.Sub(putAt), 200*time.Millisecond, "round %d", round)
		c.DeleteAll(t, q, r.msgs)
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
		require.Less(t, time.Since(putAt), 200*time.Millisecond, "a put on the new channel %s woke the long poll", channel)
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
	require.Less(t, time.Since(putAt), 300*time.Millisecond)
}

// TestLongPollTimeouts: without messages a long poll answers an empty list after timeoutInSeconds, or after the
// queue's timeoutInSeconds when the call does not say.
func TestLongPollTimeouts(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithTimeout(1))

	start := time.Now()
	resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{}) // the queue's 1 s
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	require.Empty(t, resp.JSON200.Messages)
	require.InDelta(t, 1.0, time.Since(start).Seconds(), 0.5)

	start = time.Now()
	require.Empty(t, c.Get(t, q, e2e.Timeout(2)))
	require.InDelta(t, 2.0, time.Since(start).Seconds(), 0.5)

	start = time.Now()
	require.Empty(t, c.Get(t, q, e2e.Timeout(0)))
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
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(600))

	type result struct {
		msgs []sdk.GetMessage
		at   time.Time
		err  error
	}
	results := make(chan result, waiters)
	start := time.Now()
	for range waiters {
		go func() {
			resp, err := c.GetMessagesWithResponse(context.Background(), q, &sdk.GetMessagesParams{TimeoutInSeconds: e2e.Ptr(6)})
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
		time.Sleep(10 * time.Millisecond) // sampling over a while is the subject: nothing to wait for
	}

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
	c.RequireStats(t, q, 0, messages, 0, 0)
}

// TestDelayedMessage: a message published with delayInSeconds stays invisible (and is not counted as visible or
// in flight, but as delayed) until the delay ends, then is delivered like any other.
func TestDelayedMessage(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
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
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
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
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
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
// in ferry_messages_expired).
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

	expired := srv.MetricValue(t, "ferry_messages_expired", q)
	require.EqualValues(t, 2, expired)
}

// TestPurgeTypes: NORMAL, DLQ and BOTH each delete only their messages, and only of the purged queue.
func TestPurgeTypes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
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

// TestListChannels: GET /channels lists the channels that hold messages, in order, a page at a time, optionally
// those matching a channel filter; a channel disappears with its last message.
func TestListChannels(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("default channel"), e2e.MsgOn("1", "a1"), e2e.MsgOn("2", "a2"), e2e.MsgOn("3", "a3"), e2e.MsgOn("4", "b1"),
		e2e.MsgOn("5", "c1"), e2e.MsgOn("6", "a2"), e2e.MsgOn("7", "a\nnewline"), e2e.MsgOn("8", "ä-umlaut"))

	list := func(filter string, pageSize int) (pages [][]string) {
		t.Helper()
		p := &sdk.ListChannelsParams{Limit: &pageSize}
		if filter != "" {
			p.ChannelFilter = &filter
		}
		for range 20 {
			resp, err := c.ListChannelsWithResponse(ctx, q, p)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
			require.LessOrEqual(t, len(resp.JSON200.Items), pageSize)
			pages = append(pages, resp.JSON200.Items)
			next := resp.HTTPResponse.Header.Get("opc-next-page")
			if next == "" {
				return pages
			}
			p.Page = &next
		}
		t.Fatal("pagination did not end")
		return nil
	}
	flat := func(pages [][]string) []string {
		var out []string
		for _, p := range pages {
			out = append(out, p...)
		}
		return out
	}
	all := []string{"a\nnewline", "a1", "a2", "a3", "b1", "c1", "ä-umlaut"}
	require.Equal(t, [][]string{all}, list("", 100))
	pages := list("", 2)
	require.Equal(t, all, flat(pages))
	require.Len(t, pages, 4)
	require.Equal(t, all, flat(list("", 1)))
	require.Equal(t, []string{"a\nnewline", "a1", "a2", "a3"}, flat(list("a*", 2)))
	require.Equal(t, []string{"a1"}, flat(list("a1*", 2)))
	require.Equal(t, []string{"b1"}, flat(list("b1", 2)), "an exact filter")
	require.Empty(t, flat(list("b", 2)), "an exact filter is not a prefix")
	require.Empty(t, flat(list("zz*", 2)))

	// b1's only message goes: so does the channel.
	got := c.Get(t, q, e2e.ChannelFilter("b1"))
	require.Len(t, got, 1)
	require.Contains(t, flat(list("", 100)), "b1", "a leased message still holds its channel")
	c.DeleteAll(t, q, got)
	require.Equal(t, []string{"a\nnewline", "a1", "a2", "a3", "c1", "ä-umlaut"}, flat(list("", 100)))

	bad := srv.RawJSON(t, srv.Token(t, tenancyID, "admin", "Administrators"), http.MethodGet,
		"/20210201/queues/"+q+"/channels?page=not-a-page-token%21", nil)
	e2e.RequireAPIError(t, bad.Status, bad.Body, http.StatusBadRequest, "InvalidParameter", "page")
}

// TestChannelFilterOnGet: GetMessages with an exact channel or a prefix leases only from those channels.
func TestChannelFilterOnGet(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID)
	c.Put(t, q, e2e.Msg("none"), e2e.MsgOn("a1-1", "a1"), e2e.MsgOn("a2-1", "a2"), e2e.MsgOn("ab-1", "ab"), e2e.MsgOn("b-1", "b"),
		e2e.MsgOn("a1-2", "a1"))

	contents := func(msgs []sdk.GetMessage) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
			if m.Metadata != nil && m.Metadata.ChannelId != nil {
				require.True(t, strings.HasPrefix(m.Content, *m.Metadata.ChannelId+"-"), "metadata.channelId of %s", m.Content)
			}
		}
		sort.Strings(out)
		return out
	}
	require.Equal(t, []string{"a1-1", "a1-2"}, contents(c.Get(t, q, e2e.Limit(10), e2e.ChannelFilter("a1"))))
	require.Empty(t, c.Get(t, q, e2e.Limit(10), e2e.ChannelFilter("a")), "an exact channel, not a prefix")
	require.Equal(t, []string{"a2-1", "ab-1"}, contents(c.Get(t, q, e2e.Limit(10), e2e.ChannelFilter("a*"))))
	require.Empty(t, c.Get(t, q, e2e.Limit(10), e2e.ChannelFilter("c*")))
	rest := c.Get(t, q, e2e.Limit(10))
	require.Equal(t, []string{"b-1", "none"}, contents(rest))
	for _, m := range rest {
		if m.Content == "none" {
			require.True(t, m.Metadata == nil || m.Metadata.ChannelId == nil, "the default channel has no channelId")
		}
	}
}

// TestChannelFairness: a consumer without a channel filter is not starved by one busy channel: 3 messages of a
// small channel published after 2,000 of a big one arrive within the first gets.
func TestChannelFairness(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithVisibility(600))

	for b := range 100 {
		entries := make([]sdk.PutMessagesDetailsEntry, 20)
		for i := range entries {
			entries[i] = e2e.MsgOn("big "+strconv.Itoa(b*20+i), "big")
		}
		c.Put(t, q, entries...)
	}
	c.Put(t, q, e2e.MsgOn("small 1", "small"), e2e.MsgOn("small 2", "small"), e2e.MsgOn("small 3", "small"))

	require.EqualValues(t, 2000, c.StatsOf(t, q, "big").Queue.VisibleMessages)
	require.EqualValues(t, 3, c.StatsOf(t, q, "small").Queue.VisibleMessages)
	require.EqualValues(t, 0, c.StatsOf(t, q, "nothing").Queue.VisibleMessages)
	require.EqualValues(t, 2003, c.StatsOf(t, q, "").Queue.VisibleMessages)

	small := 0
	for range 3 {
		for _, m := range c.Get(t, q, e2e.Limit(10)) {
			if strings.HasPrefix(m.Content, "small") {
				small++
			}
		}
	}
	require.Equal(t, 3, small, "the small channel's messages within the first 3 gets of 10")
	st := c.StatsOf(t, q, "small")
	require.EqualValues(t, [2]int64{0, 3}, [2]int64{st.Queue.VisibleMessages, st.Queue.InFlightMessages})
	require.EqualValues(t, len("small 1")*3, st.Queue.SizeInBytes)
}

// TestMaxSizeInBytes: a queue filled past maxSizeInBytes answers 429 TooManyRequests with retry-after (the size
// is measured every few seconds, so the limit holds within a refresh); consuming makes room again.
func TestMaxSizeInBytes(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithMaxSize(1<<20), e2e.WithVisibility(600))
	big := strings.Repeat("x", 200<<10)
	ctx := context.Background()

	var full *sdk.PutMessagesResponse
	require.Eventually(t, func() bool {
		resp, err := c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{e2e.Msg(big)}})
		if err != nil || resp.StatusCode() == http.StatusOK {
			return false
		}
		full = resp
		return true
	}, 15*time.Second, 50*time.Millisecond)
	e2e.RequireAPIError(t, full.StatusCode(), full.Body, http.StatusTooManyRequests, "TooManyRequests", "maxSizeInBytes")
	retryAfter, err := strconv.Atoi(full.HTTPResponse.Header.Get("retry-after"))
	require.NoError(t, err, "retry-after header")
	require.Positive(t, retryAfter)
	size := c.Stats(t, q).Queue.SizeInBytes
	require.Greater(t, size, int64(1<<20)-int64(len(big)), "the queue was (nearly) full")
	require.Less(t, size, int64(4<<20), "the limit holds within a few refreshes")
	// A rejected put stored nothing.
	require.Equal(t, size, c.Stats(t, q).Queue.SizeInBytes)

	for {
		got := c.Get(t, q, e2e.Limit(32))
		if len(got) == 0 {
			break
		}
		c.DeleteAll(t, q, got)
	}
	require.Eventually(t, func() bool {
		resp, err := c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: []sdk.PutMessagesDetailsEntry{e2e.Msg(big)}})
		return err == nil && resp.StatusCode() == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, "consuming makes room")
}

// TestChannelConsumptionLimit: with channelConsumptionLimit 10 %, a channel holding more than a tenth of
// maxSizeInBytes gets 429 while another channel still publishes. Concurrent puts check the limit safely.
func TestChannelConsumptionLimit(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithMaxSize(1<<20), e2e.WithChannelLimit(10))
	ctx := context.Background()

	// Concurrent small puts on several channels (the size bookkeeping is shared between them).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				_, _ = c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{
					Messages: []sdk.PutMessagesDetailsEntry{e2e.MsgOn("small", "ch"+strconv.Itoa((g+i)%3))},
				})
			}
		}()
	}
	wg.Wait()

	chunk := strings.Repeat("h", 40<<10) // the share is 104857 bytes: the third chunk overflows it
	var hog *sdk.PutMessagesResponse
	require.Eventually(t, func() bool {
		resp, err := c.PutMessagesWithResponse(ctx, q, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{
			Messages: []sdk.PutMessagesDetailsEntry{e2e.MsgOn(chunk, "hog")},
		})
		if err != nil || resp.StatusCode() == http.StatusOK {
			return false
		}
		hog = resp
		return true
	}, 15*time.Second, 50*time.Millisecond)
	e2e.RequireAPIError(t, hog.StatusCode(), hog.Body, http.StatusTooManyRequests, "TooManyRequests", "hog", "channelConsumptionLimit")
	require.NotEmpty(t, hog.HTTPResponse.Header.Get("retry-after"))
	hogBytes := c.StatsOf(t, q, "hog").Queue.SizeInBytes
	require.Greater(t, hogBytes, int64(104857-len(chunk)))

	// The other channels are not affected.
	c.Put(t, q, e2e.MsgOn(chunk, "other"))
	require.EqualValues(t, len(chunk), c.StatsOf(t, q, "other").Queue.SizeInBytes)
	require.Equal(t, hogBytes, c.StatsOf(t, q, "hog").Queue.SizeInBytes, "the rejected puts stored nothing")
}

// TestUpdateMessagesPerEntryErrors: each entry of updateMessages succeeds or fails on its own (valid, garbage,
// stale and deleted receipts), counted in clientFailedCount; a DLQ receipt without dlq=true fails its entry.
func TestUpdateMessagesPerEntryErrors(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(2))
	ctx := context.Background()
	c.Put(t, q, e2e.Msg("valid"), e2e.Msg("stale"), e2e.Msg("deleted"))

	valid := c.Get(t, q, e2e.Visibility(60))[0]
	staleFirst := c.Get(t, q, e2e.Visibility(1))[0]
	deleted := c.Get(t, q, e2e.Visibility(60))[0]
	require.Equal(t, []string{"valid", "stale", "deleted"}, []string{valid.Content, staleFirst.Content, deleted.Content})
	c.DeleteAll(t, q, []sdk.GetMessage{deleted})
	var staleNow sdk.GetMessage
	require.Eventually(t, func() bool {
		resp, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{VisibilityInSeconds: e2e.Ptr(60), TimeoutInSeconds: e2e.Ptr(0)})
		if err != nil || resp.JSON200 == nil || len(resp.JSON200.Messages) == 0 {
			return false
		}
		staleNow = resp.JSON200.Messages[0]
		return true
	}, 5*time.Second, 50*time.Millisecond, "the short lease ends and the message is leased again")
	require.Equal(t, staleFirst.Id, staleNow.Id)

	before := time.Now()
	resp, err := c.UpdateMessagesWithResponse(ctx, q, &sdk.UpdateMessagesParams{}, sdk.UpdateMessagesDetails{Entries: []sdk.UpdateMessagesDetailsEntry{
		{Receipt: valid.Receipt, VisibilityInSeconds: 300},
		{Receipt: "garbage", VisibilityInSeconds: 300},
		{Receipt: staleFirst.Receipt, VisibilityInSeconds: 300},
		{Receipt: deleted.Receipt, VisibilityInSeconds: 300},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	r := resp.JSON200
	require.Equal(t, 3, r.ClientFailedCount)
	require.Zero(t, r.ServerFailedCount)
	require.Len(t, r.Entries, 4)
	require.Nil(t, r.Entries[0].ErrorCode)
	require.Equal(t, valid.Id, *r.Entries[0].Id)
	require.WithinDuration(t, before.Add(300*time.Second), *r.Entries[0].VisibleAfter, 5*time.Second)
	wantCodes := []string{"InvalidParameter", "Conflict", "NotAuthorizedOrNotFound"}
	for i, code := range wantCodes {
		e := r.Entries[i+1]
		require.NotNil(t, e.ErrorCode, "entry %d", i+1)
		require.Equal(t, code, *e.ErrorCode, "entry %d", i+1)
		require.NotEmpty(t, *e.ErrorMessage)
		require.Nil(t, e.Id)
		require.Nil(t, e.VisibleAfter)
	}
	// The stale receipt changed nothing: the current lease keeps its end; both leases hold.
	c.RequireStats(t, q, 0, 2, 0, 0)
	upd, err := c.UpdateMessageWithResponse(ctx, q, staleNow.Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, upd.StatusCode(), string(upd.Body))

	// A DLQ receipt sent to the queue (no dlq=true) fails its entry and deletes nothing.
	require.Empty(t, c.Get(t, q), "the released message exceeded its delivery count: it moved to the DLQ")
	dead := c.Get(t, q, e2e.FromDLQ())
	require.Len(t, dead, 1)
	del, err := c.DeleteMessagesWithResponse(ctx, q, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{
		{Receipt: dead[0].Receipt}, {Receipt: valid.Receipt},
	}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, del.StatusCode(), string(del.Body))
	require.Equal(t, 1, del.JSON200.ClientFailedCount)
	require.Equal(t, "InvalidParameter", *del.JSON200.Entries[0].ErrorCode)
	require.Contains(t, *del.JSON200.Entries[0].ErrorMessage, "DLQ")
	require.Nil(t, del.JSON200.Entries[1].ErrorCode)
	c.RequireStats(t, q, 0, 0, 0, 1)
	c.DeleteAll(t, q, dead, e2e.FromDLQ())
	c.RequireStats(t, q, 0, 0, 0, 0)
}

// TestReceiptScope: a receipt works only on the queue that issued it, and a tampered receipt is rejected.
func TestReceiptScope(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	tenancyID, c := srv.Admin(t, "dp")
	a := c.NewQueue(t, tenancyID)
	b := c.NewQueue(t, tenancyID)
	ctx := context.Background()
	c.Put(t, a, e2e.Msg("on a"))
	c.Put(t, b, e2e.Msg("on b"))
	m := c.Get(t, a, e2e.Visibility(60))[0]
	onB := c.Get(t, b, e2e.Visibility(60))[0]
	require.Equal(t, m.Id+1, onB.Id, "ids are global, so a receipt for a on b would name b's message if unscoped")

	del, err := c.DeleteMessageWithResponse(ctx, b, m.Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	e2e.RequireAPIError(t, del.StatusCode(), del.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	batch, err := c.DeleteMessagesWithResponse(ctx, b, &sdk.DeleteMessagesParams{}, sdk.DeleteMessagesDetails{
		Entries: []sdk.DeleteMessagesDetailsEntry{{Receipt: m.Receipt}},
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, batch.StatusCode())
	require.Equal(t, 1, batch.JSON200.ClientFailedCount)
	upd, err := c.UpdateMessageWithResponse(ctx, b, m.Receipt, &sdk.UpdateMessageParams{}, sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	require.NoError(t, err)
	e2e.RequireAPIError(t, upd.StatusCode(), upd.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	c.RequireStats(t, a, 0, 1, 0, 0)
	c.RequireStats(t, b, 0, 1, 0, 0)

	// Change any one character of the receipt to its base64url neighbour (value xor 1): never accepted, not even
	// in the last character, whose lowest bits carry no data.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(m.Receipt) {
		tampered := []byte(m.Receipt)
		v := strings.IndexByte(alphabet, tampered[i])
		require.GreaterOrEqual(t, v, 0, "receipts are base64url: %q", m.Receipt)
		tampered[i] = alphabet[v^1]
		del, err := c.DeleteMessageWithResponse(ctx, a, string(tampered), &sdk.DeleteMessageParams{})
		require.NoError(t, err)
		e2e.RequireAPIError(t, del.StatusCode(), del.Body, http.StatusBadRequest, "InvalidParameter", "receipt")
	}
	c.RequireStats(t, a, 0, 1, 0, 0)

	del, err = c.DeleteMessageWithResponse(ctx, a, m.Receipt, &sdk.DeleteMessageParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
	c.RequireStats(t, a, 0, 0, 0, 0)
}
