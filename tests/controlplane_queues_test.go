package tests

import (
	"cmp"
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
)

func TestQueueCreateDefaults(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	before := time.Now().Add(-time.Minute)

	q := cpCreateQueue(t, client, tenancyID, "defaults")
	require.True(t, strings.HasPrefix(q.Id, "ocid1.queue.ferry.local."), q.Id)
	require.Equal(t, tenancyID, q.CompartmentId)
	require.Equal(t, "defaults", q.DisplayName)
	require.Equal(t, sdk.LifecycleStateACTIVE, q.LifecycleState)
	require.Equal(t, 86400, q.RetentionInSeconds)
	require.Equal(t, 30, q.VisibilityInSeconds)
	require.Equal(t, 30, q.TimeoutInSeconds)
	require.Equal(t, 0, q.DeadLetterQueueDeliveryCount)
	require.Equal(t, 100, q.ChannelConsumptionLimit)
	require.Equal(t, int64(2147483648), q.MaxSizeInBytes)
	require.Equal(t, 0, q.DeduplicationWindowInSeconds)
	require.Equal(t, srv.URL, q.MessagesEndpoint)
	require.Empty(t, q.FreeformTags)
	require.NotNil(t, q.FreeformTags, "freeformTags is always present")
	require.Equal(t, time.UTC, q.TimeCreated.Location())
	require.True(t, q.TimeCreated.After(before))

	got, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, q, got)
}

func TestQueueCreateExplicit(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	resp, err := client.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId:                tenancyID,
		DisplayName:                  "explicit",
		RetentionInSeconds:           cpPtr(3600),
		VisibilityInSeconds:          cpPtr(0), // 0 is an explicit value, not "use the default"
		TimeoutInSeconds:             cpPtr(0),
		DeadLetterQueueDeliveryCount: cpPtr(5),
		ChannelConsumptionLimit:      cpPtr(10),
		MaxSizeInBytes:               cpPtr(int64(1 << 20)),
		DeduplicationWindowInSeconds: cpPtr(600),
		FreeformTags:                 &sdk.FreeformTags{"env": "test", "team": "core"},
	})
	cpRequireStatus(t, resp, err, http.StatusOK)
	q := *resp.JSON200
	require.Equal(t, 3600, q.RetentionInSeconds)
	require.Equal(t, 0, q.VisibilityInSeconds)
	require.Equal(t, 0, q.TimeoutInSeconds)
	require.Equal(t, 5, q.DeadLetterQueueDeliveryCount)
	require.Equal(t, 10, q.ChannelConsumptionLimit)
	require.Equal(t, int64(1<<20), q.MaxSizeInBytes)
	require.Equal(t, 600, q.DeduplicationWindowInSeconds)
	require.Equal(t, sdk.FreeformTags{"env": "test", "team": "core"}, q.FreeformTags)

	got, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, q, got)
}

// queueSettingRanges are the documented bounds of every queue setting (DESIGN section 3).
var queueSettingRanges = []struct {
	field    string
	min, max int64
	set      func(d *sdk.CreateQueueDetails, v int64)
	update   func(d *sdk.UpdateQueueDetails, v int64) // nil: cannot change after creation
}{
	{"retentionInSeconds", 10, 604800,
		func(d *sdk.CreateQueueDetails, v int64) { d.RetentionInSeconds = cpPtr(int(v)) }, nil},
	{"visibilityInSeconds", 0, 43200,
		func(d *sdk.CreateQueueDetails, v int64) { d.VisibilityInSeconds = cpPtr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.VisibilityInSeconds = cpPtr(int(v)) }},
	{"timeoutInSeconds", 0, 30,
		func(d *sdk.CreateQueueDetails, v int64) { d.TimeoutInSeconds = cpPtr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.TimeoutInSeconds = cpPtr(int(v)) }},
	{"deadLetterQueueDeliveryCount", 0, 1000,
		func(d *sdk.CreateQueueDetails, v int64) { d.DeadLetterQueueDeliveryCount = cpPtr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.DeadLetterQueueDeliveryCount = cpPtr(int(v)) }},
	{"channelConsumptionLimit", 1, 100,
		func(d *sdk.CreateQueueDetails, v int64) { d.ChannelConsumptionLimit = cpPtr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.ChannelConsumptionLimit = cpPtr(int(v)) }},
	{"maxSizeInBytes", 1 << 20, 1 << 40,
		func(d *sdk.CreateQueueDetails, v int64) { d.MaxSizeInBytes = cpPtr(v) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.MaxSizeInBytes = cpPtr(v) }},
	{"deduplicationWindowInSeconds", 0, 86400,
		func(d *sdk.CreateQueueDetails, v int64) { d.DeduplicationWindowInSeconds = cpPtr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.DeduplicationWindowInSeconds = cpPtr(int(v)) }},
}

