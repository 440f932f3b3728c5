package tests

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

func TestQueueDeleteLifecycle(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "doomed")
	other := client.NewNamedQueue(t, tenancyID, "survivor")
	target := client.NewCompartment(t, tenancyID, "target")

	// Hold the executor so that the queue stays DELETING while we poke at it.
	srv.Node.Executor().Stop()
	resp, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	require.Empty(t, resp.Body)
	wrID := resp.HTTPResponse.Header.Get("opc-work-request-id")
	require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest.ferry.local."), wrID)

	deleting, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETING, deleting.LifecycleState)
	wr, err := client.GetWorkRequestWithResponse(ctx, wrID, &sdk.GetWorkRequestParams{})
	e2e.RequireStatus(t, wr, err, http.StatusOK)
	require.Equal(t, sdk.WorkRequestStatusACCEPTED, wr.JSON200.Status)
	require.Equal(t, sdk.WorkRequestOperationTypeDELETEQUEUE, wr.JSON200.OperationType)
	require.Equal(t, sdk.WorkRequestResourceActionTypeINPROGRESS, wr.JSON200.Resources[0].ActionType)
	require.Nil(t, wr.JSON200.TimeFinished)

	// A DELETING queue cannot change, be deleted again, move or be purged.
	requireNotChangeable := func(state string) {
		t.Helper()
		codes := []int{http.StatusConflict, http.StatusNotFound}
		upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("zombie")})
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
		got, _ := client.QueueWithETag(t, q.Id)
		require.Equal(t, "doomed", got.DisplayName)
		require.Equal(t, tenancyID, got.CompartmentId)
	}
	requireNotChangeable("DELETING")
	upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("zombie")})
	e2e.RequireError(t, upd, err, http.StatusConflict, "IncorrectState")
	// Only the one work request runs in the background.
	list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID)})
	e2e.RequireStatus(t, list, err, http.StatusOK)
	require.Len(t, e2e.Background(list.JSON200.Items), 1)

	// Let the executor run it.
	require.True(t, srv.Node.Executor().RunOnce(ctx))
	done := srv.WaitWorkRequest(t, client, wrID)
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

	deleted, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, deleted.LifecycleState)
	require.Equal(t, []string{other.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}))
	require.Equal(t, []string{q.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))
	require.Equal(t, []string{q.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID), CompartmentIdInSubtree: e2e.Ptr(true), LifecycleState: e2e.Ptr(sdk.LifecycleStateDELETED)}))
	requireNotChangeable("DELETED")
	del, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{})
	e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")

	// The survivor is untouched.
	survivor, _ := client.QueueWithETag(t, other.Id)
	require.Equal(t, other, survivor)

	// With the background executor, a delete completes on its own.
	srv.Node.Start(ctx)
	wrID = client.StartQueueDelete(t, other.Id)
	require.Eventually(t, func() bool {
		r, err := client.GetWorkRequestWithResponse(ctx, wrID, &sdk.GetWorkRequestParams{})
		return err == nil && r.JSON200 != nil && r.JSON200.Status == sdk.WorkRequestStatusSUCCEEDED
	}, 10*time.Second, 10*time.Millisecond)
	gone, _ := client.QueueWithETag(t, other.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, gone.LifecycleState)
}

