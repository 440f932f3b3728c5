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

// The HTTP conventions every control-plane operation follows (DESIGN section 4): if-match, opc-retry-token and
// opc-request-id.

// TestIfMatch covers optimistic concurrency on every operation that takes if-match: a stale etag answers 412
// NoEtagMatch and changes nothing; the current one succeeds.
func TestIfMatch(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	const stale = "0123456789abcdef0123"
	dst := client.NewCompartment(t, tenancyID, "dst")

	t.Run("UpdateCompartment", func(t *testing.T) {
		c := client.NewCompartment(t, tenancyID, "upd")
		before, etag := client.CompartmentWithETag(t, c.Id)
		resp, err := client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: e2e.Ptr(stale)},
			sdk.UpdateCompartmentDetails{Name: e2e.Ptr("changed")})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := client.CompartmentWithETag(t, c.Id)
		require.Equal(t, before, after)
		require.Equal(t, etag, afterEtag)
		resp, err = client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: &etag},
			sdk.UpdateCompartmentDetails{Name: e2e.Ptr("changed")})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		require.Equal(t, "changed", resp.JSON200.Name)
		// The etag the update returned is the current one; the one before it is stale now.
		resp, err = client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: &etag},
			sdk.UpdateCompartmentDetails{Name: e2e.Ptr("again")})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch")
	})
	t.Run("DeleteCompartment", func(t *testing.T) {
		c := client.NewCompartment(t, tenancyID, "del")
		_, etag := client.CompartmentWithETag(t, c.Id)
		resp, err := client.DeleteCompartmentWithResponse(ctx, c.Id, &sdk.DeleteCompartmentParams{IfMatch: e2e.Ptr(stale)})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, _ := client.CompartmentWithETag(t, c.Id)
		require.Equal(t, sdk.LifecycleStateACTIVE, after.LifecycleState)
		resp, err = client.DeleteCompartmentWithResponse(ctx, c.Id, &sdk.DeleteCompartmentParams{IfMatch: &etag})
		e2e.RequireStatus(t, resp, err, http.StatusNoContent)
	})
	t.Run("UpdateQueue", func(t *testing.T) {
		q := client.NewNamedQueue(t, tenancyID, "upd")
		before, etag := client.QueueWithETag(t, q.Id)
		resp, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{IfMatch: e2e.Ptr(stale)},
			sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(99)})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := client.QueueWithETag(t, q.Id)
		require.Equal(t, before, after)
		require.Equal(t, etag, afterEtag)
		resp, err = client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{IfMatch: &etag},
			sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(99)})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		require.Equal(t, 99, resp.JSON202.VisibilityInSeconds)
	})
	t.Run("ChangeQueueCompartment", func(t *testing.T) {
		q := client.NewNamedQueue(t, tenancyID, "mv")
		_, etag := client.QueueWithETag(t, q.Id)
		resp, err := client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{IfMatch: e2e.Ptr(stale)},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, _ := client.QueueWithETag(t, q.Id)
		require.Equal(t, tenancyID, after.CompartmentId)
		resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{IfMatch: &etag},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	})
	t.Run("PurgeQueue", func(t *testing.T) {
		q := client.NewNamedQueue(t, tenancyID, "purge")
		_, etag := client.QueueWithETag(t, q.Id)
		resp, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{IfMatch: e2e.Ptr(stale)},
			sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		require.Empty(t, resp.HTTPResponse.Header.Get("opc-work-request-id"))
		list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), ResourceId: &q.Id})
		e2e.RequireStatus(t, list, err, http.StatusOK)
		require.Empty(t, e2e.Background(list.JSON200.Items))
		resp, err = client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{IfMatch: &etag},
			sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		srv.WaitWorkRequest(t, client, resp.HTTPResponse.Header.Get("opc-work-request-id"))
	})
	t.Run("DeleteQueue", func(t *testing.T) {
		q := client.NewNamedQueue(t, tenancyID, "del")
		_, etag := client.QueueWithETag(t, q.Id)
		resp, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{IfMatch: e2e.Ptr(stale)})
		e2e.RequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := client.QueueWithETag(t, q.Id)
		require.Equal(t, sdk.LifecycleStateACTIVE, after.LifecycleState)
		require.Equal(t, etag, afterEtag)
		resp, err = client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{IfMatch: &etag})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		wr := srv.WaitWorkRequest(t, client, resp.HTTPResponse.Header.Get("opc-work-request-id"))
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status)
	})
}

