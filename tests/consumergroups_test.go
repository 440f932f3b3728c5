package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// End-to-end tests of consumer groups (DESIGN sections 3, 6, 7): CRUD through the SDK, the primary group, the
// CONSUMER_GROUPS capability, tenant isolation, the filter dry run, and the consumerGroupId parameter of the data
// plane. Fanout itself (who receives what) is in fanout_test.go.

// groupNames lists the display names of groups in order.
func groupNames(items []sdk.ConsumerGroup) []string {
	return e2e.Map(items, func(g sdk.ConsumerGroup) string { return g.DisplayName })
}

// TestConsumerGroupCRUD: create (with filter validation), get, list (filters, sort, pagination), the retry token,
// update of every field with etags, delete, unique names per queue, and the capability check.
func TestConsumerGroupCRUD(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true), e2e.WithDLQ(4))

	// The primary group exists with the capability: OCID = the queue's, no filter, enabled.
	primary, err := c.GetConsumerGroupWithResponse(ctx, q, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, primary, err, http.StatusOK)
	p := primary.JSON200
	require.Equal(t, q, p.Id)
	require.Equal(t, q, p.QueueId)
	require.Equal(t, tenancyID, p.CompartmentId)
	require.True(t, p.IsPrimary)
	require.True(t, p.IsEnabled)
	require.Empty(t, p.Filter)
	require.Nil(t, p.DeadLetterQueueDeliveryCount, "the primary group inherits the queue's dead-letter count")
	require.Equal(t, sdk.LifecycleStateACTIVE, p.LifecycleState)
	require.NotEmpty(t, primary.HTTPResponse.Header.Get("etag"))

	// A bad filter is a 400 that names the field and the column.
	bad, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: q, DisplayName: "bad", Filter: e2e.Ptr(`:team = "exec" AND`),
	})
	e2e.RequireError(t, bad, err, http.StatusBadRequest, "InvalidParameter", "filter: column 19: expected an expression after 'AND'")

	exec := c.NewGroup(t, q, "exec-expenses", `:team = "exec-expenses"`, e2e.GroupDLQ(3))
	require.True(t, strings.HasPrefix(exec.Id, "ocid1.consumergroup."), exec.Id)
	require.Equal(t, q, exec.QueueId)
	require.Equal(t, tenancyID, exec.CompartmentId)
	require.Equal(t, `:team = "exec-expenses"`, exec.Filter)
	require.True(t, exec.IsEnabled)
	require.False(t, exec.IsPrimary)
	require.Equal(t, e2e.Ptr(3), exec.DeadLetterQueueDeliveryCount)
	require.Equal(t, sdk.LifecycleStateACTIVE, exec.LifecycleState)
	require.Equal(t, exec.TimeCreated, exec.TimeUpdated)
	audit := c.NewGroup(t, q, "audit", "", e2e.GroupDisabled())
	require.False(t, audit.IsEnabled)
	require.Empty(t, audit.Filter)
	require.Nil(t, audit.DeadLetterQueueDeliveryCount)

	// displayName is unique per queue, case-insensitively; the same name on another queue is fine.
	dup, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: q, DisplayName: "EXEC-Expenses",
	})
	e2e.RequireError(t, dup, err, http.StatusConflict, "Conflict", "displayName")
	q2 := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	other := c.NewGroup(t, q2, "exec-expenses", "")
	require.Equal(t, q2, other.QueueId)
	// Nor can a group take the primary group's name.
	dupPrimary, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: q, DisplayName: "Primary",
	})
	e2e.RequireError(t, dupPrimary, err, http.StatusConflict, "Conflict", "displayName")

	// A queue without the capability takes no groups (409); a missing queue is a 404.
	plain := c.NewQueue(t, tenancyID)
	noCap, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: plain, DisplayName: "g",
	})
	e2e.RequireError(t, noCap, err, http.StatusConflict, "IncorrectState", "CONSUMER_GROUPS")
	missing, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: "ocid1.queue.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", DisplayName: "g",
	})
	e2e.RequireError(t, missing, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// Get.
	got, err := c.GetConsumerGroupWithResponse(ctx, exec.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, got, err, http.StatusOK)
	require.Equal(t, exec, *got.JSON200)
	etag := got.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, etag)

	// List: newest first by default, by name ascending, filters, pagination.
	items, next := c.Groups(t, q, sdk.ListConsumerGroupsParams{})
	require.Empty(t, next)
	require.Equal(t, []string{"audit", "exec-expenses", "primary"}, groupNames(items))
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByDisplayName)})
	require.Equal(t, []string{"audit", "exec-expenses", "primary"}, groupNames(items))
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByDisplayName),
		SortOrder: e2e.Ptr(sdk.SortOrderDESC)})
	require.Equal(t, []string{"primary", "exec-expenses", "audit"}, groupNames(items))
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByTimeCreated),
		SortOrder: e2e.Ptr(sdk.SortOrderASC)})
	require.Equal(t, []string{"primary", "exec-expenses", "audit"}, groupNames(items))
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{DisplayName: e2e.Ptr("audit")})
	require.Equal(t, []string{audit.Id}, []string{items[0].Id})
	require.Len(t, items, 1)
	items, _ = c.Groups(t, q2, sdk.ListConsumerGroupsParams{})
	require.Equal(t, []string{"exec-expenses", "primary"}, groupNames(items), "only q2's groups")
	var paged []string
	page := ""
	for range 10 {
		params := sdk.ListConsumerGroupsParams{Limit: e2e.Ptr(1), SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByDisplayName)}
		if page != "" {
			params.Page = &page
		}
		items, page = c.Groups(t, q, params)
		require.LessOrEqual(t, len(items), 1)
		paged = append(paged, groupNames(items)...)
		if page == "" {
			break
		}
	}
	require.Equal(t, []string{"audit", "exec-expenses", "primary"}, paged)
	badPage, err := c.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: q, Page: e2e.Ptr("not-a-token")})
	e2e.RequireError(t, badPage, err, http.StatusBadRequest, "InvalidParameter", "page")

	// opc-retry-token: the same body replays the original; another body is a 409.
	body := sdk.CreateConsumerGroupDetails{QueueId: q, DisplayName: "retried", Filter: e2e.Ptr(":x")}
	first, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{OpcRetryToken: e2e.Ptr("cg-token-1")}, body)
	e2e.RequireStatus(t, first, err, http.StatusAccepted)
	again, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{OpcRetryToken: e2e.Ptr("cg-token-1")}, body)
	e2e.RequireStatus(t, again, err, http.StatusAccepted)
	require.Equal(t, first.JSON202.Id, again.JSON202.Id)
	body.DisplayName = "retried-2"
	conflict, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{OpcRetryToken: e2e.Ptr("cg-token-1")}, body)
	e2e.RequireError(t, conflict, err, http.StatusConflict, "Conflict", "opc-retry-token")
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{DisplayName: e2e.Ptr("retried")})
	require.Len(t, items, 1, "the replay created nothing")

	// Update: if-match, filter (validated), name (unique), isEnabled, dead-letter count and -1 to inherit again.
	stale, err := c.UpdateConsumerGroupWithResponse(ctx, exec.Id, &sdk.UpdateConsumerGroupParams{IfMatch: e2e.Ptr("nope")},
		sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
	e2e.RequireError(t, stale, err, http.StatusPreconditionFailed, "NoEtagMatch")
	upd, err := c.UpdateConsumerGroupWithResponse(ctx, exec.Id, &sdk.UpdateConsumerGroupParams{IfMatch: &etag},
		sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(`:team = "exec"`), DisplayName: e2e.Ptr("exec"),
			IsEnabled: e2e.Ptr(false), DeadLetterQueueDeliveryCount: e2e.Ptr(7), FreeformTags: &sdk.FreeformTags{"k": "v"}})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Equal(t, `:team = "exec"`, upd.JSON202.Filter)
	require.Equal(t, "exec", upd.JSON202.DisplayName)
	require.False(t, upd.JSON202.IsEnabled)
	require.Equal(t, e2e.Ptr(7), upd.JSON202.DeadLetterQueueDeliveryCount)
	require.Equal(t, sdk.FreeformTags{"k": "v"}, upd.JSON202.FreeformTags)
	require.True(t, upd.JSON202.TimeUpdated.After(exec.TimeUpdated) || upd.JSON202.TimeUpdated.Equal(exec.TimeUpdated))
	require.NotEqual(t, etag, upd.HTTPResponse.Header.Get("etag"))
	reused, err := c.UpdateConsumerGroupWithResponse(ctx, exec.Id, &sdk.UpdateConsumerGroupParams{IfMatch: &etag},
		sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
	e2e.RequireError(t, reused, err, http.StatusPreconditionFailed, "NoEtagMatch")
	inherit := c.ChangeGroup(t, exec.Id, sdk.UpdateConsumerGroupDetails{DeadLetterQueueDeliveryCount: e2e.Ptr(-1)})
	require.Nil(t, inherit.DeadLetterQueueDeliveryCount, "-1 inherits the queue's again")
	require.Equal(t, "exec", inherit.DisplayName, "absent fields stay")
	require.Equal(t, `:team = "exec"`, inherit.Filter)
	zero := c.ChangeGroup(t, exec.Id, sdk.UpdateConsumerGroupDetails{DeadLetterQueueDeliveryCount: e2e.Ptr(0)})
	require.Equal(t, e2e.Ptr(0), zero.DeadLetterQueueDeliveryCount, "0 = no DLQ for this group, not inherit")
	cleared := c.ChangeGroup(t, exec.Id, sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(""), IsEnabled: e2e.Ptr(true)})
	require.Empty(t, cleared.Filter)
	require.True(t, cleared.IsEnabled)
	badFilter, err := c.UpdateConsumerGroupWithResponse(ctx, exec.Id, &sdk.UpdateConsumerGroupParams{},
		sdk.UpdateConsumerGroupDetails{Filter: e2e.Ptr(`:n >= "x"`)})
	e2e.RequireError(t, badFilter, err, http.StatusBadRequest, "InvalidParameter", "filter: column 7:")
	taken, err := c.UpdateConsumerGroupWithResponse(ctx, exec.Id, &sdk.UpdateConsumerGroupParams{},
		sdk.UpdateConsumerGroupDetails{DisplayName: e2e.Ptr("AUDIT")})
	e2e.RequireError(t, taken, err, http.StatusConflict, "Conflict", "displayName")
	again2, err := c.GetConsumerGroupWithResponse(ctx, exec.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, again2, err, http.StatusOK)
	require.Equal(t, "exec", again2.JSON200.DisplayName, "a rejected update changes nothing")
	require.Empty(t, again2.JSON200.Filter)

	// The primary group (as in OCI): it can be renamed, filtered and disabled like the others, not deleted; a
	// name another group has is taken.
	clash, err := c.UpdateConsumerGroupWithResponse(ctx, q, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{DisplayName: e2e.Ptr("Exec")})
	e2e.RequireError(t, clash, err, http.StatusConflict, "Conflict", "displayName")
	off := c.ChangeGroup(t, q, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false), DeadLetterQueueDeliveryCount: e2e.Ptr(2),
		DisplayName: e2e.Ptr("main"), Filter: e2e.Ptr(":x")})
	require.False(t, off.IsEnabled)
	require.True(t, off.IsPrimary)
	require.Equal(t, "main", off.DisplayName)
	require.Equal(t, ":x", off.Filter)
	require.Equal(t, e2e.Ptr(2), off.DeadLetterQueueDeliveryCount)
	qr, err := c.GetQueueWithResponse(ctx, q, &sdk.GetQueueParams{})
	e2e.RequireStatus(t, qr, err, http.StatusOK)
	require.Equal(t, &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: e2e.Ptr(false),
		PrimaryConsumerGroupDisplayName: e2e.Ptr("main"), PrimaryConsumerGroupFilter: e2e.Ptr(":x"),
		PrimaryConsumerGroupDeadLetterQueueDeliveryCount: e2e.Ptr(2)}},
		qr.JSON200.Capabilities, "the queue shows the primary group as it is")
	delPrimary, err := c.DeleteConsumerGroupWithResponse(ctx, q, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireError(t, delPrimary, err, http.StatusConflict, "IncorrectState", "primary")

	// Delete: if-match, 204, then 404 everywhere; the name is free again; DELETED groups are listed on request.
	del, err := c.DeleteConsumerGroupWithResponse(ctx, audit.Id, &sdk.DeleteConsumerGroupParams{IfMatch: e2e.Ptr("nope")})
	e2e.RequireError(t, del, err, http.StatusPreconditionFailed, "NoEtagMatch")
	del, err = c.DeleteConsumerGroupWithResponse(ctx, audit.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	gone, err := c.GetConsumerGroupWithResponse(ctx, audit.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireError(t, gone, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	del, err = c.DeleteConsumerGroupWithResponse(ctx, audit.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	updGone, err := c.UpdateConsumerGroupWithResponse(ctx, audit.Id, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(true)})
	e2e.RequireError(t, updGone, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByDisplayName)})
	require.Equal(t, []string{"exec", "main", "retried"}, groupNames(items))
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)})
	require.Len(t, items, 1)
	require.Equal(t, audit.Id, items[0].Id)
	require.Equal(t, sdk.LifecycleStateDELETED, items[0].LifecycleState)
	reborn := c.NewGroup(t, q, "Audit", "")
	require.NotEqual(t, audit.Id, reborn.Id)

	// A group's compartmentId is its queue's, also after the queue moved.
	child := c.NewCompartment(t, tenancyID, "cg-child")
	moved, err := c.ChangeQueueCompartmentWithResponse(ctx, q, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: child.Id})
	e2e.RequireStatus(t, moved, err, http.StatusAccepted)
	got, err = c.GetConsumerGroupWithResponse(ctx, reborn.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, got, err, http.StatusOK)
	require.Equal(t, child.Id, got.JSON200.CompartmentId)
	items, _ = c.Groups(t, q, sdk.ListConsumerGroupsParams{})
	for _, g := range items {
		require.Equal(t, child.Id, g.CompartmentId, g.DisplayName)
	}
}