func TestQueueChangeCompartment(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	src := client.NewCompartment(t, tenancyID, "src")
	dst := client.NewCompartment(t, tenancyID, "dst")
	q := client.NewNamedQueue(t, src.Id, "mover")
	_, etag := client.QueueWithETag(t, q.Id)

	resp, err := client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	require.Equal(t, dst.Id, resp.JSON202.CompartmentId)
	require.NotEqual(t, etag, resp.HTTPResponse.Header.Get("etag"))
	got, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, dst.Id, got.CompartmentId)
	require.Empty(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(src.Id)}))
	require.Equal(t, []string{q.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(dst.Id)}))

	// The source is empty now and can be deleted; the target holds the queue and cannot.
	del, err := client.DeleteCompartmentWithResponse(ctx, dst.Id, &sdk.DeleteCompartmentParams{})
	e2e.RequireError(t, del, err, http.StatusConflict, "IncorrectState")
	del, err = client.DeleteCompartmentWithResponse(ctx, src.Id, &sdk.DeleteCompartmentParams{})
	e2e.RequireStatus(t, del, err, http.StatusNoContent)

	// Into a compartment that does not exist, or was deleted: nothing moves.
	_, etag = client.QueueWithETag(t, q.Id)
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: "ocid1.compartment.ferry.local." + strings.Repeat("j", 32)})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound", "compartmentId")
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: src.Id})
	e2e.RequireError(t, resp, err, http.StatusConflict, "IncorrectState", "compartmentId")
	got, gotEtag := client.QueueWithETag(t, q.Id)
	require.Equal(t, dst.Id, got.CompartmentId)
	require.Equal(t, etag, gotEtag)

	// Back to the root; a queue that does not exist.
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{},
		sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyID})
	e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	require.Equal(t, tenancyID, resp.JSON202.CompartmentId)
	resp, err = client.ChangeQueueCompartmentWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("k", 32),
		&sdk.ChangeQueueCompartmentParams{}, sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyID})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func TestQueuePurge(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "purged")

	for _, pt := range []sdk.PurgeType{sdk.PurgeTypeNORMAL, sdk.PurgeTypeDLQ, sdk.PurgeTypeBOTH} {
		resp, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: pt})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		require.Empty(t, resp.Body)
		wrID := resp.HTTPResponse.Header.Get("opc-work-request-id")
		require.True(t, strings.HasPrefix(wrID, "ocid1.workrequest."), wrID)
		wr := srv.WaitWorkRequest(t, client, wrID)
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status, "purge %s", pt)
		require.Equal(t, sdk.WorkRequestOperationTypePURGEQUEUE, wr.OperationType)
		require.Equal(t, float32(100), wr.PercentComplete)
		require.Equal(t, q.Id, wr.Resources[0].Identifier)
		require.Equal(t, sdk.WorkRequestResourceActionTypeUPDATED, wr.Resources[0].ActionType)
	}
	// A purge leaves the queue as it was.
	got, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateACTIVE, got.LifecycleState)
	require.Equal(t, q.DisplayName, got.DisplayName)

	resp, err := client.PurgeQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("l", 32), &sdk.PurgeQueueParams{},
		sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL})
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

// TestQueueDeleteRetryAfterFailure: a delete that failed leaves the queue FAILED with "retry the delete" in its
// lifecycleDetails; the retry must be accepted, while other changes stay refused.
func TestQueueDeleteRetryAfterFailure(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "flaky")
	// What the executor does when a delete fails (services/maintenance).
	require.NoError(t, srv.Node.Store().Queues.SetState(ctx, tenancyID, q.Id, "FAILED", "delete failed; retry the delete"))
	failed, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateFAILED, failed.LifecycleState)

	upd, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("x")})
	e2e.RequireError(t, upd, err, http.StatusConflict, "IncorrectState")
	purge, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
	e2e.RequireError(t, purge, err, http.StatusConflict, "IncorrectState")

	wr := srv.WaitWorkRequest(t, client, client.StartQueueDelete(t, q.Id))
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status)
	deleted, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, deleted.LifecycleState)
}

// TestQueueConcurrentDelete: many deletes of one queue at once accept exactly one; the others are refused and no
// second work request exists.
func TestQueueConcurrentDelete(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	q := client.NewNamedQueue(t, tenancyID, "contended")

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
	list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), ResourceId: &q.Id})
	e2e.RequireStatus(t, list, err, http.StatusOK)
	background := e2e.Background(list.JSON200.Items)
	require.Len(t, background, 1)
	srv.WaitWorkRequest(t, client, background[0].Id)
	got, _ := client.QueueWithETag(t, q.Id)
	require.Equal(t, sdk.LifecycleStateDELETED, got.LifecycleState)
}