func TestQueueSettingRanges(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	ctx := context.Background()
	target := cpCreateQueue(t, client, tenancyID, "update-target")

	for _, r := range queueSettingRanges {
		for _, v := range []int64{r.min - 1, r.min, r.max, r.max + 1} {
			valid := v >= r.min && v <= r.max
			name := fmt.Sprintf("%s=%d", r.field, v)

			details := sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: name}
			r.set(&details, v)
			resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, details)
			if valid {
				cpRequireStatus(t, resp, err, http.StatusOK)
				got, _ := cpGetQueue(t, client, resp.JSON200.Id)
				require.Equal(t, v, queueSetting(got, r.field), name)
			} else {
				cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", r.field)
			}

			if r.update == nil {
				continue
			}
			_, etag := cpGetQueue(t, client, target.Id)
			var upd sdk.UpdateQueueDetails
			r.update(&upd, v)
			uresp, err := client.UpdateQueueWithResponse(ctx, target.Id, &sdk.UpdateQueueParams{}, upd)
			if valid {
				cpRequireStatus(t, uresp, err, http.StatusOK)
				require.Equal(t, v, queueSetting(*uresp.JSON200, r.field), name)
			} else {
				cpRequireError(t, uresp, err, http.StatusBadRequest, "InvalidParameter", r.field)
				_, after := cpGetQueue(t, client, target.Id)
				require.Equal(t, etag, after, "%s: a rejected update changes nothing", name)
			}
		}
	}
	// Only the valid creations exist: two per setting.
	ids := cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID})
	require.Len(t, ids, 1+2*len(queueSettingRanges))
}

func queueSetting(q sdk.Queue, field string) int64 {
	switch field {
	case "retentionInSeconds":
		return int64(q.RetentionInSeconds)
	case "visibilityInSeconds":
		return int64(q.VisibilityInSeconds)
	case "timeoutInSeconds":
		return int64(q.TimeoutInSeconds)
	case "deadLetterQueueDeliveryCount":
		return int64(q.DeadLetterQueueDeliveryCount)
	case "channelConsumptionLimit":
		return int64(q.ChannelConsumptionLimit)
	case "maxSizeInBytes":
		return q.MaxSizeInBytes
	case "deduplicationWindowInSeconds":
		return int64(q.DeduplicationWindowInSeconds)
	}
	panic("unknown field " + field)
}

