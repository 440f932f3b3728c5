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
)

// The HTTP conventions every control-plane operation follows (DESIGN section 4): if-match, opc-retry-token and
// opc-request-id.

// TestIfMatch covers optimistic concurrency on every operation that takes if-match: a stale etag answers 412
// NoEtagMatch and changes nothing; the current one succeeds.
func TestIfMatch(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	const stale = "0123456789abcdef0123"
	dst := cpCreateCompartment(t, client, tenancyID, "dst")

	t.Run("UpdateCompartment", func(t *testing.T) {
		c := cpCreateCompartment(t, client, tenancyID, "upd")
		before, etag := cpGetCompartment(t, client, c.Id)
		resp, err := client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: cpPtr(stale)},
			sdk.UpdateCompartmentDetails{Name: cpPtr("changed")})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := cpGetCompartment(t, client, c.Id)
		require.Equal(t, before, after)
		require.Equal(t, etag, afterEtag)
		resp, err = client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: &etag},
			sdk.UpdateCompartmentDetails{Name: cpPtr("changed")})
		cpRequireStatus(t, resp, err, http.StatusOK)
		require.Equal(t, "changed", resp.JSON200.Name)
		// The etag the update returned is the current one; the one before it is stale now.
		resp, err = client.UpdateCompartmentWithResponse(ctx, c.Id, &sdk.UpdateCompartmentParams{IfMatch: &etag},
			sdk.UpdateCompartmentDetails{Name: cpPtr("again")})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch")
	})
	t.Run("DeleteCompartment", func(t *testing.T) {
		c := cpCreateCompartment(t, client, tenancyID, "del")
		_, etag := cpGetCompartment(t, client, c.Id)
		resp, err := client.DeleteCompartmentWithResponse(ctx, c.Id, &sdk.DeleteCompartmentParams{IfMatch: cpPtr(stale)})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, _ := cpGetCompartment(t, client, c.Id)
		require.Equal(t, sdk.LifecycleStateACTIVE, after.LifecycleState)
		resp, err = client.DeleteCompartmentWithResponse(ctx, c.Id, &sdk.DeleteCompartmentParams{IfMatch: &etag})
		cpRequireStatus(t, resp, err, http.StatusNoContent)
	})
	t.Run("UpdateQueue", func(t *testing.T) {
		q := cpCreateQueue(t, client, tenancyID, "upd")
		before, etag := cpGetQueue(t, client, q.Id)
		resp, err := client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{IfMatch: cpPtr(stale)},
			sdk.UpdateQueueDetails{VisibilityInSeconds: cpPtr(99)})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := cpGetQueue(t, client, q.Id)
		require.Equal(t, before, after)
		require.Equal(t, etag, afterEtag)
		resp, err = client.UpdateQueueWithResponse(ctx, q.Id, &sdk.UpdateQueueParams{IfMatch: &etag},
			sdk.UpdateQueueDetails{VisibilityInSeconds: cpPtr(99)})
		cpRequireStatus(t, resp, err, http.StatusOK)
		require.Equal(t, 99, resp.JSON200.VisibilityInSeconds)
	})
	t.Run("ChangeQueueCompartment", func(t *testing.T) {
		q := cpCreateQueue(t, client, tenancyID, "mv")
		_, etag := cpGetQueue(t, client, q.Id)
		resp, err := client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{IfMatch: cpPtr(stale)},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, _ := cpGetQueue(t, client, q.Id)
		require.Equal(t, tenancyID, after.CompartmentId)
		resp, err = client.ChangeQueueCompartmentWithResponse(ctx, q.Id, &sdk.ChangeQueueCompartmentParams{IfMatch: &etag},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: dst.Id})
		cpRequireStatus(t, resp, err, http.StatusOK)
	})
	t.Run("PurgeQueue", func(t *testing.T) {
		q := cpCreateQueue(t, client, tenancyID, "purge")
		_, etag := cpGetQueue(t, client, q.Id)
		resp, err := client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{IfMatch: cpPtr(stale)},
			sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		require.Empty(t, resp.HTTPResponse.Header.Get("opc-work-request-id"))
		list, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyID, ResourceId: &q.Id})
		cpRequireStatus(t, list, err, http.StatusOK)
		require.Empty(t, list.JSON200.Items)
		resp, err = client.PurgeQueueWithResponse(ctx, q.Id, &sdk.PurgeQueueParams{IfMatch: &etag},
			sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		cpRequireStatus(t, resp, err, http.StatusAccepted)
		cpWaitWorkRequest(t, srv, client, resp.HTTPResponse.Header.Get("opc-work-request-id"))
	})
	t.Run("DeleteQueue", func(t *testing.T) {
		q := cpCreateQueue(t, client, tenancyID, "del")
		_, etag := cpGetQueue(t, client, q.Id)
		resp, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{IfMatch: cpPtr(stale)})
		cpRequireError(t, resp, err, http.StatusPreconditionFailed, "NoEtagMatch", "if-match")
		after, afterEtag := cpGetQueue(t, client, q.Id)
		require.Equal(t, sdk.LifecycleStateACTIVE, after.LifecycleState)
		require.Equal(t, etag, afterEtag)
		resp, err = client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{IfMatch: &etag})
		cpRequireStatus(t, resp, err, http.StatusAccepted)
		wr := cpWaitWorkRequest(t, srv, client, resp.HTTPResponse.Header.Get("opc-work-request-id"))
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, wr.Status)
	})
}

