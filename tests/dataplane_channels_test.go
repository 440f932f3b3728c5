package tests

import (
	"context"
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

// TestListChannels: GET /channels lists the channels that hold messages, in order, a page at a time, optionally
// those matching a channel filter; a channel disappears with its last message.
func TestListChannels(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
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
	_, tenancyID, c := testserver.StartAdmin(t)
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
	_, tenancyID, c := testserver.StartAdmin(t)
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
	_, tenancyID, c := testserver.StartAdmin(t)
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
	_, tenancyID, c := testserver.StartAdmin(t)
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
