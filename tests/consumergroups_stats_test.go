package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestConsumerGroupStatsAndScopes: per-group stats, consumerGroupId on stats, channels, delete and update, and a
// receipt that only works in the group it was issued for.
func TestConsumerGroupStatsAndScopes(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	ga := c.NewGroup(t, q, "a", `:g = "a"`)
	gb := c.NewGroup(t, q, "b", "")
	off := c.NewGroup(t, q, "off", "", e2e.GroupDisabled())

	aOnCh := e2e.WithAttrs("a on ch-a", map[string]any{"g": "a"})
	aOnCh.Metadata = &sdk.MessageMetadata{ChannelId: e2e.Ptr("ch-a")}
	res := c.Put(t, q, aOnCh, e2e.WithAttrs("a", map[string]any{"g": "a"}), e2e.MsgOn("plain on ch-b", "ch-b"))
	require.Equal(t, []int{3, 3, 2}, []int{*res[0].ConsumerGroups, *res[1].ConsumerGroups, *res[2].ConsumerGroups})

	st := c.Stats(t, q)
	require.Equal(t, int64(3), st.Queue.VisibleMessages, "without consumerGroupId: the primary group")
	require.Equal(t, e2e.Ptr(int64(0)), st.DiscardedMessages)
	require.NotNil(t, st.ConsumerGroups)
	byID := map[string]sdk.ConsumerGroupStats{}
	for _, g := range *st.ConsumerGroups {
		byID[g.ConsumerGroupId] = g
	}
	require.Len(t, byID, 4)
	require.Equal(t, "primary", byID[q].DisplayName)
	require.Equal(t, int64(3), byID[q].Queue.VisibleMessages)
	require.Equal(t, int64(2), byID[ga.Id].Queue.VisibleMessages)
	require.Equal(t, "a", byID[ga.Id].DisplayName)
	require.True(t, byID[ga.Id].IsEnabled)
	require.Equal(t, int64(3), byID[gb.Id].Queue.VisibleMessages)
	require.Zero(t, byID[off.Id].Queue.VisibleMessages)
	require.False(t, byID[off.Id].IsEnabled)
	require.Positive(t, byID[ga.Id].Queue.SizeInBytes)
	require.Less(t, byID[ga.Id].Queue.SizeInBytes, byID[gb.Id].Queue.SizeInBytes)

	require.Equal(t, int64(2), c.GroupStats(t, q, "a").Queue.VisibleMessages)
	require.Equal(t, int64(2), c.GroupStats(t, q, ga.Id).Queue.VisibleMessages)
	require.Equal(t, int64(3), c.GroupStats(t, q, q).Queue.VisibleMessages, "the primary group by the queue's OCID")
	require.Equal(t, int64(3), c.GroupStats(t, q, "primary").Queue.VisibleMessages)
	chStats, err := c.GetStatsWithResponse(ctx, q, &sdk.GetStatsParams{ConsumerGroupId: e2e.Ptr("a"), ChannelId: e2e.Ptr("ch-a")})
	e2e.RequireStatus(t, chStats, err, http.StatusOK)
	require.Equal(t, int64(1), chStats.JSON200.Queue.VisibleMessages)
	for _, g := range *chStats.JSON200.ConsumerGroups {
		if g.ConsumerGroupId == gb.Id {
			require.Equal(t, int64(1), g.Queue.VisibleMessages, "per-group stats honour channelId")
		}
	}

	// A queue without the capability has no consumerGroups in its stats.
	plain := c.NewQueue(t, tenancyID)
	require.Nil(t, c.Stats(t, plain).ConsumerGroups)

	// Channels per group.
	channels := func(ref string) []string {
		resp, err := c.ListChannelsWithResponse(ctx, q, &sdk.ListChannelsParams{ConsumerGroupId: &ref})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		return resp.JSON200.Items
	}
	require.Equal(t, []string{"ch-a"}, channels("a"))
	require.Equal(t, []string{"ch-a", "ch-b"}, channels(gb.Id))
	require.Empty(t, channels("off"))

	// Unknown groups are 404s everywhere.
	for _, ref := range []string{"nope", "ocid1.consumergroup.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		g, err := c.GetMessagesWithResponse(ctx, q, &sdk.GetMessagesParams{ConsumerGroupId: &ref, TimeoutInSeconds: e2e.Ptr(0)})
		e2e.RequireError(t, g, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
		s, err := c.GetStatsWithResponse(ctx, q, &sdk.GetStatsParams{ConsumerGroupId: &ref})
		e2e.RequireError(t, s, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
		ch, err := c.ListChannelsWithResponse(ctx, q, &sdk.ListChannelsParams{ConsumerGroupId: &ref})
		e2e.RequireError(t, ch, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
		rd, err := c.RedriveMessagesWithResponse(ctx, q, &sdk.RedriveMessagesParams{}, sdk.RedriveMessagesDetails{ConsumerGroupId: &ref})
		e2e.RequireError(t, rd, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
	}

	// A receipt works only with the group it was issued for.
	fromA := c.Get(t, q, e2e.OfGroup("a"), e2e.Limit(2), e2e.Visibility(60))
	fromB := c.Get(t, q, e2e.OfGroup("b"), e2e.Limit(1), e2e.Visibility(60))
	require.Len(t, fromA, 2)
	require.Len(t, fromB, 1)
	require.Equal(t, int64(1), c.GroupStats(t, q, "b").Queue.InFlightMessages)
	require.Equal(t, int64(3), c.Stats(t, q).Queue.VisibleMessages, "leases in a and b do not touch the primary group")

	del, err := c.DeleteMessagesWithResponse(ctx, q, &sdk.DeleteMessagesParams{ConsumerGroupId: e2e.Ptr("b")},
		sdk.DeleteMessagesDetails{Entries: []sdk.DeleteMessagesDetailsEntry{{Receipt: fromA[0].Receipt}, {Receipt: fromB[0].Receipt}}})
	e2e.RequireStatus(t, del, err, http.StatusOK)
	require.Equal(t, 1, del.JSON200.ClientFailures)
	require.Equal(t, e2e.Ptr(http.StatusBadRequest), del.JSON200.Entries[0].ErrorCode)
	require.Equal(t, e2e.Ptr("InvalidParameter"), del.JSON200.Entries[0].Code)
	require.Nil(t, del.JSON200.Entries[1].ErrorCode)
	one, err := c.DeleteMessageWithResponse(ctx, q, fromA[0].Receipt, &sdk.DeleteMessageParams{})
	e2e.RequireError(t, one, err, http.StatusBadRequest, "InvalidParameter", "receipt")
	one, err = c.DeleteMessageWithResponse(ctx, q, fromA[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: e2e.Ptr(gb.Id)})
	e2e.RequireError(t, one, err, http.StatusBadRequest, "InvalidParameter", "receipt")
	upd, err := c.UpdateMessagesWithResponse(ctx, q, &sdk.UpdateMessagesParams{ConsumerGroupId: e2e.Ptr("primary")},
		sdk.UpdateMessagesDetails{Entries: []sdk.UpdateMessagesDetailsEntry{{Receipt: fromA[1].Receipt, VisibilityInSeconds: 0}}})
	e2e.RequireStatus(t, upd, err, http.StatusOK)
	require.Equal(t, 1, upd.JSON200.ClientFailures)
	updOne, err := c.UpdateMessageWithResponse(ctx, q, fromA[1].Receipt, &sdk.UpdateMessageParams{ConsumerGroupId: e2e.Ptr("b")},
		sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	e2e.RequireError(t, updOne, err, http.StatusBadRequest, "InvalidParameter", "receipt")
	require.Equal(t, int64(2), c.GroupStats(t, q, "a").Queue.InFlightMessages, "the failed entries changed nothing")

	// In its own group (by OCID or by name) the receipt works.
	updOne, err = c.UpdateMessageWithResponse(ctx, q, fromA[1].Receipt, &sdk.UpdateMessageParams{ConsumerGroupId: e2e.Ptr(ga.Id)},
		sdk.UpdateMessageDetails{VisibilityInSeconds: 0})
	e2e.RequireStatus(t, updOne, err, http.StatusOK)
	one, err = c.DeleteMessageWithResponse(ctx, q, fromA[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: e2e.Ptr("a")})
	e2e.RequireStatus(t, one, err, http.StatusNoContent)
	sa := c.GroupStats(t, q, "a")
	require.Equal(t, [2]int64{1, 0}, [2]int64{sa.Queue.VisibleMessages, sa.Queue.InFlightMessages})
	sb := c.GroupStats(t, q, "b")
	require.Equal(t, [2]int64{2, 0}, [2]int64{sb.Queue.VisibleMessages, sb.Queue.InFlightMessages})
	require.Equal(t, int64(3), c.Stats(t, q).Queue.VisibleMessages)

	// Deleting a group drops its stats entry; the maintainer removes its messages.
	del2, err := c.DeleteConsumerGroupWithResponse(ctx, gb.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, del2, err, http.StatusAccepted)
	srv.RunMaintainer(t)
	var left int64
	require.NoError(t, srv.Pool.QueryRow(ctx, `SELECT count(*) FROM consumer_groups g
		JOIN queues q ON q.id = g.queue_id JOIN messages m ON m.queue_no = q.no AND m.group_no = g.group_no WHERE g.id = $1`, gb.Id).Scan(&left))
	require.Zero(t, left, "the deleted group's messages are gone")
	st = c.Stats(t, q)
	var listed []string
	for _, g := range *st.ConsumerGroups {
		listed = append(listed, g.DisplayName)
	}
	slices.Sort(listed)
	require.Equal(t, []string{"a", "off", "primary"}, listed)
	gone, err := c.GetStatsWithResponse(ctx, q, &sdk.GetStatsParams{ConsumerGroupId: e2e.Ptr("b")})
	e2e.RequireError(t, gone, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

// TestConsumerGroupConcurrentCreates: creates racing on one queue all succeed with distinct groups, and creates
// racing for one name give exactly one group and 409s (never a 500).
func TestConsumerGroupConcurrentCreates(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	const n = 12
	statuses := make([]int, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			name := "same"
			if i < n {
				name = fmt.Sprintf("g%02d", i)
			}
			resp, err := c.CreateConsumerGroupWithResponse(context.Background(), &sdk.CreateConsumerGroupParams{},
				sdk.CreateConsumerGroupDetails{QueueId: q, DisplayName: name})
			if err == nil {
				statuses[i] = resp.StatusCode()
			}
		})
	}
	wg.Wait()
	require.Equal(t, slices.Repeat([]int{http.StatusAccepted}, n), statuses[:n])
	same := statuses[n:]
	slices.Sort(same)
	require.Equal(t, append([]int{http.StatusAccepted}, slices.Repeat([]int{http.StatusConflict}, n-1)...), same)

	items, _ := c.Groups(t, q, sdk.ListConsumerGroupsParams{Limit: e2e.Ptr(100)})
	require.Len(t, items, n+2, "the primary group, the %d groups and one 'same'", n)
	var distinct int
	require.NoError(t, srv.Pool.QueryRow(context.Background(),
		`SELECT count(DISTINCT group_no) FROM consumer_groups WHERE queue_id = $1`, q).Scan(&distinct))
	require.Equal(t, n+2, distinct)
	require.Equal(t, []int{n + 1}, e2e.GroupCounts(c.Put(t, q, e2e.Msg("to every group"))))
}

// TestConsumerGroupsOfDeletedQueue: a queue's groups cannot be changed while it is being deleted, and they are gone
// (like deleted groups) once it is deleted.
func TestConsumerGroupsOfDeletedQueue(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	g := c.NewGroup(t, q, "g", "")
	c.Put(t, q, e2e.Msg("m"))

	// While the queue is DELETING (held there: the node's executor would finish a real delete at once), its groups
	// do not change.
	_, err := srv.Pool.Exec(ctx, `UPDATE queues SET lifecycle_state = 'DELETING' WHERE id = $1`, q)
	require.NoError(t, err)
	upd, err := c.UpdateConsumerGroupWithResponse(ctx, g.Id, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
	e2e.RequireError(t, upd, err, http.StatusConflict, "IncorrectState", "DELETING")
	del, err := c.DeleteConsumerGroupWithResponse(ctx, g.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireError(t, del, err, http.StatusConflict, "IncorrectState", "DELETING")
	create, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{QueueId: q, DisplayName: "h"})
	e2e.RequireError(t, create, err, http.StatusConflict, "IncorrectState", "DELETING")
	_, err = srv.Pool.Exec(ctx, `UPDATE queues SET lifecycle_state = 'ACTIVE' WHERE id = $1`, q)
	require.NoError(t, err)

	resp, err := c.DeleteQueueWithResponse(ctx, q, &sdk.DeleteQueueParams{})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)

	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, srv.WaitWorkRequest(t, c, resp.HTTPResponse.Header.Get("opc-work-request-id")).Status)
	for _, id := range []string{g.Id, q} {
		got, err := c.GetConsumerGroupWithResponse(ctx, id, &sdk.GetConsumerGroupParams{})
		e2e.RequireError(t, got, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
		upd, err := c.UpdateConsumerGroupWithResponse(ctx, id, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
		e2e.RequireError(t, upd, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	}
	items, _ := c.Groups(t, q, sdk.ListConsumerGroupsParams{})
	require.Empty(t, items, "a deleted queue has no live groups")
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)})
	require.Len(t, items, 2)
	require.Zero(t, srv.StoredMessages(t, q))
}