func TestQueueCreateErrors(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	ctx := context.Background()

	missing := "ocid1.compartment.ferry.local." + strings.Repeat("e", 32)
	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: missing, DisplayName: "q"})
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "compartmentId")

	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: ""})
	cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "displayName")

	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: strings.Repeat("n", 256)})
	cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "displayName")

	// 255 characters is the longest valid name.
	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: strings.Repeat("n", 255)})
	cpRequireStatus(t, resp, err, http.StatusOK)

	require.Len(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}), 1)

	get, err := client.GetQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("f", 32), &sdk.GetQueueParams{})
	cpRequireError(t, get, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueueList(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	child := cpCreateCompartment(t, client, tenancyID, "child")
	grandchild := cpCreateCompartment(t, client, child.Id, "grandchild")

	qb := cpCreateQueue(t, client, tenancyID, "bravo")
	qa := cpCreateQueue(t, client, tenancyID, "alpha")
	qc := cpCreateQueue(t, client, tenancyID, "charlie")
	qd := cpCreateQueue(t, client, child.Id, "delta")
	qe := cpCreateQueue(t, client, grandchild.Id, "alpha") // display names need not be unique

	ids := func(p sdk.ListQueuesParams) []string { t.Helper(); return cpQueueIDs(t, client, p) }
	byName := cpPtr(sdk.ListQueuesParamsSortByDisplayName)
	byTime := cpPtr(sdk.ListQueuesParamsSortByTimeCreated)
	asc, desc := cpPtr(sdk.SortOrderASC), cpPtr(sdk.SortOrderDESC)

	// Only the compartment's own queues, newest first by default.
	require.Equal(t, []string{qc.Id, qa.Id, qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID}))
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: child.Id}))

	// The summary carries the identity, not the settings.
	resp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: child.Id})
	cpRequireStatus(t, resp, err, http.StatusOK)
	summary := resp.JSON200.Items[0]
	require.Equal(t, qd.Id, summary.Id)
	require.Equal(t, child.Id, summary.CompartmentId)
	require.Equal(t, "delta", summary.DisplayName)
	require.Equal(t, sdk.LifecycleStateACTIVE, summary.LifecycleState)
	require.Equal(t, srv.URL, summary.MessagesEndpoint)
	require.Equal(t, qd.TimeCreated, summary.TimeCreated)

	// Sorting.
	require.Equal(t, []string{qb.Id, qa.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byTime, SortOrder: asc}))
	require.Equal(t, []string{qc.Id, qa.Id, qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byTime, SortOrder: desc}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byName}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byName, SortOrder: asc}))
	require.Equal(t, []string{qc.Id, qb.Id, qa.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byName, SortOrder: desc}))

	// The subtree.
	subtree := ids(sdk.ListQueuesParams{CompartmentId: tenancyID, CompartmentIdInSubtree: cpPtr(true), SortBy: byTime, SortOrder: asc})
	require.Equal(t, []string{qb.Id, qa.Id, qc.Id, qd.Id, qe.Id}, subtree)
	require.ElementsMatch(t, []string{qd.Id, qe.Id}, ids(sdk.ListQueuesParams{CompartmentId: child.Id, CompartmentIdInSubtree: cpPtr(true)}))
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: child.Id, CompartmentIdInSubtree: cpPtr(false)}))

	// Filters.
	require.Equal(t, []string{qa.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, DisplayName: cpPtr("alpha")}))
	require.ElementsMatch(t, []string{qa.Id, qe.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, DisplayName: cpPtr("alpha"), CompartmentIdInSubtree: cpPtr(true)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, DisplayName: cpPtr("Alpha")}))
	require.Equal(t, []string{qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, Id: cpPtr(qb.Id)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, Id: cpPtr(qd.Id)}), "id filters within the compartment")
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, Id: cpPtr(qd.Id), CompartmentIdInSubtree: cpPtr(true)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, Id: cpPtr("ocid1.queue.ferry.local." + strings.Repeat("g", 32))}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, SortBy: byName, LifecycleState: cpPtr(sdk.LifecycleStateACTIVE)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: tenancyID, LifecycleState: cpPtr(sdk.LifecycleStateDELETED)}))

	// A compartment that does not exist.
	lresp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: "ocid1.compartment.ferry.local." + strings.Repeat("h", 32)})
	cpRequireError(t, lresp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueuePagination(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	ctx := context.Background()
	child := cpCreateCompartment(t, client, tenancyID, "child")

	// Display names repeat, so that a page boundary can fall between two queues with the same name.
	names := []string{"kilo", "echo", "zulu", "echo", "alpha", "mike", "golf", "echo", "alpha2", "xray"}
	var created []sdk.Queue
	for i, n := range names {
		compartment := tenancyID
		if i%2 == 1 {
			compartment = child.Id
		}
		created = append(created, cpCreateQueue(t, client, compartment, n))
	}
	var byCreation, byName []string
	for _, q := range created {
		byCreation = append(byCreation, q.Id)
	}
	slices.SortFunc(created, func(a, b sdk.Queue) int {
		return cmp.Or(strings.Compare(a.DisplayName, b.DisplayName), strings.Compare(a.Id, b.Id))
	})
	for _, q := range created {
		byName = append(byName, q.Id)
	}
	reversed := func(s []string) []string { r := slices.Clone(s); slices.Reverse(r); return r }

	cases := []struct {
		sortBy sdk.ListQueuesParamsSortBy
		order  sdk.SortOrder
		want   []string
	}{
		{sdk.ListQueuesParamsSortByTimeCreated, sdk.SortOrderASC, byCreation},
		{sdk.ListQueuesParamsSortByTimeCreated, sdk.SortOrderDESC, reversed(byCreation)},
		{sdk.ListQueuesParamsSortByDisplayName, sdk.SortOrderASC, byName},
		{sdk.ListQueuesParamsSortByDisplayName, sdk.SortOrderDESC, reversed(byName)},
	}
	for _, tc := range cases {
		for _, limit := range []int{1, 2, 3, 10, 100} {
			name := fmt.Sprintf("%s/%s/limit=%d", tc.sortBy, tc.order, limit)
			params := sdk.ListQueuesParams{CompartmentId: tenancyID, CompartmentIdInSubtree: cpPtr(true),
				SortBy: cpPtr(tc.sortBy), SortOrder: cpPtr(tc.order), Limit: cpPtr(limit)}
			var got []string
			pages := 0
			for {
				resp, err := client.ListQueuesWithResponse(ctx, &params)
				cpRequireStatus(t, resp, err, http.StatusOK)
				pages++
				require.NotEmpty(t, resp.JSON200.Items, name)
				require.LessOrEqual(t, len(resp.JSON200.Items), limit, name)
				for _, q := range resp.JSON200.Items {
					got = append(got, q.Id)
				}
				next := resp.HTTPResponse.Header.Get("opc-next-page")
				if next == "" {
					break
				}
				params.Page = &next
				require.Less(t, pages, 20, name)
			}
			require.Equal(t, tc.want, got, name)
			require.Equal(t, (len(names)+limit-1)/limit, pages, name)
		}
	}

	resp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: tenancyID, Page: cpPtr("not-a-token")})
	cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "page")
}

