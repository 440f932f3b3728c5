package oci

import (
	"net/http"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// finishedPurge starts a purge of a new queue through ferry's SDK and waits until it has succeeded: a work
// request whose queue-side operations are not under test.
func (e *env) finishedPurge(t *testing.T, compartmentID string) (workRequestID, queueID string) {
	t.Helper()
	queueID = e.ferry.NewQueue(t, compartmentID)
	workRequestID = e.ferry.StartPurge(t, queueID, sdk.PurgeTypeNORMAL)
	require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, e.srv.WaitWorkRequest(t, e.ferry, workRequestID).Status)
	return workRequestID, queueID
}

func testGetWorkRequest(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	id, queueID := e.finishedPurge(t, comp)

	resp, err := e.admin.GetWorkRequest(c, queue.GetWorkRequestRequest{WorkRequestId: &id})
	noError(t, resp.RawResponse, err)
	w := resp.WorkRequest
	requireField(t, id, w.Id)
	require.Equal(t, queue.OperationTypePurgeQueue, w.OperationType)
	require.Equal(t, queue.OperationStatusSucceeded, w.Status)
	requireField(t, comp, w.CompartmentId)
	require.InDelta(t, 100, *w.PercentComplete, 0)
	require.NotNil(t, w.TimeAccepted)
	require.NotNil(t, w.TimeStarted)
	require.NotNil(t, w.TimeFinished)
	require.False(t, w.TimeFinished.Before(w.TimeAccepted.Time))
	require.Len(t, w.Resources, 1)
	r := w.Resources[0]
	requireField(t, queueID, r.Identifier)
	require.True(t, strings.EqualFold("queue", *r.EntityType), *r.EntityType)
	require.NotEmpty(t, r.ActionType)
	require.Contains(t, *r.EntityUri, queueID)

	_, err = e.admin.GetWorkRequest(c, queue.GetWorkRequestRequest{WorkRequestId: common.String("ocid1.workrequest.ferry.local." + strings.Repeat("w", 32)),
		RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func testListWorkRequests(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, comp)
	var purges []string
	for range 3 {
		id := e.ferry.StartPurge(t, queueID, sdk.PurgeTypeNORMAL)
		require.Equal(t, sdk.WorkRequestStatusSUCCEEDED, e.srv.WaitWorkRequest(t, e.ferry, id).Status)
		purges = append([]string{id}, purges...) // newest first
	}

	// Every page of 2, newest first: the purges, then whatever created the queue (when creating is a work request).
	req := queue.ListWorkRequestsRequest{CompartmentId: &comp, Limit: common.Int(2)}
	var listed []queue.WorkRequestSummary
	pages := 0
	for {
		resp, err := e.admin.ListWorkRequests(c, req)
		noError(t, resp.RawResponse, err)
		pages++
		require.LessOrEqual(t, len(resp.Items), 2)
		listed = append(listed, resp.Items...)
		if resp.OpcNextPage == nil {
			break
		}
		req.Page = resp.OpcNextPage
		require.Less(t, pages, 10)
	}
	require.GreaterOrEqual(t, len(listed), 3)
	require.Equal(t, (len(listed)+1)/2, pages)
	for i, w := range listed {
		requireField(t, comp, w.CompartmentId)
		require.Equal(t, queue.OperationStatusSucceeded, w.Status)
		require.Len(t, w.Resources, 1)
		requireField(t, queueID, w.Resources[0].Identifier)
		if i < len(purges) {
			requireField(t, purges[i], w.Id)
			require.Equal(t, queue.OperationTypePurgeQueue, w.OperationType)
		} else {
			require.Equal(t, queue.OperationTypeCreateQueue, w.OperationType)
		}
	}

	// One work request by its id.
	resp, err := e.admin.ListWorkRequests(c, queue.ListWorkRequestsRequest{CompartmentId: &comp, WorkRequestId: &purges[1]})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Items, 1)
	requireField(t, purges[1], resp.Items[0].Id)
}

func testListWorkRequestErrors(t *testing.T, e *env) {
	c := ctx(t)
	id, _ := e.finishedPurge(t, e.compartment(t))

	resp, err := e.admin.ListWorkRequestErrors(c, queue.ListWorkRequestErrorsRequest{WorkRequestId: &id})
	noError(t, resp.RawResponse, err)
	require.NotNil(t, resp.Items, "a collection, empty for a work request that succeeded")
	require.Empty(t, resp.Items)
	require.Nil(t, resp.OpcNextPage)

	_, err = e.admin.ListWorkRequestErrors(c, queue.ListWorkRequestErrorsRequest{
		WorkRequestId: common.String("ocid1.workrequest.ferry.local." + strings.Repeat("w", 32)), RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}

func testListWorkRequestLogs(t *testing.T, e *env) {
	c := ctx(t)
	id, _ := e.finishedPurge(t, e.compartment(t))

	resp, err := e.admin.ListWorkRequestLogs(c, queue.ListWorkRequestLogsRequest{WorkRequestId: &id})
	noError(t, resp.RawResponse, err)
	require.NotEmpty(t, resp.Items, "a work request that ran has logged its progress")
	for _, entry := range resp.Items {
		require.NotEmpty(t, *entry.Message)
		require.NotNil(t, entry.Timestamp)
	}
	// One entry per page.
	first, err := e.admin.ListWorkRequestLogs(c, queue.ListWorkRequestLogsRequest{WorkRequestId: &id, Limit: common.Int(1)})
	noError(t, first.RawResponse, err)
	require.Len(t, first.Items, 1)
	require.Equal(t, resp.Items[0].Message, first.Items[0].Message)
	require.Equal(t, len(resp.Items) > 1, first.OpcNextPage != nil)

	_, err = e.admin.ListWorkRequestLogs(c, queue.ListWorkRequestLogsRequest{
		WorkRequestId: common.String("ocid1.workrequest.ferry.local." + strings.Repeat("w", 32)), RequestMetadata: once()})
	requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
}