func TestRetryTokenCreateQueue(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	details := sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "once", VisibilityInSeconds: e2e.Ptr(45)}

	first, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-1")}, details)
	e2e.RequireStatus(t, first, err, http.StatusAccepted)
	// The same token and body: the original result, not a second queue.
	for range 2 {
		again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-1"),
			OpcRequestId: e2e.Ptr("retry-request")}, details)
		e2e.RequireStatus(t, again, err, http.StatusAccepted)
		require.Equal(t, first.JSON202.Id, again.JSON202.Id)
		require.Equal(t, *first.JSON202, *again.JSON202)
		require.Equal(t, first.HTTPResponse.Header.Get("etag"), again.HTTPResponse.Header.Get("etag"))
		require.Equal(t, "retry-request", again.HTTPResponse.Header.Get("opc-request-id"))
	}
	require.Equal(t, []string{first.JSON202.Id}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}))

	// The same token with another body conflicts and creates nothing.
	other := details
	other.DisplayName = "twice"
	conflict, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-1")}, other)
	e2e.RequireError(t, conflict, err, http.StatusConflict, "Conflict", "opc-retry-token")
	require.Len(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}), 1)

	// A failed request does not use up its token: neither a 400 nor a 404.
	bad := details
	bad.RetentionInSeconds = e2e.Ptr(1)
	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-2")}, bad)
	e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "retentionInSeconds")
	missing := details
	missing.CompartmentId = "ocid1.compartment.ferry.local." + strings.Repeat("m", 32)
	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-2")}, missing)
	e2e.RequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	second, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-2")}, other)
	e2e.RequireStatus(t, second, err, http.StatusAccepted)
	require.NotEqual(t, first.JSON202.Id, second.JSON202.Id)
	again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("token-2")}, other)
	e2e.RequireStatus(t, again, err, http.StatusAccepted)
	require.Equal(t, second.JSON202.Id, again.JSON202.Id)
	require.Len(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}), 2)

	// Without a token every create creates.
	for range 2 {
		client.NewNamedQueue(t, tenancyID, "once")
	}
	require.Len(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}), 4)

	// A token belongs to one operation: the same token on another create is a new request.
	comp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{OpcRetryToken: e2e.Ptr("token-1")},
		sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: "c1"})
	e2e.RequireStatus(t, comp, err, http.StatusOK)
	compAgain, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{OpcRetryToken: e2e.Ptr("token-1")},
		sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: "c1"})
	e2e.RequireStatus(t, compAgain, err, http.StatusOK)
	require.Equal(t, comp.JSON200.Id, compAgain.JSON200.Id)
	require.Len(t, client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyID}), 1)

	// Actions replay too: the same purge token answers the same work request.
	q := first.JSON202.Id
	purge := func() *sdk.PurgeQueueResponse {
		resp, err := client.PurgeQueueWithResponse(ctx, q, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL},
			func(_ context.Context, r *http.Request) error { r.Header.Set("opc-retry-token", "purge-1"); return nil })
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
		return resp
	}
	p1, p2 := purge(), purge()
	wrID := p1.HTTPResponse.Header.Get("opc-work-request-id")
	require.NotEmpty(t, wrID)
	require.Equal(t, wrID, p2.HTTPResponse.Header.Get("opc-work-request-id"))
	wrs, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyID), ResourceId: &q})
	e2e.RequireStatus(t, wrs, err, http.StatusOK)
	require.Len(t, e2e.Background(wrs.JSON200.Items), 1)
	srv.WaitWorkRequest(t, client, wrID)
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	q := client.NewNamedQueue(t, tenancyID, "q")
	withID := func(id string) sdk.RequestEditorFn {
		return func(_ context.Context, r *http.Request) error { r.Header.Set("opc-request-id", id); return nil }
	}

	// Echoed on success and on errors.
	get, err := client.GetQueueWithResponse(ctx, q.Id, &sdk.GetQueueParams{OpcRequestId: e2e.Ptr("req-ok")})
	e2e.RequireStatus(t, get, err, http.StatusOK)
	require.Equal(t, "req-ok", get.HTTPResponse.Header.Get("opc-request-id"))

	missing, err := client.GetQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("n", 32), &sdk.GetQueueParams{OpcRequestId: e2e.Ptr("req-404")})
	e2e.RequireError(t, missing, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	require.Equal(t, "req-404", missing.HTTPResponse.Header.Get("opc-request-id"))

	invalid, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRequestId: e2e.Ptr("req-400")},
		sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: ""})
	e2e.RequireError(t, invalid, err, http.StatusBadRequest, "InvalidParameter")
	require.Equal(t, "req-400", invalid.HTTPResponse.Header.Get("opc-request-id"))

	del, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{}, withID("req-202"))
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	require.Equal(t, "req-202", del.HTTPResponse.Header.Get("opc-request-id"))

	for _, tc := range []struct {
		name, token, method, path string
		status                    int
	}{
		{"unauthenticated", "", http.MethodGet, "/20210201/queues/" + q.Id, http.StatusUnauthorized},
		{"unknown route", token, http.MethodGet, "/20210201/nowhere", http.StatusNotFound},
		{"wrong method", token, http.MethodPatch, "/20210201/queues/" + q.Id, http.StatusMethodNotAllowed},
		{"public", "", http.MethodGet, "/healthz", http.StatusOK},
	} {
		resp := srv.Raw(t, tc.token, tc.method, tc.path, "", nil, "opc-request-id", "req-"+tc.name)
		require.Equal(t, tc.status, resp.Status, "%s: %s", tc.name, resp.Body)
		require.Equal(t, "req-"+tc.name, resp.Header.Get("opc-request-id"), tc.name)
	}

	// Generated when absent: present and unique, on success and on errors.
	seen := map[string]bool{}
	for _, path := range []string{"/20210201/queues/" + q.Id, "/20210201/queues/" + q.Id, "/20210201/nowhere", "/20210201/queues/bad"} {
		resp := srv.Raw(t, token, http.MethodGet, path, "", nil)
		id := resp.Header.Get("opc-request-id")
		require.NotEmpty(t, id, path)
		require.False(t, seen[id], "request ids must be unique: %s", id)
		seen[id] = true
	}
	resp := srv.Raw(t, "", http.MethodGet, "/20210201/queues/"+q.Id, "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.Status)
	require.NotEmpty(t, resp.Header.Get("opc-request-id"))
}