func TestQueueUpdate(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	ctx := context.Background()
	q := cpCreateQueue(t, client, tenancyID, "before")
	_, etag := cpGetQueue(t, client, q.Id)

	resp, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		DisplayName:                  cpPtr("after"),
		VisibilityInSeconds:          cpPtr(120),
		TimeoutInSeconds:             cpPtr(5),
		DeadLetterQueueDeliveryCount: cpPtr(3),
		ChannelConsumptionLimit:      cpPtr(50),
		MaxSizeInBytes:               cpPtr(int64(1 << 30)),
		DeduplicationWindowInSeconds: cpPtr(60),
		FreeformTags:                 &sdk.FreeformTags{"a": "b"},
	})
	cpRequireStatus(t, resp, err, http.StatusOK)
	u := *resp.JSON200
	require.Equal(t, "after", u.DisplayName)
	require.Equal(t, 120, u.VisibilityInSeconds)
	require.Equal(t, 5, u.TimeoutInSeconds)
	require.Equal(t, 3, u.DeadLetterQueueDeliveryCount)
	require.Equal(t, 50, u.ChannelConsumptionLimit)
	require.Equal(t, int64(1<<30), u.MaxSizeInBytes)
	require.Equal(t, 60, u.DeduplicationWindowInSeconds)
	require.Equal(t, sdk.FreeformTags{"a": "b"}, u.FreeformTags)
	require.Equal(t, 86400, u.RetentionInSeconds)
	require.Equal(t, q.TimeCreated, u.TimeCreated)
	newEtag := resp.HTTPResponse.Header.Get("etag")
	require.NotEqual(t, etag, newEtag, "an update bumps the etag")

	got, gotEtag := cpGetQueue(t, client, q.Id)
	require.Equal(t, u, got)
	require.Equal(t, newEtag, gotEtag)

	// Absent fields are left unchanged.
	resp, err = client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{TimeoutInSeconds: cpPtr(0)})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, 0, resp.JSON200.TimeoutInSeconds)
	require.Equal(t, 120, resp.JSON200.VisibilityInSeconds)
	require.Equal(t, "after", resp.JSON200.DisplayName)
	require.Equal(t, sdk.FreeformTags{"a": "b"}, resp.JSON200.FreeformTags)

	// retentionInSeconds cannot change: the update is rejected and nothing changes.
	_, etag = cpGetQueue(t, client, q.Id)
	raw, err := client.UpdateQueueWithBodyWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, "application/json",
		strings.NewReader(`{"displayName":"sneaky","retentionInSeconds":60}`))
	cpRequireError(t, raw, err, http.StatusBadRequest, "InvalidParameter", "retentionInSeconds")
	got, gotEtag = cpGetQueue(t, client, q.Id)
	require.Equal(t, 86400, got.RetentionInSeconds)
	require.Equal(t, "after", got.DisplayName)
	require.Equal(t, etag, gotEtag)

	// A queue that does not exist.
	resp, err = client.UpdateQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("i", 32), &sdk.UpdateQueueParams{},
		sdk.UpdateQueueDetails{DisplayName: cpPtr("x")})
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueueDeleteLifecycle(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	q := cpCreateQueue(t, client, tenancyID, "doomed")
	other := cpCreateQueue(t, client, tenancyID, "survivor")
	target := cpCreateCompartment(t, client, tenancyID, "target")

	// Hold the executor so that the queue stays DELETING while we poke at it.
	srv.Node.Executor().Stop()
	resp, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
	cpRequireStatus(t, resp, err, http.StatusAccepted)
	require.Empty(t, resp.Body)
	wrID := resp.HTTPResponse.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest.ferry.local."), wrID)

	deleting, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETING, deleting.LifecycleState)
	wr, err := client.GetWorkRequestWithResponse(ctx, wrID, &sdk.GetWorkRequestParams{})
	cpRequireStatus(t, wr, err, http.StatusOK)
	require.Equal(t, sdk.WorkRequestStatusACCEPTED, wr.JSON200.Status)
	require.Equal(t, sdk.WorkRequestOperationTypeDELETEQUEUE, wr.JSON200.OperationType)
	require.Equal(t, sdk.WorkRequestResourceActionTypeINPROGRESS, wr.JSON200.Resources[0].ActionType)
	require.Nil(t, wr.JSON200.TimeFinished)

	// A DELETING queue cannot change, be deleted again, move or be purged.
	requireNotChangeable := func(state string) {
		t.Helper()
		codes := []int{http.StatusConflict, http.StatusNotFound}
		upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: cpPtr("zombie")})
		require.NoError(t, err)
		require.Contains(t, codes, upd.StatusCode(), "update of a %s queue: %s", state, upd.Body)
		del, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
		require.NoError(t, err)
		require.Contains(t, codes, del.StatusCode(), "delete of a %s queue: %s", state, del.Body)
		mv, err := client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: target.Id})
		require.NoError(t, err)
		require.Contains(t, codes, mv.StatusCode(), "move of a %s queue: %s", state, mv.Body)
		pg, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL})
		require.NoError(t, err)
		require.Contains(t, codes, pg.StatusCode(), "purge of a %s queue: %s", state, pg.Body)
		got, _ := cpGetQueue(t, client, q.Id)
		require.Equal(t, "doomed", got.DisplayName)
		require.Equal(t, tenancyID, got.CompartmentId)
	}
	requireNotChangeable("DELETING")
	upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: cpPtr("zombie")})
	cpRequireError(t, upd, err, http.StatusConflict, "IncorrectState")
	// Only the one work request exists.
	list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyID})
	cpRequireStatus(t, list, err, http.StatusOK)
	require.Len(t, list.JSON200.Items, 1)

	// Let the executor run it.
	require.True(t, srv.Node.Executor().RunOnce(ctx))
	done := cpWaitWorkRequest(t, srv, client, wrID)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, done.Status)
	require.Equal(t, float32(100), done.PercentComplete)
	require.Equal(t, tenancyID, done.CompartmentId)
	require.NotNil(t, done.TimeStarted)
	require.NotNil(t, done.TimeFinished)
	require.Len(t, done.Resources, 1)
	require.Equal(t, q.Id, done.Resources[0].Identifier)
	require.Equal(t, "queue", done.Resources[0].EntityType)
	require.Equal(t, sdk.WorkRequestResourceActionTypeDELETED, done.Resources[0].ActionType)
	require.Equal(t, "/20210201/queues/"+q.Id, *done.Resources[0].EntityUri)

	deleted, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, deleted.LifecycleState)
	require.Equal(t, []string{other.Id}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}))
	require.Equal(t, []string{q.Id}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID, LifecycleState: cpPtr(sdk.LifecycleStateDELETED)}))
	require.Equal(t, []string{q.Id}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID, CompartmentIdInSubtree: cpPtr(true), LifecycleState: cpPtr(sdk.LifecycleStateDELETED)}))
	requireNotChangeable("DELETED")
	del, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
	cpRequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// The survivor is untouched.
	survivor, _ := cpGetQueue(t, client, other.Id)
	require.Equal(t, other, survivor)

	// With the background executor, a delete completes on its own.
	srv.Node.Start(ctx)
	wrID = cpDeleteQueue(t, client, other.Id)
	require.Eventually(t, func() bool {
		r, err := client.GetWorkRequestWithResponse(ctx, wrID, &sdk.GetWorkRequestParams{})
		return err == nil && r.JSON200 != nil && r.JSON200.Status == sdk.WorkRequestStatusSUCCEEDED
	}, 10*time.Second, 10*time.Millisecond)
	gone, _ := cpGetQueue(t, client, other.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, gone.LifecycleState)
}

