package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestCompartmentCreateAndGet(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()

	before := time.Now().Add(-time.Minute)
	resp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{
		CompartmentId: tenancyID, Name: "payments", Description: e2e.Ptr("the payments team"),
		FreeformTags: &sdk.FreeformTags{"team": "payments"},
	})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	created := *resp.JSON200
	require.True(t, strings.HasPrefix(created.Id, "ocid1.compartment.ferry.local."), created.Id)
	require.Equal(t, tenancyID, *created.CompartmentId)
	require.Equal(t, "payments", created.Name)
	require.Equal(t, "the payments team", created.Description)
	require.Equal(t, sdk.LifecycleStateACTIVE, created.LifecycleState)
	require.Equal(t, sdk.FreeformTags{"team": "payments"}, created.FreeformTags)
	require.Equal(t, time.UTC, created.TimeCreated.Location())
	require.True(t, created.TimeCreated.After(before))
	createEtag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, createEtag)

	got, etag := client.CompartmentWithETag(t, created.Id)
	require.Equal(t, created, got)
	require.Equal(t, createEtag, etag)

	// The root compartment has the tenancy's OCID and no parent.
	root, _ := client.CompartmentWithETag(t, tenancyID)
	require.Equal(t, tenancyID, root.Id)
	require.Nil(t, root.CompartmentId)
	require.Equal(t, sdk.LifecycleStateACTIVE, root.LifecycleState)

	// A nested compartment.
	child := client.NewCompartment(t, created.Id, "ledger")
	require.Equal(t, created.Id, *child.CompartmentId)

	// A compartment that does not exist.
	missing := "ocid1.compartment.ferry.local." + strings.Repeat("a", 32)
	getResp, err := client.GetCompartmentWithResponse(ctx, missing, &sdk.GetCompartmentParams{})
	e2e.RequireError(t, getResp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// Creating under a parent that does not exist names the field.
	resp, err = client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{},
		sdk.CreateCompartmentDetails{CompartmentId: missing, Name: "orphan"})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "compartmentId")
}

func TestCompartmentDuplicateSiblingName(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	first := client.NewCompartment(t, tenancyID, "dup")

	for _, name := range []string{"dup", "DUP"} { // sibling names are unique case-insensitively
		resp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{},
			sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: name})
		e2e.RequireError(t, resp, err, http.StatusConflict, "Conflict", "name")
	}
	list, err := client.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyID})
	e2e.RequireStatus(t, list, err, http.StatusOK)
	require.Len(t, list.JSON200.Items, 1)

	// The same name under another parent is fine.
	other := client.NewCompartment(t, tenancyID, "other")
	client.NewCompartment(t, other.Id, "dup")

	// Renaming onto a sibling's name conflicts too.
	upd, err := client.UpdateCompartmentWithResponse(ctx, other.Id, &sdk.UpdateCompartmentParams{},
		sdk.UpdateCompartmentDetails{Name: e2e.Ptr("Dup")})
	e2e.RequireError(t, upd, err, http.StatusConflict, "Conflict", "name")
	got, _ := client.CompartmentWithETag(t, other.Id)
	require.Equal(t, "other", got.Name)

	// Deleting a compartment frees its name.
	del, err := client.DeleteCompartmentWithResponse(ctx, first.Id, &sdk.DeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusNoContent)
	again := client.NewCompartment(t, tenancyID, "dup")
	require.NotEqual(t, first.Id, again.Id)
}

// compartmentTree builds root → {a, b, c}, a → {a1, a2}, a1 → {a1x} and returns the compartments by name.
func compartmentTree(t *testing.T, client *e2e.Client, rootID string) map[string]sdk.Compartment {
	t.Helper()
	tree := map[string]sdk.Compartment{}
	for _, n := range []string{"a", "b", "c"} {
		tree[n] = client.NewCompartment(t, rootID, n)
	}
	for _, n := range []string{"a1", "a2"} {
		tree[n] = client.NewCompartment(t, tree["a"].Id, n)
	}
	tree["a1x"] = client.NewCompartment(t, tree["a1"].Id, "a1x")
	return tree
}