func TestRetryTokenCreateQueue(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	details := sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "once", VisibilityInSeconds: cpPtr(45)}

	first, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-1")}, details)
	cpRequireStatus(t, first, err, http.StatusOK)
	// The same token and body: the original result, not a second queue.
	for range 2 {
		again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-1"),
			OpcRequestId: cpPtr("retry-request")}, details)
		cpRequireStatus(t, again, err, http.StatusOK)
		require.Equal(t, first.JSON200.Id, again.JSON200.Id)
		require.Equal(t, *first.JSON200, *again.JSON200)
		require.Equal(t, first.HTTPResponse.Header.Get("etag"), again.HTTPResponse.Header.Get("etag"))
		require.Equal(t, "retry-request", again.HTTPResponse.Header.Get("opc-request-id"))
	}
	require.Equal(t, []string{first.JSON200.Id}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}))

	// The same token with another body conflicts and creates nothing.
	other := details
	other.DisplayName = "twice"
	conflict, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-1")}, other)
	cpRequireError(t, conflict, err, http.StatusConflict, "Conflict", "opc-retry-token")
	require.Len(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}), 1)

	// A failed request does not use up its token: neither a 400 nor a 404.
	bad := details
	bad.RetentionInSeconds = cpPtr(1)
	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-2")}, bad)
	cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "retentionInSeconds")
	missing := details
	missing.CompartmentId = "ocid1.compartment.ferry.local." + strings.Repeat("m", 32)
	resp, err = client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-2")}, missing)
	cpRequireError(t, resp, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	second, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-2")}, other)
	cpRequireStatus(t, second, err, http.StatusOK)
	require.NotEqual(t, first.JSON200.Id, second.JSON200.Id)
	again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("token-2")}, other)
	cpRequireStatus(t, again, err, http.StatusOK)
	require.Equal(t, second.JSON200.Id, again.JSON200.Id)
	require.Len(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}), 2)

	// Without a token every create creates.
	for range 2 {
		cpCreateQueue(t, client, tenancyID, "once")
	}
	require.Len(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}), 4)

	// A token belongs to one operation: the same token on another create is a new request.
	comp, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{OpcRetryToken: cpPtr("token-1")},
		sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: "c1"})
	cpRequireStatus(t, comp, err, http.StatusOK)
	compAgain, err := client.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{OpcRetryToken: cpPtr("token-1")},
		sdk.CreateCompartmentDetails{CompartmentId: tenancyID, Name: "c1"})
	cpRequireStatus(t, compAgain, err, http.StatusOK)
	require.Equal(t, comp.JSON200.Id, compAgain.JSON200.Id)
	require.Len(t, cpCompartmentIDs(t, client, sdk.ListCompartmentsParams{CompartmentId: tenancyID}), 1)

	// Actions replay too: the same purge token answers the same work request.
	q := first.JSON200.Id
	purge := func() *sdk.PurgeQueueResponse {
		resp, err := client.PurgeQueueWithResponse(ctx, q, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeNORMAL},
			func(_ context.Context, r *http.Request) error { r.Header.Set("opc-retry-token", "purge-1"); return nil })
		cpRequireStatus(t, resp, err, http.StatusAccepted)
		return resp
	}
	p1, p2 := purge(), purge()
	wrID := p1.HTTPResponse.Header.Get("opc-work-request-id")
	require.NotEmpty(t, wrID)
	require.Equal(t, wrID, p2.HTTPResponse.Header.Get("opc-work-request-id"))
	wrs, err := client.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyID, ResourceId: &q})
	cpRequireStatus(t, wrs, err, http.StatusOK)
	require.Len(t, wrs.JSON200.Items, 1)
	cpWaitWorkRequest(t, srv, client, wrID)
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	srv, tenancyID, client := cpStart(t)
	ctx := context.Background()
	token := srv.Token(t, tenancyID, "admin", "Administrators")
	q := cpCreateQueue(t, client, tenancyID, "q")
	withID := func(id string) sdk.RequestEditorFn {
		return func(_ context.Context, r *http.Request) error { r.Header.Set("opc-request-id", id); return nil }
	}

	// Echoed on success and on errors.
	get, err := client.GetQueueWithResponse(ctx, q.Id, &sdk.GetQueueParams{OpcRequestId: cpPtr("req-ok")})
	cpRequireStatus(t, get, err, http.StatusOK)
	require.Equal(t, "req-ok", get.HTTPResponse.Header.Get("opc-request-id"))

	missing, err := client.GetQueueWithResponse(ctx, "ocid1.queue.ferry.local."+strings.Repeat("n", 32), &sdk.GetQueueParams{OpcRequestId: cpPtr("req-404")})
	cpRequireError(t, missing, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	require.Equal(t, "req-404", missing.HTTPResponse.Header.Get("opc-request-id"))

	invalid, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRequestId: cpPtr("req-400")},
		sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: ""})
	cpRequireError(t, invalid, err, http.StatusBadRequest, "InvalidParameter")
	require.Equal(t, "req-400", invalid.HTTPResponse.Header.Get("opc-request-id"))

	del, err := client.DeleteQueueWithResponse(ctx, q.Id, &sdk.DeleteQueueParams{}, withID("req-202"))
	cpRequireStatus(t, del, err, http.StatusAccepted)
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
		resp := cpRaw(t, srv, tc.token, tc.method, tc.path, "", nil, "opc-request-id", "req-"+tc.name)
		require.Equal(t, tc.status, resp.Status, "%s: %s", tc.name, resp.Body)
		require.Equal(t, "req-"+tc.name, resp.Header.Get("opc-request-id"), tc.name)
	}

	// Generated when absent: present and unique, on success and on errors.
	seen := map[string]bool{}
	for _, path := range []string{"/20210201/queues/" + q.Id, "/20210201/queues/" + q.Id, "/20210201/nowhere", "/20210201/queues/bad"} {
		resp := cpRaw(t, srv, token, http.MethodGet, path, "", nil)
		id := resp.Header.Get("opc-request-id")
		require.NotEmpty(t, id, path)
		require.False(t, seen[id], "request ids must be unique: %s", id)
		seen[id] = true
	}
	resp := cpRaw(t, srv, "", http.MethodGet, "/20210201/queues/"+q.Id, "", nil)
	require.Equal(t, http.StatusUnauthorized, resp.Status)
	require.NotEmpty(t, resp.Header.Get("opc-request-id"))
}

// TestRetryTokenConcurrent sends one create with one retry token many times at once: exactly one queue is created;
// every answer is either that queue or 409 (the first request still in progress).
func TestRetryTokenConcurrent(t *testing.T) {
	t.Parallel()
	_, tenancyID, client := cpStart(t)
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
			resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("same")},
				sdk.CreateQueueDetails{CompartmentId: tenancyID, DisplayName: "concurrent"})
			if err != nil {
				return
			}
			results[i].status = resp.StatusCode()
			if resp.JSON200 != nil {
				results[i].id = resp.JSON200.Id
			}
		})
	}
	wg.Wait()
	ids := cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID})
	require.Len(t, ids, 1)
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
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
	srv, tenancyID, client := cpStart(t)
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

	resp, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("recent")}, details)
	cpRequireError(t, resp, err, http.StatusConflict, "Conflict", "opc-retry-token")

	first, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("abandoned")}, details)
	cpRequireStatus(t, first, err, http.StatusOK)
	again, err := client.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{OpcRetryToken: cpPtr("abandoned")}, details)
	cpRequireStatus(t, again, err, http.StatusOK)
	require.Equal(t, first.JSON200.Id, again.JSON200.Id)
	require.Len(t, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tenancyID}), 1)
}