// TestConsumerGroupCapability: UpdateQueue enables the capability (creating the primary group), toggles the primary
// group, and disables the capability again.
func TestConsumerGroupCapability(t *testing.T) {
	t.Parallel()
	_, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID)

	qr, err := c.GetQueueWithResponse(ctx, q, &sdk.GetQueueParams{})
	e2e.RequireStatus(t, qr, err, http.StatusOK)
	require.Nil(t, qr.JSON200.Capabilities)
	none, err := c.GetConsumerGroupWithResponse(ctx, q, &sdk.GetConsumerGroupParams{})
	e2e.RequireError(t, none, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	caps := func(primary *bool) *[]sdk.Capability {
		return &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: primary}}
	}
	// returned is the capability as the queue shows it: with the primary group's name and (empty) filter.
	returned := func(enabled bool) *[]sdk.Capability {
		return &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: &enabled,
			PrimaryConsumerGroupDisplayName: e2e.Ptr("primary"), PrimaryConsumerGroupFilter: e2e.Ptr("")}}
	}
	upd, err := c.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{Capabilities: caps(nil)})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Equal(t, returned(true), upd.JSON202.Capabilities, "the primary group is enabled by default")
	primary, err := c.GetConsumerGroupWithResponse(ctx, q, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, primary, err, http.StatusOK)
	require.True(t, primary.JSON200.IsPrimary)
	require.True(t, primary.JSON200.IsEnabled)
	g := c.NewGroup(t, q, "g", "")

	upd, err = c.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{Capabilities: caps(e2e.Ptr(false))})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Equal(t, returned(false), upd.JSON202.Capabilities)
	primary, err = c.GetConsumerGroupWithResponse(ctx, q, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, primary, err, http.StatusOK)
	require.False(t, primary.JSON200.IsEnabled)

	// An update that leaves capabilities out leaves them as they are.
	upd, err = c.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(12)})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Equal(t, returned(false), upd.JSON202.Capabilities)

	// Without the capability the queue behaves as a queue with only an enabled primary group.
	upd, err = c.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{Capabilities: &[]sdk.Capability{}})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	require.Nil(t, upd.JSON202.Capabilities)
	res := c.Put(t, q, e2e.Msg("plain"))
	require.Equal(t, e2e.Ptr(1), res[0].ConsumerGroups)
	require.Len(t, c.Get(t, q), 1)
	noCap, err := c.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: q, DisplayName: "h",
	})
	e2e.RequireError(t, noCap, err, http.StatusConflict, "IncorrectState")

	// Enabled again: the group created before is still there, and so is the primary group (enabled as asked).
	upd, err = c.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{Capabilities: caps(e2e.Ptr(true))})
	e2e.RequireStatus(t, upd, err, http.StatusAccepted)
	items, _ := c.Groups(t, q, sdk.ListConsumerGroupsParams{SortBy: e2e.Ptr(sdk.ListConsumerGroupsParamsSortByDisplayName)})
	require.Equal(t, []string{"g", "primary"}, groupNames(items))
	require.Equal(t, g.Id, items[0].Id)
	res = c.Put(t, q, e2e.Msg("fanned out"))
	require.Equal(t, e2e.Ptr(2), res[0].ConsumerGroups)

	// Created with the capability and the primary group disabled.
	q2 := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(false))
	qr, err = c.GetQueueWithResponse(ctx, q2, &sdk.GetQueueParams{})
	e2e.RequireStatus(t, qr, err, http.StatusOK)
	require.Equal(t, returned(false), qr.JSON200.Capabilities)
}