func TestQueueChangeCompartment(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
	ctx := context.Background()
	src := cpCreateCompartment(t, client, tenancyID, "src")
	dst := cpCreateCompartment(t, client, tenancyID, "dst")
	q := cpCreateQueue(t, client, src.Id, "mover")
	_, etag := cpGetQueue(t, client, q.Id)

	resp, err := client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, dst.Id, resp.JSON200.CompartmentId)
	require.NotEqual(t, etag, resp.HTTPResponse.Header.Get("etag"))
	got, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, dst.Id, got.CompartmentId)
	require.Empty(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: src.Id}))
	require.Equal(t, []string{q.Id}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: dst.Id}))

	// The source is empty now and can be deleted; the target holds the queue and cannot.
	del, err := client.DeleteCompartmentWithResponse(ctx, dst.Id, &sdk.DeleteCompartmentParams{})
	cpRequireError(t, del, err, http.StatusConflict, "IncorrectState")
	del, err = client.DeleteCompartmentWithResponse(ctx, src.Id, &sdk.DeleteCompartmentParams{})
	cpRequireStatus(t, del, err, http.StatusNoContent)

	// Into a compartment that does not exist, or was deleted: nothing moves.
	_, etag = cpGetQueue(t, client, q.Id)
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: "ocid1.compartment.ferry.local." + strings.Repeat("j", 32)})
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "compartmentId")
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: src.Id})
	cpRequireError(t, resp, err, http.StatusConflict, "IncorrectState", "compartmentId")
	got, gotEtag := cpGetQueue(t, client, q.Id)
	require.Equal(t, dst.Id, got.CompartmentId)
	require.Equal(t, etag, gotEtag)

	// Back to the root; a queue that does not exist.
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyID})
	cpRequireStatus(t, resp, err, http.StatusOK)
	require.Equal(t, tenancyID, resp.JSON200.CompartmentId)
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("k", 32),
		&sdk.ChangeQueueCompartmentParams{}, sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyID})
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueuePurge(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	q := cpCreateQueue(t, client, tenancyID, "purged")

	for _, pt := range []sdk.PurgeType{sdk.PurgeTypeNORMAL, sdk.PurgeTypeDLQ, sdk.PurgeTypeBOTH} {
		resp, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: pt})
		cpRequireStatus(t, resp, err, http.StatusAccepted)
		require.Empty(t, resp.Body)
		wrID := resp.HTTPResponse.Header.Get("opc-work-request-id")
		require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest."), wrID)
		wr := cpWaitWorkRequest(t, srv, client, wrID)
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status, "purge %s", pt)
		require.Equal(t, sdk.WorkRequestOperationTypePURGEQUEUE, wr.OperationType)
		require.Equal(t, float32(100), wr.PercentComplete)
		require.Equal(t, q.Id, wr.Resources[0].Identifier)
		require.Equal(t, sdk.WorkRequestResourceActionTypeUPDATED, wr.Resources[0].ActionType)
	}
	// A purge leaves the queue as it was.
	got, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateACTIVE, got.LifecycleState)
	require.Equal(t, q.DisplayName, got.DisplayName)

	resp, err := client.PurgeQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("l", 32), &sdk.PurgeQueueParams{},
		sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL})
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

