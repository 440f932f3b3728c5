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

func TestWorkRequestGetAndList(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	child := client.NewCompartment(t, tenancyID, "child")
	q1 := client.NewNamedQueue(t, tenancyID, "q1")
	q2 := client.NewNamedQueue(t, tenancyID, "q2")
	q3 := client.NewNamedQueue(t, child.Id, "q3")

	purge := func(id string) string {
		t.Helper()
		resp, err := client.PurgeQueueWithResponse(ctx, id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		return resp.HTTPResponse.Header.Get("opc-work-request-id")
	}
	wr1 := purge(q1.Id)
	wr2 := client.StartQueueDelete(t, q2.Id)
	wr3 := purge(q3.Id)
	for _, id := range []string{wr1, wr2, wr3} {
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, srv.WaitWorkRequest(t, client, id).Status)
	}

	// Get.
	get, err := client.GetWorkRequestWithResponse(ctx, wr1, &sdk.GetWorkRequestParams{})
	e2e.RequireStatus(t, get, err, http.StatusOK)
	require.NotEmpty(t, get.HTTPResponse.Header.Get("etag"))
	w := *get.JSON200
	require.Equal(t, wr1, w.Id)
	require.Equal(t, tenancyID, w.CompartmentId)
	require.Equal(t, sdk.WorkRequestOperationTypePURGEQUEUE, w.OperationType)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, w.Status)
	require.Equal(t, float32(100), w.PercentComplete)
	require.NotNil(t, w.TimeStarted)
	require.NotNil(t, w.TimeFinished)
	require.False(t, w.TimeStarted.Before(w.TimeAccepted))
	require.False(t, w.TimeFinished.Before(*w.TimeStarted))
	require.Equal(t, []sdk.WorkRequestResource{{
		EntityType: "queue", ActionType: sdk.WorkRequestResourceActionTypeUPDATED, Identifier: q1.Id,
		EntityUri: e2e.Ptr("/20210201/queues/" + q1.Id),
	}}, w.Resources)

	missing, err := client.GetWorkRequestWithResponse(ctx, "ocid1.workrequest.ferry.local."+strings.Repeat("o", 32), &sdk.GetWorkRequestParams{})
	e2e.RequireError(t, missing, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// List: the compartment's own work requests, newest first, the same as Get returns them.
	list := func(p sdk.ListWorkRequestsParams) []sdk.WorkRequest {
		t.Helper()
		var all []sdk.WorkRequest
		for range 10 {
			resp, err := client.ListWorkRequestsWithResponse(ctx, &p)
			e2e.RequireStatus(t, resp, err, http.StatusOK)
			all = append(all, resp.JSON200.Items...)
			next := resp.HTTPResponse.Header.Get("opc-next-page")
			if next == "" {
				return all
			}
			if p.Limit != nil {
				require.Len(t, resp.JSON200.Items, *p.Limit)
			}
			p.Page = &next
		}
		t.Fatal("pagination did not end")
		return nil
	}
	// The queues' creations have work requests too (already SUCCEEDED, TestWorkRequestsOfChanges): left out here.
	ids := func(ws []sdk.WorkRequest) []string {
		out := make([]string, 0, len(ws))
		for _, w := range ws {
			if w.OperationType != sdk.WorkRequestOperationTypeCREATEQUEUE {
				out = append(out, w.Id)
			}
		}
		return out
	}
	root := list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID)})
	require.Equal(t, []string{wr2, wr1}, ids(root))
	require.Equal(t, w, root[1])
	require.Equal(t, sdk.WorkRequestOperationTypeDELETEQUEUE, root[0].OperationType)
	require.Equal(t, []string{wr3}, ids(list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(child.Id)})))

	// Filtered by resource, and by id (with or without the compartment).
	require.Equal(t, []string{wr1}, ids(list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), ResourceId: &q1.Id})))
	require.Empty(t, list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), ResourceId: &q3.Id}))
	require.Equal(t, []string{wr3}, ids(list(sdk.ListWorkRequestsParams{WorkRequestId: &wr3})))
	require.Equal(t, []string{wr3}, ids(list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(child.Id), WorkRequestId: &wr3})))
	require.Empty(t, list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), WorkRequestId: &wr3}))
	// Without a compartment and an id: the root compartment's.
	require.Equal(t, []string{wr2, wr1}, ids(list(sdk.ListWorkRequestsParams{})))

	// Paginated: every work request exactly once.
	require.Equal(t, []string{wr2, wr1}, ids(list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), Limit: e2e.Ptr(1)})))
	require.Equal(t, []string{wr2, wr1}, ids(list(sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), Limit: e2e.Ptr(2)})))
	bad, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), Page: e2e.Ptr("bogus")})
	e2e.RequireError(t, bad, err, http.StatusBadRequest, "InvalidParameter", "page")

	// A compartment that does not exist.
	none, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr("ocid1.compartment.ferry.local." + strings.Repeat("p", 32))})
	e2e.RequireError(t, none, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestWorkRequestProgressWhileQueued(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "q")

	srv.Node.Executor().Stop()
	resp, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	id := resp.HTTPResponse.Header.Get("opc-work-request-id")

	get, err := client.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{})
	e2e.RequireStatus(t, get, err, http.StatusOK)
	require.Equal(t, sdk.WorkRequestStatusACCEPTED, get.JSON200.Status)
	require.Equal(t, float32(0), get.JSON200.PercentComplete)
	require.Nil(t, get.JSON200.TimeStarted)
	require.Nil(t, get.JSON200.TimeFinished)
	require.Equal(t, sdk.WorkRequestResourceActionTypeINPROGRESS, get.JSON200.Resources[0].ActionType)
	etag := get.HTTPResponse.Header.Get("etag")

	// A queue being purged stays ACTIVE and usable.
	got, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateACTIVE, got.LifecycleState)

	require.True(t, srv.Node.Executor().RunOnce(ctx))
	require.False(t, srv.Node.Executor().RunOnce(ctx), "nothing left to run")
	get, err = client.GetWorkRequestWithResponse(ctx, id, &sdk.GetWorkRequestParams{})
	e2e.RequireStatus(t, get, err, http.StatusOK)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, get.JSON200.Status)
	require.Equal(t, float32(100), get.JSON200.PercentComplete)
	require.NotEqual(t, etag, get.HTTPResponse.Header.Get("etag"), "the etag follows the progress")
}