func compartmentNames(items []sdk.Compartment) []string {
	return e2e.Map(items, func(c sdk.Compartment) string { return c.Name })
}

func TestCompartmentList(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	tree := compartmentTree(t, client, tenancyID)

	list := func(p sdk.ListCompartmentsParams) []string {
		t.Helper()
		resp, err := client.ListCompartmentsWithResponse(ctx, &p)
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		require.Empty(t, resp.HTTPResponse.Header.Get("opc-next-page"))
		return compartmentNames(resp.JSON200.Items)
	}
	byName := e2e.Ptr(sdk.ListCompartmentsParamsSortByName)
	byTime := e2e.Ptr(sdk.ListCompartmentsParamsSortByTimeCreated)
	asc, desc := e2e.Ptr(sdk.SortOrderASC), e2e.Ptr(sdk.SortOrderDESC)

	// Children only by default; newest first.
	require.Equal(t, []string{"c", "b", "a"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID}))
	require.Equal(t, []string{"a2", "a1"}, list(sdk.ListCompartmentsParams{CompartmentId: tree["a"].Id}))
	require.Empty(t, list(sdk.ListCompartmentsParams{CompartmentId: tree["a1x"].Id}))

	// The whole subtree (without the compartment itself).
	require.Equal(t, []string{"a", "a1", "a1x", "a2", "b", "c"},
		list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, CompartmentIdInSubtree: e2e.Ptr(true), SortBy: byName}))
	require.Equal(t, []string{"a1", "a1x", "a2"},
		list(sdk.ListCompartmentsParams{CompartmentId: tree["a"].Id, CompartmentIdInSubtree: e2e.Ptr(true), SortBy: byName}))
	require.Equal(t, []string{"a", "b", "c"}, // explicit false = children only
		list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, CompartmentIdInSubtree: e2e.Ptr(false), SortBy: byName}))

	// Sorting.
	require.Equal(t, []string{"a", "b", "c"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byName}))
	require.Equal(t, []string{"a", "b", "c"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byName, SortOrder: asc}))
	require.Equal(t, []string{"c", "b", "a"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byName, SortOrder: desc}))
	require.Equal(t, []string{"c", "b", "a"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byTime}))
	require.Equal(t, []string{"a", "b", "c"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byTime, SortOrder: asc}))
	require.Equal(t, []string{"c", "b", "a"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byTime, SortOrder: desc}))

	// The name filter is exact and case-sensitive; with the subtree it finds deeper compartments.
	require.Equal(t, []string{"b"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, Name: e2e.Ptr("b")}))
	require.Empty(t, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, Name: e2e.Ptr("B")}))
	require.Empty(t, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, Name: e2e.Ptr("a1x")}))
	require.Equal(t, []string{"a1x"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, Name: e2e.Ptr("a1x"), CompartmentIdInSubtree: e2e.Ptr(true)}))

	// lifecycleState: a deleted compartment is listed only when asked for.
	del, err := client.DeleteCompartmentWithResponse(ctx, tree["c"].Id, &sdk.DeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusNoContent)
	require.Equal(t, []string{"a", "b"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byName}))
	require.Equal(t, []string{"c"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))
	require.Equal(t, []string{"a", "b"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: byName, LifecycleState: e2e.Ptr(sdk.LifecycleStateACTIVE)}))
	require.Equal(t, []string{"c"}, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, CompartmentIdInSubtree: e2e.Ptr(true), LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))
	require.Empty(t, list(sdk.ListCompartmentsParams{CompartmentId: tenancyID, LifecycleState: e2e.Ptr(sdk.LifecycleStateFAILED)}))

	// Listing in a compartment that does not exist.
	resp, err := client.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{
		CompartmentId: "ocid1.compartment.ferry.local." + strings.Repeat("b", 32)})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestCompartmentPagination(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()

	// Names in an order that differs from creation order, so that the two sorts disagree.
	names := []string{"m", "c", "x", "a", "q", "f", "t"}
	var byCreation []string
	idOf := map[string]string{}
	for _, n := range names {
		c := client.NewCompartment(t, tenancyID, n)
		byCreation = append(byCreation, c.Id)
		idOf[n] = c.Id
	}
	sortedNames := slices.Sorted(slices.Values(names))
	var byName []string
	for _, n := range sortedNames {
		byName = append(byName, idOf[n])
	}
	reversed := func(s []string) []string { r := slices.Clone(s); slices.Reverse(r); return r }

	cases := []struct {
		sortBy sdk.ListCompartmentsParamsSortBy
		order  *sdk.SortOrder
		want   []string
	}{
		{sdk.ListCompartmentsParamsSortByTimeCreated, nil, reversed(byCreation)},
		{sdk.ListCompartmentsParamsSortByTimeCreated, e2e.Ptr(sdk.SortOrderASC), byCreation},
		{sdk.ListCompartmentsParamsSortByTimeCreated, e2e.Ptr(sdk.SortOrderDESC), reversed(byCreation)},
		{sdk.ListCompartmentsParamsSortByName, nil, byName},
		{sdk.ListCompartmentsParamsSortByName, e2e.Ptr(sdk.SortOrderASC), byName},
		{sdk.ListCompartmentsParamsSortByName, e2e.Ptr(sdk.SortOrderDESC), reversed(byName)},
	}
	for _, tc := range cases {
		for _, limit := range []int{1, 2, 3, 7, 8} {
			name := fmt.Sprintf("%s/%v/limit=%d", tc.sortBy, tc.order, limit)
			params := sdk.ListCompartmentsParams{CompartmentId: tenancyID, SortBy: e2e.Ptr(tc.sortBy), SortOrder: tc.order, Limit: e2e.Ptr(limit)}
			pages := 0
			var got []string
			for {
				resp, err := client.ListCompartmentsWithResponse(ctx, &params)
				e2e.RequireStatus(t, resp, err, http.StatusOK)
				pages++
				require.LessOrEqual(t, len(resp.JSON200.Items), limit, name)
				require.NotEmpty(t, resp.JSON200.Items, "%s: a page must not be empty", name)
				got = append(got, compartmentIDsOf(resp.JSON200.Items)...)
				next := resp.HTTPResponse.Header.Get("opc-next-page")
				if next == "" {
					break
				}
				params.Page = &next
				require.Less(t, pages, 20, name)
			}
			require.Equal(t, tc.want, got, name) // every compartment exactly once, in order
			require.Equal(t, (len(names)+limit-1)/limit, pages, name)
		}
	}

	// An invalid page token, and a token made for another sort order, answer 400.
	for _, page := range []string{"garbage", "eyJ4IjoxfQ", strings.Repeat("A", 100)} {
		resp, err := client.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyID, Page: e2e.Ptr(page)})
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "page")
	}
	first, err := client.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyID, Limit: e2e.Ptr(2)})
	e2e.RequireStatus(t, first, err, http.StatusOK)
	next := first.HTTPResponse.Header.Get("opc-next-page")
	require.NotEmpty(t, next)
	resp, err := client.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyID, Limit: e2e.Ptr(2),
		Page: &next, SortBy: e2e.Ptr(sdk.ListCompartmentsParamsSortByName)})
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "page")
}