// TestQueueDeleteRetryAfterFailure: a delete that failed leaves the queue FAILED with "retry the delete" in its
// lifecycleDetails; the retry must be accepted, while other changes stay refused.
func TestQueueDeleteRetryAfterFailure(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	q := cpCreateQueue(t, client, tenancyID, "flaky")
	// What the executor does when a delete fails (services/maintenance).
	require.NoError(t, srv.Node.Store().Queues.SetState(ctx, tenancyID, q.Id, "FAILED", "delete failed; retry the delete"))
	failed, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateFAILED, failed.LifecycleState)

	upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: cpPtr("x")})
	cpRequireError(t, upd, err, http.StatusConflict, "IncorrectState")
	purge, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
	cpRequireError(t, purge, err, http.StatusConflict, "IncorrectState")

	wr := cpWaitWorkRequest(t, srv, client, cpDeleteQueue(t, client, q.Id))
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status)
	deleted, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, deleted.LifecycleState)
}

// TestQueueConcurrentDelete: many deletes of one queue at once accept exactly one; the others are refused and no
// second work request exists.
func TestQueueConcurrentDelete(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	q := cpCreateQueue(t, client, tenancyID, "contended")

	const n = 8
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
			if err == nil {
				statuses[i] = resp.StatusCode()
			}
		})
	}
	wg.Wait()
	accepted := 0
	for _, s := range statuses {
		switch s {
		case http.StatusAccepted:
			accepted++
		case http.StatusConflict, http.StatusNotFound:
		default:
			t.Fatalf("unexpected status %d among %v", s, statuses)
		}
	}
	require.Equal(t, 1, accepted, "statuses: %v", statuses)
	list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyID, ResourceId: &q.Id})
	cpRequireStatus(t, list, err, http.StatusOK)
	require.Len(t, list.JSON200.Items, 1)
	cpWaitWorkRequest(t, srv, client, list.JSON200.Items[0].Id)
	got, _ := cpGetQueue(t, client, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, got.LifecycleState)
}
