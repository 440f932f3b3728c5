package oci

import (
	"net/http"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
)

const auditFilter = `:type = "audit"`

func testCreateConsumerGroup(t *testing.T, e *env) {
	c := ctx(t)
	queueID := e.ferry.NewQueue(t, e.compartment(t), e2e.WithConsumerGroups(true))

	resp, err := e.admin.CreateConsumerGroup(c, queue.CreateConsumerGroupRequest{CreateConsumerGroupDetails: queue.CreateConsumerGroupDetails{
		DisplayName: common.String("audit"), QueueId: &queueID, Filter: common.String(auditFilter), IsEnabled: common.Bool(true),
		DeadLetterQueueDeliveryCount: common.Int(5), FreeformTags: map[string]string{"team": "audit"},
	}})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeCreateConsumerGroup, w.OperationType)
	groupID := groupResource(t, w)

	got, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &groupID})
	noError(t, got.RawResponse, err)
	requireField(t, groupID, got.Id)
	requireField(t, queueID, got.QueueId)
	requireField(t, "audit", got.DisplayName)
	requireField(t, auditFilter, got.Filter)
	requireField(t, 5, got.DeadLetterQueueDeliveryCount)
	require.Equal(t, queue.ConsumerGroupLifecycleStateActive, got.LifecycleState)
	require.Equal(t, map[string]string{"team": "audit"}, got.FreeformTags)
}

func testGetConsumerGroup(t *testing.T, e *env) {
	c := ctx(t)
	queueID := e.ferry.NewQueue(t, e.compartment(t), e2e.WithConsumerGroups(true))
	created := e.ferry.NewGroup(t, queueID, "audit", auditFilter, e2e.GroupDLQ(4))

	got, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &created.Id})
	noError(t, got.RawResponse, err)
	requireField(t, created.Id, got.Id)
	requireField(t, queueID, got.QueueId)
	requireField(t, "audit", got.DisplayName)
	requireField(t, auditFilter, got.Filter)
	requireField(t, 4, got.DeadLetterQueueDeliveryCount)
	require.Equal(t, queue.ConsumerGroupLifecycleStateActive, got.LifecycleState)
	require.NotNil(t, got.TimeCreated)
	require.NotNil(t, got.TimeUpdated)
	require.NotEmpty(t, *got.Etag)

	// The primary group: the queue's OCID, no filter.
	primary, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &queueID})
	noError(t, primary.RawResponse, err)
	requireField(t, queueID, primary.Id)
	requireField(t, "", primary.Filter)
}

func testListConsumerGroups(t *testing.T, e *env) {
	c := ctx(t)
	queueID := e.ferry.NewQueue(t, e.compartment(t), e2e.WithConsumerGroups(true))
	ids := []string{queueID} // the primary group, created with the queue
	for _, name := range []string{"b", "c", "a"} {
		ids = append(ids, e.ferry.NewGroup(t, queueID, name, auditFilter).Id)
	}

	req := queue.ListConsumerGroupsRequest{QueueId: &queueID, Limit: common.Int(3), SortOrder: queue.ListConsumerGroupsSortOrderAsc}
	var listed []string
	for pages := 1; ; pages++ {
		resp, err := e.admin.ListConsumerGroups(c, req)
		noError(t, resp.RawResponse, err)
		require.LessOrEqual(t, len(resp.Items), 3)
		for _, g := range resp.Items {
			listed = append(listed, *g.Id)
			requireField(t, queueID, g.QueueId)
			require.Equal(t, queue.ConsumerGroupLifecycleStateActive, g.LifecycleState)
			if *g.Id != queueID {
				requireField(t, auditFilter, g.Filter)
			}
		}
		if resp.OpcNextPage == nil {
			require.Equal(t, 2, pages)
			break
		}
		req.Page = resp.OpcNextPage
	}
	require.Equal(t, ids, listed, "oldest first")

	resp, err := e.admin.ListConsumerGroups(c, queue.ListConsumerGroupsRequest{QueueId: &queueID, DisplayName: common.String("a")})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Items, 1)
	requireField(t, ids[3], resp.Items[0].Id)
	resp, err = e.admin.ListConsumerGroups(c, queue.ListConsumerGroupsRequest{QueueId: &queueID, Id: &ids[1]})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Items, 1)
	requireField(t, "b", resp.Items[0].DisplayName)
	resp, err = e.admin.ListConsumerGroups(c, queue.ListConsumerGroupsRequest{QueueId: &queueID,
		SortBy: queue.ListConsumerGroupsSortByDisplayname, LifecycleState: queue.ConsumerGroupLifecycleStateActive})
	noError(t, resp.RawResponse, err)
	require.Len(t, resp.Items, 4)
	requireField(t, "a", resp.Items[0].DisplayName)
}