// TestRetryTokenConcurrent sends one create with one retry token many times at once: exactly one queue is created;
// every answer is either that queue or 409 (the first request still in progress).
func TestRetryTokenConcurrent(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	const n = 8
	type result struct {
		status int
		id     string
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("same")},
				sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "concurrent"})
			if err != nil {
				return
			}
			results[i].status = resp.StatusCode()
			if resp.JSON202 != nil {
				results[i].id = resp.JSON202.Id
			}
		})
	}
	wg.Wait()
	ids := client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)})
	require.Len(t, ids, 1)
	for _, r := range results {
		switch r.status {
		case http.StatusAccepted:
			require.Equal(t, ids[0], r.id)
		case http.StatusConflict:
		default:
			t.Fatalf("unexpected status %d in %v", r.status, results)
		}
	}
}

// TestRetryTokenAbandoned: a token reserved by a node that died before answering ("in progress" forever) is taken
// over by a retry after a while, instead of answering 409 for 24 hours; a recent one still answers 409.
func TestRetryTokenAbandoned(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := testserver.StartAdmin(t)
	ctx := context.Background()
	reserve := func(token string, age time.Duration) {
		t.Helper()
		_, err := srv.Pool.Exec(ctx, `INSERT INTO idempotency_keys (tenancy_id, operation, token, request_hash, time_created)
			VALUES ($1, 'POST /20210201/queues', $2, '\x00', now() - $3::interval)`, tenancyID, token, age.String())
		require.NoError(t, err)
	}
	reserve("recent", 0)
	reserve("abandoned", 2*time.Minute)
	details := sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "q"}

	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("recent")}, details)
	e2e.RequireError(t, resp, err, http.StatusConflict, "Conflict", "opc-retry-token")

	first, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("abandoned")}, details)
	e2e.RequireStatus(t, first, err, http.StatusAccepted)
	again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("abandoned")}, details)
	e2e.RequireStatus(t, again, err, http.StatusAccepted)
	require.Equal(t, first.JSON202.Id, again.JSON202.Id)
	require.Len(t, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyID)}), 1)
}
