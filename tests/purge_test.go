package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of a purge's scope, as OCI's PurgeQueueDetails states it: channelIds, and consumerGroupId on a
// queue with the CONSUMER_GROUPS capability (absent = the primary group, a group, or "all"), with purgeType
// NORMAL, DLQ or BOTH within it. TestPurgeTypes (dataplane_lifetime_test.go) covers the purge types of a plain
// queue.

// deadLetter moves one fresh message ("dead") of every listed group to its DLQ (the queue has a DLQ after one
// delivery, and its queues are empty): a delivery, then the lease that dead-letters it.
func deadLetter(t *testing.T, c *e2e.Client, q string, refs ...string) {
	t.Helper()
	c.Put(t, q, e2e.Msg("dead"))
	for _, ref := range refs {
		require.Len(t, c.Get(t, q, e2e.OfGroup(ref), e2e.Visibility(0)), 1, ref)
		require.Empty(t, c.Get(t, q, e2e.OfGroup(ref)), "%s: the second lease moves the message to the DLQ", ref)
	}
}

// groupCounts is {queue, DLQ} visible messages of each group.
func groupCounts(t *testing.T, c *e2e.Client, q string, refs ...string) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	for _, ref := range refs {
		st := c.GroupStats(t, q, ref)
		out[ref] = [2]int64{st.Queue.VisibleMessages, st.Dlq.VisibleMessages}
	}
	return out
}

// TestPurgeConsumerGroups: on a queue with consumer groups, a purge without consumerGroupId purges the primary
// group only; one with a group's OCID or displayName that group; "all" every group — each with NORMAL, DLQ or
// BOTH.
func TestPurgeConsumerGroups(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	refs := []string{"primary", "a", "b"}
	full := [2]int64{1, 1}
	cases := []struct {
		name      string
		purgeType sdk.PurgeType
		group     string // "" = absent; "@b" = group b's OCID, "@queue" the queue's
		want      map[string][2]int64
	}{
		{"primary NORMAL", sdk.PurgeTypeNORMAL, "", map[string][2]int64{"primary": {0, 1}, "a": full, "b": full}},
		{"primary DLQ", sdk.PurgeTypeDLQ, "", map[string][2]int64{"primary": {1, 0}, "a": full, "b": full}},
		{"primary BOTH", sdk.PurgeTypeBOTH, "", map[string][2]int64{"primary": {0, 0}, "a": full, "b": full}},
		{"primary by the queue's OCID", sdk.PurgeTypeNORMAL, "@queue", map[string][2]int64{"primary": {0, 1}, "a": full, "b": full}},
		{"a by name DLQ", sdk.PurgeTypeDLQ, "A", map[string][2]int64{"primary": full, "a": {1, 0}, "b": full}},
		{"b by OCID BOTH", sdk.PurgeTypeBOTH, "@b", map[string][2]int64{"primary": full, "a": full, "b": {0, 0}}},
		{"b by OCID NORMAL", sdk.PurgeTypeNORMAL, "@b", map[string][2]int64{"primary": full, "a": full, "b": {0, 1}}},
		{"all NORMAL", sdk.PurgeTypeNORMAL, "all", map[string][2]int64{"primary": {0, 1}, "a": {0, 1}, "b": {0, 1}}},
		{"all DLQ", sdk.PurgeTypeDLQ, "all", map[string][2]int64{"primary": {1, 0}, "a": {1, 0}, "b": {1, 0}}},
		{"all BOTH", sdk.PurgeTypeBOTH, "all", map[string][2]int64{"primary": {0, 0}, "a": {0, 0}, "b": {0, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true), e2e.WithDLQ(1))
			c.NewGroup(t, q, "a", "")
			b := c.NewGroup(t, q, "b", "")
			deadLetter(t, c, q, refs...)
			c.Put(t, q, e2e.Msg("alive"))
			require.Equal(t, map[string][2]int64{"primary": full, "a": full, "b": full}, groupCounts(t, c, q, refs...))

			var opts []e2e.PurgeOption
			switch tc.group {
			case "":
			case "@b":
				opts = append(opts, e2e.PurgeGroup(b.Id))
			case "@queue":
				opts = append(opts, e2e.PurgeGroup(q))
			default:
				opts = append(opts, e2e.PurgeGroup(tc.group))
			}
			srv.Purge(t, c, q, tc.purgeType, opts...)
			require.Equal(t, tc.want, groupCounts(t, c, q, refs...))
		})
	}
}

