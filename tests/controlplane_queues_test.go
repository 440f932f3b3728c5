package tests

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestQueueCreateDefaults(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	before := time.Now().Add(-time.Minute)

	q := client.NewNamedQueue(t, tenancyID, "defaults")
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

	got, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, q, got)
}

func TestQueueCreateExplicit(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	resp, err := client.CreateQueueWithResponse(context.Background(), &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId:                tenancyID,
		DisplayName:                  "explicit",
		RetentionInSeconds:           e2e.Ptr(3600),
		VisibilityInSeconds:          e2e.Ptr(0), // 0 is an explicit value, not "use the default"
		TimeoutInSeconds:             e2e.Ptr(0),
		DeadLetterQueueDeliveryCount: e2e.Ptr(5),
		ChannelConsumptionLimit:      e2e.Ptr(10),
		MaxSizeInBytes:               e2e.Ptr(int64(1 << 20)),
		DeduplicationWindowInSeconds: e2e.Ptr(600),
		FreeformTags:                 &sdk.FreeformTags{"env": "test", "team": "core"},
	})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	q := *resp.JSON202
	require.Equal(t, 3600, q.RetentionInSeconds)
	require.Equal(t, 0, q.VisibilityInSeconds)
	require.Equal(t, 0, q.TimeoutInSeconds)
	require.Equal(t, 5, q.DeadLetterQueueDeliveryCount)
	require.Equal(t, 10, q.ChannelConsumptionLimit)
	require.Equal(t, int64(1<<20), q.MaxSizeInBytes)
	require.Equal(t, 600, q.DeduplicationWindowInSeconds)
	require.Equal(t, sdk.FreeformTags{"env": "test", "team": "core"}, q.FreeformTags)

	got, _ := client.QueueWithETag(t, q.Id)
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
		func(d *sdk.CreateQueueDetails, v int64) { d.RetentionInSeconds = e2e.Ptr(int(v)) }, nil},
	{"visibilityInSeconds", 0, 43200,
		func(d *sdk.CreateQueueDetails, v int64) { d.VisibilityInSeconds = e2e.Ptr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.VisibilityInSeconds = e2e.Ptr(int(v)) }},
	{"timeoutInSeconds", 0, 30,
		func(d *sdk.CreateQueueDetails, v int64) { d.TimeoutInSeconds = e2e.Ptr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.TimeoutInSeconds = e2e.Ptr(int(v)) }},
	{"deadLetterQueueDeliveryCount", 0, 1000,
		func(d *sdk.CreateQueueDetails, v int64) { d.DeadLetterQueueDeliveryCount = e2e.Ptr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.DeadLetterQueueDeliveryCount = e2e.Ptr(int(v)) }},
	{"channelConsumptionLimit", 1, 100,
		func(d *sdk.CreateQueueDetails, v int64) { d.ChannelConsumptionLimit = e2e.Ptr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.ChannelConsumptionLimit = e2e.Ptr(int(v)) }},
	{"maxSizeInBytes", 1 << 20, 1 << 40,
		func(d *sdk.CreateQueueDetails, v int64) { d.MaxSizeInBytes = e2e.Ptr(v) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.MaxSizeInBytes = e2e.Ptr(v) }},
	{"deduplicationWindowInSeconds", 0, 86400,
		func(d *sdk.CreateQueueDetails, v int64) { d.DeduplicationWindowInSeconds = e2e.Ptr(int(v)) },
		func(d *sdk.UpdateQueueDetails, v int64) { d.DeduplicationWindowInSeconds = e2e.Ptr(int(v)) }},
}