func compartmentIDsOf(items []sdk.Compartment) []string {
	return e2e.Map(items, func(c sdk.Compartment) string { return c.Id })
}

func TestCompartmentUpdate(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	comp := client.NewCompartment(t, tenancyID, "before")
	_, etag := client.CompartmentWithETag(t, comp.Id)

	resp, err := client.UpdateCompartmentWithResponse(ctx, comp.Id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{
		Name: e2e.Ptr("after"), Description: e2e.Ptr("new description"), FreeformTags: &sdk.FreeformTags{"k": "v"},
	})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, "after", resp.JSON200.Name)
	require.Equal(t, "new description", resp.JSON200.Description)
	require.Equal(t, sdk.FreeformTags{"k": "v"}, resp.JSON200.FreeformTags)
	require.Equal(t, comp.TimeCreated, resp.JSON200.TimeCreated)
	require.False(t, resp.JSON200.TimeUpdated.Before(comp.TimeUpdated))
	newEtag := resp.HTTPResponse.Header.Get("etag")
	require.NotEmpty(t, newEtag)
	require.NotEqual(t, etag, newEtag, "an update bumps the etag")

	got, gotEtag := client.CompartmentWithETag(t, comp.Id)
	require.Equal(t, *resp.JSON200, got)
	require.Equal(t, newEtag, gotEtag)

	// Absent fields are left unchanged.
	resp, err = client.UpdateCompartmentWithResponse(ctx, comp.Id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{
		Description: e2e.Ptr("only the description"),
	})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, "after", resp.JSON200.Name)
	require.Equal(t, sdk.FreeformTags{"k": "v"}, resp.JSON200.FreeformTags)
	// Empty tags replace the map.
	resp, err = client.UpdateCompartmentWithResponse(ctx, comp.Id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{
		FreeformTags: &sdk.FreeformTags{},
	})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.Empty(t, resp.JSON200.FreeformTags)
	require.Equal(t, "only the description", resp.JSON200.Description)

	// A compartment that does not exist.
	missing := "ocid1.compartment.ferry.local." + strings.Repeat("c", 32)
	resp, err = client.UpdateCompartmentWithResponse(ctx, missing, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: e2e.Ptr("x")})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// The root compartment cannot be renamed (its description can change).
	resp, err = client.UpdateCompartmentWithResponse(ctx, tenancyID, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: e2e.Ptr("renamed-root")})
	e2e.RequireError(t, resp, err, http.StatusConflict, "IncorrectState")
	root, _ := client.CompartmentWithETag(t, tenancyID)
	require.NotEqual(t, "renamed-root", root.Name)
	resp, err = client.UpdateCompartmentWithResponse(ctx, tenancyID, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Description: e2e.Ptr("the root")})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, "the root", resp.JSON200.Description)

	// A deleted compartment cannot change.
	del, err := client.DeleteCompartmentWithResponse(ctx, comp.Id, &sdk.DeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusNoContent)
	resp, err = client.UpdateCompartmentWithResponse(ctx, comp.Id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: e2e.Ptr("zombie")})
	require.NoError(t, err)
	require.Contains(t, []int{http.StatusConflict, http.StatusNotFound}, resp.StatusCode(), "body: %s", resp.Body)
	deleted, _ := client.CompartmentWithETag(t, comp.Id)
	require.Equal(t, "after", deleted.Name)
}