// TestPurgeChannels: channelIds limits a purge to those channels (the empty id is the default channel), of the
// queue, the DLQ or both.
func TestPurgeChannels(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithDLQ(1))
	// A dead letter on channels a and b, then a message on a, b and the default channel.
	c.Put(t, q, e2e.MsgOn("dead a", "a"), e2e.MsgOn("dead b", "b"))
	require.Len(t, c.Get(t, q, e2e.Limit(2), e2e.Visibility(0)), 2)
	require.Empty(t, c.Get(t, q, e2e.Limit(2)), "both moved to the DLQ")
	c.Put(t, q, e2e.MsgOn("a1", "a"), e2e.MsgOn("b1", "b"), e2e.Msg("default"))
	counts := func() map[string][2]int64 { // {queue, DLQ} visible messages of each channel
		t.Helper()
		out := map[string][2]int64{}
		for _, ch := range []string{"a", "b"} {
			st := c.StatsOf(t, q, ch)
			out[ch] = [2]int64{st.Queue.VisibleMessages, st.Dlq.VisibleMessages}
		}
		st := c.Stats(t, q)
		out["all"] = [2]int64{st.Queue.VisibleMessages, st.Dlq.VisibleMessages}
		return out
	}
	require.Equal(t, map[string][2]int64{"a": {1, 1}, "b": {1, 1}, "all": {3, 2}}, counts())

	srv.Purge(t, c, q, sdk.PurgeTypeNORMAL, e2e.PurgeChannels("a", ""))
	require.Equal(t, map[string][2]int64{"a": {0, 1}, "b": {1, 1}, "all": {1, 2}}, counts(), "a and the default channel's queue")
	srv.Purge(t, c, q, sdk.PurgeTypeDLQ, e2e.PurgeChannels("a"))
	require.Equal(t, map[string][2]int64{"a": {0, 0}, "b": {1, 1}, "all": {1, 1}}, counts())
	srv.Purge(t, c, q, sdk.PurgeTypeBOTH, e2e.PurgeChannels("b", "c"))
	require.Equal(t, map[string][2]int64{"a": {0, 0}, "b": {0, 0}, "all": {0, 0}}, counts())
	require.Zero(t, srv.StoredMessages(t, q))

	// With consumer groups, the channels of the group purged.
	g := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	c.NewGroup(t, g, "other", "")
	c.Put(t, g, e2e.MsgOn("a1", "a"), e2e.MsgOn("b1", "b"))
	srv.Purge(t, c, g, sdk.PurgeTypeBOTH, e2e.PurgeChannels("a"), e2e.PurgeGroup("other"))
	require.Equal(t, []string{"b1"}, c.Drain(t, g, e2e.OfGroup("other")))
	require.Equal(t, []string{"a1", "b1"}, c.Drain(t, g), "the primary group keeps both")
}

// TestPurgeBadScope: a consumerGroupId that is not a group of the queue answers 404 naming it when the purge is
// requested (no work request is started); bad channelIds answer 400. On a queue without consumer groups the
// queue's OCID, "primary" and "all" purge the queue.
func TestPurgeBadScope(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	gone := c.NewGroup(t, q, "gone", "")
	del, err := c.DeleteConsumerGroupWithResponse(ctx, gone.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	other := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	elsewhere := c.NewGroup(t, other, "elsewhere", "")
	plain := c.NewQueue(t, tenancyID)

	purge := func(queueID string, d sdk.PurgeQueueDetails) *sdk.PurgeQueueResponse {
		t.Helper()
		resp, err := c.PurgeQueueWithResponse(ctx, queueID, &sdk.PurgeQueueParams{}, d)
		require.NoError(t, err)
		return resp
	}
	before := storedWorkRequests(t, srv)
	for _, tc := range []struct{ queue, group string }{
		{q, "nope"}, {q, gone.Id}, {q, "gone"}, {q, elsewhere.Id}, {q, other}, {plain, elsewhere.Id}, {plain, "elsewhere"},
	} {
		resp := purge(tc.queue, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH, ConsumerGroupId: &tc.group})
		e2e.RequireError(t, resp, nil, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId", tc.group)
	}
	require.Equal(t, before, storedWorkRequests(t, srv), "a refused purge starts no work request")

	for name, d := range map[string]sdk.PurgeQueueDetails{
		"no channels":    {PurgeType: sdk.PurgeTypeBOTH, ChannelIds: &[]string{}},
		"channel *":      {PurgeType: sdk.PurgeTypeBOTH, ChannelIds: &[]string{"a*"}},
		"101 channels":   {PurgeType: sdk.PurgeTypeBOTH, ChannelIds: e2e.Ptr(strings.Split(strings.Repeat("c,", 100)+"c", ","))},
		"long channel":   {PurgeType: sdk.PurgeTypeBOTH, ChannelIds: &[]string{strings.Repeat("c", 257)}},
		"empty group id": {PurgeType: sdk.PurgeTypeBOTH, ConsumerGroupId: e2e.Ptr("")},
	} {
		resp := purge(q, d)
		field := map[bool]string{true: "consumerGroupId", false: "channelIds"}[strings.Contains(name, "group")]
		e2e.RequireError(t, resp, nil, http.StatusBadRequest, "InvalidParameter", field)
	}

	// Without the capability, the primary group is the queue.
	for _, ref := range []string{plain, "primary", "all"} {
		c.Put(t, plain, e2e.Msg(fmt.Sprint("for ", ref)))
		srv.Purge(t, c, plain, sdk.PurgeTypeBOTH, e2e.PurgeGroup(ref))
		require.Zero(t, srv.StoredMessages(t, plain), ref)
	}
}

// storedWorkRequests counts the work requests of the test's database.
func storedWorkRequests(t *testing.T, srv *testserver.Server) int {
	t.Helper()
	var n int
	require.NoError(t, srv.Pool.QueryRow(context.Background(), `SELECT count(*) FROM work_requests`).Scan(&n))
	return n
}