func testUpdateConsumerGroup(t *testing.T, e *env) {
	c := ctx(t)
	queueID := e.ferry.NewQueue(t, e.compartment(t), e2e.WithConsumerGroups(true))
	created := e.ferry.NewGroup(t, queueID, "audit", auditFilter)
	before, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &created.Id})
	noError(t, before.RawResponse, err)

	resp, err := e.admin.UpdateConsumerGroup(c, queue.UpdateConsumerGroupRequest{ConsumerGroupId: &created.Id, IfMatch: before.Etag,
		UpdateConsumerGroupDetails: queue.UpdateConsumerGroupDetails{DisplayName: common.String("security"),
			Filter: common.String(`:type = "security"`), IsEnabled: common.Bool(false), DeadLetterQueueDeliveryCount: common.Int(2),
			FreeformTags: map[string]string{"team": "security"}}})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeUpdateConsumerGroup, w.OperationType)
	require.Equal(t, created.Id, groupResource(t, w))

	after, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &created.Id})
	noError(t, after.RawResponse, err)
	requireField(t, "security", after.DisplayName)
	requireField(t, `:type = "security"`, after.Filter)
	requireField(t, 2, after.DeadLetterQueueDeliveryCount)
	require.Equal(t, map[string]string{"team": "security"}, after.FreeformTags)
	require.NotEqual(t, *before.Etag, *after.Etag)
	// OCI's ConsumerGroup does not show isEnabled: ferry's own API does.
	native, err := e.ferry.GetConsumerGroupWithResponse(c, created.Id, &sdk.GetConsumerGroupParams{})
	e2e.RequireStatus(t, native, err, http.StatusOK)
	require.False(t, native.JSON200.IsEnabled)
}

func testDeleteConsumerGroup(t *testing.T, e *env) {
	c := ctx(t)
	queueID := e.ferry.NewQueue(t, e.compartment(t), e2e.WithConsumerGroups(true))
	created := e.ferry.NewGroup(t, queueID, "audit", auditFilter)

	resp, err := e.admin.DeleteConsumerGroup(c, queue.DeleteConsumerGroupRequest{ConsumerGroupId: &created.Id})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeDeleteConsumerGroup, w.OperationType)
	require.Equal(t, created.Id, groupResource(t, w))

	after, err := e.admin.GetConsumerGroup(c, queue.GetConsumerGroupRequest{ConsumerGroupId: &created.Id, RequestMetadata: once()})
	if err != nil {
		requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	} else {
		require.Equal(t, queue.ConsumerGroupLifecycleStateDeleted, after.LifecycleState)
	}
	list, err := e.admin.ListConsumerGroups(c, queue.ListConsumerGroupsRequest{QueueId: &queueID})
	noError(t, list.RawResponse, err)
	require.Len(t, list.Items, 1, "the primary group is left")

	// The primary group cannot be deleted.
	_, err = e.admin.DeleteConsumerGroup(c, queue.DeleteConsumerGroupRequest{ConsumerGroupId: &queueID, RequestMetadata: once()})
	requireServiceError(t, err, http.StatusConflict, "IncorrectState")
}