func TestCompartmentDelete(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	parent := client.NewCompartment(t, tenancyID, "parent")
	child := client.NewCompartment(t, parent.Id, "child")

	deleteCompartment := func(id string) *sdk.DeleteCompartmentResponse {
		t.Helper()
		resp, err := client.DeleteCompartmentWithResponse(ctx, id, &sdk.DeleteCompartmentParams{})
		require.NoError(t, err)
		return resp
	}

	// A compartment that holds a child compartment cannot be deleted.
	e2e.RequireError(t, deleteCompartment(parent.Id), nil, http.StatusConflict, "IncorrectState")

	// Nor one that holds a live queue.
	q := client.NewNamedQueue(t, child.Id, "q")
	e2e.RequireError(t, deleteCompartment(child.Id), nil, http.StatusConflict, "IncorrectState")
	got, _ := client.CompartmentWithETag(t, child.Id)
	require.Equal(t, sdk.LifecycleStateACTIVE, got.LifecycleState)

	// Once the queue is deleted, the compartment is empty.
	wr := srv.WaitWorkRequest(t, client, client.StartQueueDelete(t, q.Id))
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status)
	resp := deleteCompartment(child.Id)
	require.Equal(t, http.StatusNoContent, resp.StatusCode(), "body: %s", resp.Body)
	require.Empty(t, resp.Body)

	// A deleted compartment reads as DELETED, is not listed by default, and cannot be deleted again.
	got, _ = client.CompartmentWithETag(t, child.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, got.LifecycleState)
	require.Empty(t, client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: parent.Id}))
	require.Equal(t, []string{child.Id}, client.CompartmentIDs(t, sdk.ListCompartmentsParams{
		CompartmentId: parent.Id, LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))
	e2e.RequireError(t, deleteCompartment(child.Id), nil, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// Nothing can be created in a deleted compartment.
	cc, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: child.Id, Name: "x"})
	e2e.RequireError(t, cc, err, http.StatusConflict, "IncorrectState", "compartmentId")
	cq, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: child.Id, DisplayName: "x"})
	e2e.RequireError(t, cq, err, http.StatusConflict, "IncorrectState", "compartmentId")

	// The parent is empty now.
	require.Equal(t, http.StatusNoContent, deleteCompartment(parent.Id).StatusCode())

	// The root compartment cannot be deleted.
	e2e.RequireError(t, deleteCompartment(tenancyID), nil, http.StatusConflict, "IncorrectState")
	root, _ := client.CompartmentWithETag(t, tenancyID)
	require.Equal(t, sdk.LifecycleStateACTIVE, root.LifecycleState)

	// A compartment that does not exist.
	e2e.RequireError(t, deleteCompartment("ocid1.compartment.ferry.local."+strings.Repeat("d", 32)), nil,
		http.StatusNotFound, "NotAuthorizedOrNotFound")
}

