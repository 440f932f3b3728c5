package oci

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/identity"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

// TestConventions: what OCI's SDK relies on across operations. (The work-request flow is testCreateQueue's;
// paging with limit and opc-next-page is in every list operation's test.)
func TestConventions(t *testing.T) {
	t.Parallel()
	e := start(t)
	for name, test := range map[string]func(*testing.T, *env){
		"RetryTokenReplaysCompartment": testRetryTokenCompartment,
		"RetryTokenReplaysQueue":       testRetryTokenQueue,
		"StaleEtag":                    testStaleEtag,
		"NotFound":                     testNotFound,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer failOnPanic(t)
			test(t, e)
		})
	}
}

// testRetryTokenCompartment: the same opc-retry-token twice creates one compartment.
func testRetryTokenCompartment(t *testing.T, e *env) {
	c := ctx(t)
	req := identity.CreateCompartmentRequest{OpcRetryToken: common.String("replay-compartment"),
		CreateCompartmentDetails: identity.CreateCompartmentDetails{CompartmentId: &e.tenancy, Name: common.String("once"),
			Description: common.String("created once")}}
	first, err := e.identity.CreateCompartment(c, req)
	noError(t, first.RawResponse, err)
	again, err := e.identity.CreateCompartment(c, req)
	noError(t, again.RawResponse, err)
	require.Equal(t, first.Id, again.Id)
	require.Equal(t, first.Etag, again.Etag)
	list, err := e.identity.ListCompartments(c, identity.ListCompartmentsRequest{CompartmentId: &e.tenancy, Name: common.String("once")})
	noError(t, list.RawResponse, err)
	require.Len(t, list.Items, 1)
}

// testRetryTokenQueue: the same opc-retry-token twice answers the same work request, which creates one queue.
func testRetryTokenQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	req := queue.CreateQueueRequest{OpcRetryToken: common.String("replay-queue"),
		CreateQueueDetails: queue.CreateQueueDetails{DisplayName: common.String("once"), CompartmentId: &comp}}
	first, err := e.admin.CreateQueue(c, req)
	noError(t, first.RawResponse, err)
	again, err := e.admin.CreateQueue(c, req)
	noError(t, again.RawResponse, err)
	require.NotNil(t, first.OpcWorkRequestId)
	require.NotNil(t, again.OpcWorkRequestId)
	require.Equal(t, first.OpcWorkRequestId, again.OpcWorkRequestId)
	queueID := resourceOf(t, e.awaitWorkRequest(t, first.OpcWorkRequestId), "queue")
	list, err := e.admin.ListQueues(c, queue.ListQueuesRequest{CompartmentId: &comp})
	noError(t, list.RawResponse, err)
	require.Equal(t, []string{queueID}, queueIDs(list.Items))
}

// testStaleEtag: if-match with an etag that is no longer current answers 412 NoEtagMatch and changes nothing.
func testStaleEtag(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, comp)
	got, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, got.RawResponse, err)
	stale := got.Etag
	// Another client changes the queue (and, should the update be asynchronous, waits until it is done).
	upd, err := e.ferry.UpdateQueueWithResponse(c, queueID, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(77)})
	require.NoError(t, err)
	require.Less(t, upd.StatusCode(), 300, "%s", upd.Body)
	if wr := upd.HTTPResponse.Header.Get("opc-work-request-id"); wr != "" {
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, e.srv.WaitWorkRequest(t, e.ferry, wr).Status)
	}
	current, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, current.RawResponse, err)
	requireField(t, 77, current.VisibilityInSeconds)
	require.NotEqual(t, *stale, *current.Etag)

	_, err = e.admin.UpdateQueue(c, queue.UpdateQueueRequest{QueueId: &queueID, IfMatch: stale, RequestMetadata: once(),
		UpdateQueueDetails: queue.UpdateQueueDetails{VisibilityInSeconds: common.Int(5)}})
	requireServiceError(t, err, http.StatusPreconditionFailed, "NoEtagMatch")
	_, err = e.admin.DeleteQueue(c, queue.DeleteQueueRequest{QueueId: &queueID, IfMatch: stale, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusPreconditionFailed, "NoEtagMatch")
	after, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, after.RawResponse, err)
	requireField(t, 77, after.VisibilityInSeconds)
	require.Equal(t, queue.QueueLifecycleStateActive, after.LifecycleState)
}

// testNotFound: another tenancy's resources answer exactly like missing ones, a 404 the SDK parses as a
// ServiceError with the code NotAuthorizedOrNotFound.
func testNotFound(t *testing.T, e *env) {
	c := ctx(t)
	otherTenancy, other := e.srv.Admin(t, "other-"+strings.ToLower(t.Name()))
	theirs := other.NewQueue(t, otherTenancy)
	missing := "ocid1.queue.ferry.local." + strings.Repeat("m", 32)
	for _, id := range []string{theirs, missing} {
		_, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: common.String(id), RequestMetadata: once()})
		requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
		_, err = e.messages(t, e.srv.URL).GetMessages(c, queue.GetMessagesRequest{QueueId: common.String(id),
			TimeoutInSeconds: common.Int(0), RequestMetadata: once()})
		requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	}
	_, err := e.identity.GetCompartment(c, identity.GetCompartmentRequest{CompartmentId: &otherTenancy, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	_, err = e.identity.ListCompartments(c, identity.ListCompartmentsRequest{CompartmentId: &otherTenancy, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}