func TestQueueSettingRanges(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	target := client.NewNamedQueue(t, tenancyID, "update-target")

	for _, r := range queueSettingRanges {
		for _, v := range []int64{r.min - 1, r.min, r.max, r.max + 1} {
			valid := v >= r.min && v <= r.max
			name := fmt.Sprintf("%s=%d", r.field, v)

			details := sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: name}
			r.set(&details, v)
			resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, details)
			if valid {
				e2e.RequireStatus(t, resp, err, http.StatusAccepted)
				got, _ := client.QueueWithETag(t, resp.JSON202.Id)
				require.Equal(t, v, queueSetting(got, r.field), name)
			} else {
				e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", r.field)
			}

			if r.update == nil {
				continue
			}
			_, etag := client.QueueWithETag(t, target.Id)
			var upd sdk.UpdateQueueDetails
			r.update(&upd, v)
			uresp, err := client.UpdateQueueWithResponse(ctx, target.Id, &sdk.UpdateQueueParams{}, upd)
			if valid {
				e2e.RequireStatus(t, uresp, err, http.StatusAccepted)
				require.Equal(t, v, queueSetting(*uresp.JSON202, r.field), name)
			} else {
				e2e.RequireError(t, uresp, err, http.StatusBadRequest, "InvalidParameter", r.field)
				_, after := client.QueueWithETag(t, target.Id)
				require.Equal(t, etag, after, "%s: a rejected update changes nothing", name)
			}
		}
	}
	// Only the valid creations exist: two per setting.
	ids := client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)})
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
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()

	missing := "ocid1.compartment.ferry.local." + strings.Repeat("e", 32)
	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: missing, DisplayName: "q"})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "compartmentId")

	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: ""})
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "displayName")

	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: strings.Repeat("n", 256)})
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "displayName")

	// 255 characters is the longest valid name.
	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: strings.Repeat("n", 255)})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)

	require.Len(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}), 1)

	get, err := client.GetQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("f", 32), &sdk.GetQueueParams{})
	e2e.RequireError(t, get, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueueList(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	child := client.NewCompartment(t, tenancyID, "child")
	grandchild := client.NewCompartment(t, child.Id, "grandchild")

	qb := client.NewNamedQueue(t, tenancyID, "bravo")
	qa := client.NewNamedQueue(t, tenancyID, "alpha")
	qc := client.NewNamedQueue(t, tenancyID, "charlie")
	qd := client.NewNamedQueue(t, child.Id, "delta")
	qe := client.NewNamedQueue(t, grandchild.Id, "alpha") // display names need not be unique

	ids := func(p sdk.ListQueuesParams) []string { t.Helper(); return client.QueueIDs(t, p) }
	byName := e2e.Ptr(sdk.ListQueuesParamsSortByDisplayName)
	byTime := e2e.Ptr(sdk.ListQueuesParamsSortByTimeCreated)
	asc, desc := e2e.Ptr(sdk.SortOrderASC), e2e.Ptr(sdk.SortOrderDESC)

	// Only the compartment's own queues, newest first by default.
	require.Equal(t, []string{qc.Id, qa.Id, qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}))
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(child.Id)}))

	// The summary carries the identity, not the settings.
	resp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(child.Id)})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	summary := resp.JSON200.Items[0]
	require.Equal(t, qd.Id, summary.Id)
	require.Equal(t, child.Id, summary.CompartmentId)
	require.Equal(t, "delta", summary.DisplayName)
	require.Equal(t, sdk.LifecycleStateACTIVE, summary.LifecycleState)
	require.Equal(t, srv.URL, summary.MessagesEndpoint)
	require.Equal(t, qd.TimeCreated, summary.TimeCreated)

	// Sorting.
	require.Equal(t, []string{qb.Id, qa.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byTime, SortOrder: asc}))
	require.Equal(t, []string{qc.Id, qa.Id, qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byTime, SortOrder: desc}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byName}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byName, SortOrder: asc}))
	require.Equal(t, []string{qc.Id, qb.Id, qa.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byName, SortOrder: desc}))

	// The subtree.
	subtree := ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), CompartmentIdInSubtree: e2e.Ptr(true), SortBy: byTime, SortOrder: asc})
	require.Equal(t, []string{qb.Id, qa.Id, qc.Id, qd.Id, qe.Id}, subtree)
	require.ElementsMatch(t, []string{qd.Id, qe.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(child.Id), CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(child.Id), CompartmentIdInSubtree: e2e.Ptr(false)}))

	// Filters.
	require.Equal(t, []string{qa.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), DisplayName: e2e.Ptr("alpha")}))
	require.ElementsMatch(t, []string{qa.Id, qe.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), DisplayName: e2e.Ptr("alpha"), CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), DisplayName: e2e.Ptr("Alpha")}))
	require.Equal(t, []string{qb.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), Id: e2e.Ptr(qb.Id)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), Id: e2e.Ptr(qd.Id)}), "id filters within the compartment")
	require.Equal(t, []string{qd.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), Id: e2e.Ptr(qd.Id), CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), Id: e2e.Ptr("ocid1.queue.ferry.local." + strings.Repeat("g", 32))}))
	require.Equal(t, []string{qa.Id, qb.Id, qc.Id}, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), SortBy: byName, LifecycleState: e2e.Ptr(sdk.LifecycleStateACTIVE)}))
	require.Empty(t, ids(sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))

	// A compartment that does not exist.
	lresp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr("ocid1.compartment.ferry.local." + strings.Repeat("h", 32))})
	e2e.RequireError(t, lresp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueuePagination(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	child := client.NewCompartment(t, tenancyID, "child")

	// Display names repeat, so that a page boundary can fall between two queues with the same name.
	names := []string{"kilo", "echo", "zulu", "echo", "alpha", "mike", "golf", "echo", "alpha2", "xray"}
	var created []sdk.Queue
	for i, n := range names {
		compartment := tenancyID
		if i%2 == 1 {
			compartment = child.Id
		}
		created = append(created, client.NewNamedQueue(t, compartment, n))
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
			params := sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), CompartmentIdInSubtree: e2e.Ptr(true),
				SortBy: e2e.Ptr(tc.sortBy), SortOrder: e2e.Ptr(tc.order), Limit: e2e.Ptr(limit)}
			var got []string
			pages := 0
			for {
				resp, err := client.ListQueuesWithResponse(ctx, &params)
				e2e.RequireStatus(t, resp, err, http.StatusOK)
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

	resp, err := client.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), Page: e2e.Ptr("not-a-token")})
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "page")
}