// TestCompartmentConcurrentDeleteAndCreate races deleting a compartment against creating a queue and a child in
// it: whatever the interleaving, a DELETED compartment never ends up holding a live resource.
func TestCompartmentConcurrentDeleteAndCreate(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()

	for round := range 5 {
		comp := client.NewCompartment(t, tenancyID, fmt.Sprintf("race-%d", round))
		var wg sync.WaitGroup
		var deleted, queued, nested int
		wg.Go(func() {
			resp, err := client.DeleteCompartmentWithResponse(ctx, comp.Id, &sdk.DeleteCompartmentParams{})
			if err == nil {
				deleted = resp.StatusCode()
			}
		})
		wg.Go(func() {
			resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: comp.Id, DisplayName: "q"})
			if err == nil {
				queued = resp.StatusCode()
			}
		})
		wg.Go(func() {
			resp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: comp.Id, Name: "child"})
			if err == nil {
				nested = resp.StatusCode()
			}
		})
		wg.Wait()
		require.Contains(t, []int{http.StatusNoContent, http.StatusConflict}, deleted)
		require.Contains(t, []int{http.StatusAccepted, http.StatusConflict}, queued)
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, nested)
		got, _ := client.CompartmentWithETag(t, comp.Id)
		if got.LifecycleState == sdk.LifecycleStateDELETED {
			require.Equal(t, http.StatusNoContent, deleted)
			require.Equal(t, http.StatusConflict, queued, "a queue was created in a deleted compartment")
			require.Equal(t, http.StatusConflict, nested, "a compartment was created in a deleted compartment")
		} else {
			require.Equal(t, http.StatusConflict, deleted)
			require.True(t, queued == http.StatusAccepted || nested == http.StatusOK)
		}
		live := client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(comp.Id)})
		children := client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: comp.Id})
		require.Equal(t, queued == http.StatusAccepted, len(live) == 1)
		require.Equal(t, nested == http.StatusOK, len(children) == 1)
	}
}

// TestCompartmentConcurrentSameName: many creates of one name under one parent at once: exactly one wins.
func TestCompartmentConcurrentSameName(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{},
				sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: "only-one"})
			if err == nil {
				statuses[i] = resp.StatusCode()
			}
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	want := append([]int{http.StatusOK}, slices.Repeat([]int{http.StatusConflict}, n-1)...)
	require.Equal(t, want, statuses)
	require.Len(t, client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyID}), 1)
}