// TestConsumerGroupTenantIsolation: another tenancy cannot see, change, delete, list or use a tenancy's groups; it
// gets the same 404 as for a group that does not exist.
func TestConsumerGroupTenantIsolation(t *testing.T) {
	t.Parallel()
	srv, tenancyA, a := testserver.StartAdmin(t)
	tenancyB, b := srv.Admin(t, "cg-iso-b")
	ctx := context.Background()
	qa := a.NewQueue(t, tenancyA, e2e.WithConsumerGroups(true))
	ga := a.NewGroup(t, qa, "secret", "")
	qb := b.NewQueue(t, tenancyB, e2e.WithConsumerGroups(true))
	a.Put(t, qa, e2e.Msg("for a"))

	for _, id := range []string{ga.Id, qa} {
		got, err := b.GetConsumerGroupWithResponse(ctx, id, &sdk.GetConsumerGroupParams{})
		e2e.RequireError(t, got, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
		upd, err := b.UpdateConsumerGroupWithResponse(ctx, id, &sdk.UpdateConsumerGroupParams{}, sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
		e2e.RequireError(t, upd, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
		del, err := b.DeleteConsumerGroupWithResponse(ctx, id, &sdk.DeleteConsumerGroupParams{})
		e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	}
	list, err := b.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: qa})
	e2e.RequireError(t, list, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	create, err := b.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{QueueId: qa, DisplayName: "mine"})
	e2e.RequireError(t, create, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// A's group does not resolve on B's queue, by OCID or by name.
	for _, ref := range []string{ga.Id, "secret", qa} {
		resp, err := b.GetMessagesWithResponse(ctx, qb, &sdk.GetMessagesParams{ConsumerGroupId: &ref, TimeoutInSeconds: e2e.Ptr(0)})
		e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
		st, err := b.GetStatsWithResponse(ctx, qb, &sdk.GetStatsParams{ConsumerGroupId: &ref})
		e2e.RequireError(t, st, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "consumerGroupId")
	}
	// Nor can B reach A's queue through a group reference.
	resp, err := b.GetMessagesWithResponse(ctx, qa, &sdk.GetMessagesParams{ConsumerGroupId: e2e.Ptr(ga.Id), TimeoutInSeconds: e2e.Ptr(0)})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// A's group is untouched and still receives.
	got, err := a.GetConsumerGroupWithResponse(ctx, ga.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, got, err, http.StatusOK)
	require.True(t, got.JSON200.IsEnabled)
	require.Len(t, a.Get(t, qa, e2e.OfGroup("secret")), 1)
	items, _ := b.Groups(t, qb, sdk.ListConsumerGroupsParams{})
	require.Equal(t, []string{"primary"}, groupNames(items))
}

// TestValidateFilter: the dry run parses and evaluates, never stores, and a bad request body is a 400.
func TestValidateFilter(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	const path = "/20210201/consumerGroups/actions/validateFilter"

	ok := srv.RawJSON(t, token, http.MethodPost, path, strings.NewReader(
		`{"filter":":team = \"exec\"","attributes":[{"team":"exec"},{"team":"sales"}]}`))
	require.Equal(t, http.StatusOK, ok.Status, string(ok.Body))
	require.JSONEq(t, `{"valid":true,"matches":[true,false]}`, string(ok.Body))

	invalid := srv.RawJSON(t, token, http.MethodPost, path, strings.NewReader(`{"filter":":team = ","attributes":[{"team":"x"}]}`))
	require.Equal(t, http.StatusOK, invalid.Status, string(invalid.Body))
	require.JSONEq(t, `{"valid":false,"error":"column 9: expected a literal after '='"}`, string(invalid.Body))

	// Through the SDK: numbers compare numerically, absent attributes, no attribute sets at all.
	resp, err := c.ValidateConsumerGroupFilterWithResponse(context.Background(), &sdk.ValidateConsumerGroupFilterParams{},
		sdk.ValidateFilterDetails{Filter: `:n >= 40 AND NOT :test`, Attributes: &[]sdk.MessageAttributes{
			{"n": 40.0}, {"n": 39.5}, {"n": 41, "test": "yes"}, {"n": "40"}, {},
		}})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.True(t, resp.JSON200.Valid)
	require.Equal(t, &[]bool{true, false, false, false, false}, resp.JSON200.Matches)
	resp, err = c.ValidateConsumerGroupFilterWithResponse(context.Background(), &sdk.ValidateConsumerGroupFilterParams{},
		sdk.ValidateFilterDetails{Filter: ""})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.True(t, resp.JSON200.Valid)
	require.NotNil(t, resp.JSON200.Matches)
	require.Empty(t, *resp.JSON200.Matches)

	for _, tc := range []struct{ name, body, code, field string }{
		{"no filter", `{"attributes":[]}`, "MissingParameter", "filter"},
		{"not json", `{"filter":`, "InvalidParameter", "body"},
		{"wrong type", `{"filter":7}`, "InvalidParameter", "filter"},
		{"extra field", `{"filter":":a","queueId":"x"}`, "InvalidParameter", "queueId"},
		{"bad attrs", `{"filter":":a","attributes":[{"a":true}]}`, "InvalidParameter", "attributes"},
		{"too long", `{"filter":"` + strings.Repeat(":a OR ", 200) + `:a"}`, "InvalidParameter", "filter"},
	} {
		r := srv.RawJSON(t, token, http.MethodPost, path, strings.NewReader(tc.body))
		e2e.RequireAPIError(t, r.Status, r.Body, http.StatusBadRequest, tc.code, tc.field)
	}
	unauth := srv.RawJSON(t, "", http.MethodPost, path, strings.NewReader(`{"filter":":a"}`))
	require.Equal(t, http.StatusUnauthorized, unauth.Status)
}

// A deleted consumer group, and every group of a deleted queue, leave no cursor lease state behind (the cursors and
// ranges of persistence/sql/messages/lease.sql): no lease reads it again.
func TestDeletedGroupsLeaveNoLeaseState(t *testing.T) {
	t.Parallel()
	srv, tenancyID, c := testserver.StartAdmin(t)
	ctx := context.Background()
	q := c.NewQueue(t, tenancyID, e2e.WithConsumerGroups(true))
	audit := c.NewGroup(t, q, "audit", "")
	var auditNo int32
	require.NoError(t, srv.Pool.QueryRow(ctx, `SELECT group_no FROM consumer_groups WHERE id = $1`, audit.Id).Scan(&auditNo))
	// leaseState counts the queue's cursor and range rows, of one group or (-1) of all.
	leaseState := func(groupNo int32) int {
		t.Helper()
		var n int
		require.NoError(t, srv.Pool.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM message_cursors WHERE queue_no = (SELECT no FROM queues WHERE id = $1) AND ($2 < 0 OR group_no = $2))
				+ (SELECT count(*) FROM message_ranges WHERE queue_no = (SELECT no FROM queues WHERE id = $1) AND ($2 < 0 OR group_no = $2))`,
			q, groupNo).Scan(&n))
		return n
	}

	for range 4 {
		c.Put(t, q, sdk.PutMessagesDetailsEntry{Content: "m"})
	}
	require.Len(t, c.Get(t, q, e2e.Limit(2), e2e.OfGroup(audit.Id)), 2)
	require.Len(t, c.Get(t, q, e2e.Limit(2)), 2)
	require.Positive(t, leaseState(auditNo), "the group's lease keeps a cursor")
	require.Positive(t, leaseState(0))

	del, err := c.DeleteConsumerGroupWithResponse(ctx, audit.Id, &sdk.DeleteConsumerGroupParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	require.Zero(t, leaseState(auditNo), "gone with the group")
	require.Positive(t, leaseState(0), "the other groups' state stays")

	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, srv.WaitWorkRequest(t, c, c.StartQueueDelete(t, q)).Status)
	require.Zero(t, leaseState(-1), "gone with the queue")
}