func TestQueueUpdate(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "before")
	_, etag := client.QueueWithETag(t, q.Id)

	resp, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{
		DisplayName:                  e2e.Ptr("after"),
		VisibilityInSeconds:          e2e.Ptr(120),
		TimeoutInSeconds:             e2e.Ptr(5),
		DeadLetterQueueDeliveryCount: e2e.Ptr(3),
		ChannelConsumptionLimit:      e2e.Ptr(50),
		MaxSizeInBytes:               e2e.Ptr(int64(1 << 30)),
		DeduplicationWindowInSeconds: e2e.Ptr(60),
		FreeformTags:                 &sdk.FreeformTags{"a": "b"},
	})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	u := *resp.JSON202
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

	got, gotEtag := client.QueueWithETag(t, q.Id)
	require.Equal(t, u, got)
	require.Equal(t, newEtag, gotEtag)

	// Absent fields are left unchanged.
	resp, err = client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{TimeoutInSeconds: e2e.Ptr(0)})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	require.Equal(t, 0, resp.JSON202.TimeoutInSeconds)
	require.Equal(t, 120, resp.JSON202.VisibilityInSeconds)
	require.Equal(t, "after", resp.JSON202.DisplayName)
	require.Equal(t, sdk.FreeformTags{"a": "b"}, resp.JSON202.FreeformTags)

	// retentionInSeconds cannot change: the update is rejected and nothing changes.
	_, etag = client.QueueWithETag(t, q.Id)
	raw, err := client.UpdateQueueWithBodyWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, "application/json",
		strings.NewReader(`{"displayName":"sneaky","retentionInSeconds":60}`))
	e2e.RequireError(t, raw, err, http.StatusBadRequest, "InvalidParameter", "retentionInSeconds")
	got, gotEtag = client.QueueWithETag(t, q.Id)
	require.Equal(t, 86400, got.RetentionInSeconds)
	require.Equal(t, "after", got.DisplayName)
	require.Equal(t, etag, gotEtag)

	// A queue that does not exist.
	resp, err = client.UpdateQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("i", 32), &sdk.UpdateQueueParams{},
		sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("x")})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}
