package oci

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"
	"github.com/oracle/oci-go-sdk/v65/queue"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/tests/e2e"
)

// adminOperations are queue.QueueAdminClient's operations (queues here, work requests and consumer groups in
// their files).
var adminOperations = map[string]func(*testing.T, *env){
	"CreateQueue":            testCreateQueue,
	"GetQueue":               testGetQueue,
	"ListQueues":             testListQueues,
	"UpdateQueue":            testUpdateQueue,
	"DeleteQueue":            testDeleteQueue,
	"ChangeQueueCompartment": testChangeQueueCompartment,
	"PurgeQueue":             testPurgeQueue,
	"GetWorkRequest":         testGetWorkRequest,
	"ListWorkRequests":       testListWorkRequests,
	"ListWorkRequestErrors":  testListWorkRequestErrors,
	"ListWorkRequestLogs":    testListWorkRequestLogs,
	"CreateConsumerGroup":    testCreateConsumerGroup,
	"GetConsumerGroup":       testGetConsumerGroup,
	"ListConsumerGroups":     testListConsumerGroups,
	"UpdateConsumerGroup":    testUpdateConsumerGroup,
	"DeleteConsumerGroup":    testDeleteConsumerGroup,
}

func TestQueueAdminClient(t *testing.T) {
	t.Parallel()
	runOperations(t, start(t), adminOperations)
}

// testCreateQueue is OCI's work-request flow: CreateQueue answers only a work request id; the queue's id is the
// work request's resource once it has succeeded.
func testCreateQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	resp, err := e.admin.CreateQueue(c, queue.CreateQueueRequest{CreateQueueDetails: queue.CreateQueueDetails{
		DisplayName: common.String("orders"), CompartmentId: &comp,
		RetentionInSeconds: common.Int(3600), VisibilityInSeconds: common.Int(45), TimeoutInSeconds: common.Int(5),
		ChannelConsumptionLimit: common.Int(50), DeadLetterQueueDeliveryCount: common.Int(3),
		FreeformTags: map[string]string{"team": "orders"},
		Capabilities: []queue.CapabilityDetails{
			queue.ConsumerGroupsCapabilityDetails{IsPrimaryConsumerGroupEnabled: common.Bool(true),
				PrimaryConsumerGroupDisplayName: common.String("main"), PrimaryConsumerGroupDeadLetterQueueDeliveryCount: common.Int(2)},
			queue.LargeMessagesCapabilityDetails{},
		},
	}})
	noError(t, resp.RawResponse, err)
	require.NotEmpty(t, *resp.OpcRequestId)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeCreateQueue, w.OperationType)
	requireField(t, comp, w.CompartmentId)
	queueID := resourceOf(t, w, "queue")

	got, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, got.RawResponse, err)
	requireField(t, queueID, got.Id)
	requireField(t, comp, got.CompartmentId)
	requireField(t, "orders", got.DisplayName)
	require.Equal(t, queue.QueueLifecycleStateActive, got.LifecycleState)
	requireField(t, 3600, got.RetentionInSeconds)
	requireField(t, 45, got.VisibilityInSeconds)
	requireField(t, 5, got.TimeoutInSeconds)
	requireField(t, 50, got.ChannelConsumptionLimit)
	requireField(t, 3, got.DeadLetterQueueDeliveryCount)
	require.Equal(t, map[string]string{"team": "orders"}, got.FreeformTags)
	requireField(t, e.srv.URL, got.MessagesEndpoint)
	// The capabilities, as the SDK's polymorphic types, in any order.
	var groups *queue.ConsumerGroupsCapabilityDetails
	large := false
	for _, capability := range got.Capabilities {
		switch d := capability.(type) {
		case queue.ConsumerGroupsCapabilityDetails:
			groups = &d
		case queue.LargeMessagesCapabilityDetails:
			large = true
		}
	}
	require.True(t, large, "LARGE_MESSAGES: %v", got.Capabilities)
	require.NotNil(t, groups, "CONSUMER_GROUPS: %v", got.Capabilities)
	requireField(t, true, groups.IsPrimaryConsumerGroupEnabled)
	requireField(t, "main", groups.PrimaryConsumerGroupDisplayName)
	requireField(t, 2, groups.PrimaryConsumerGroupDeadLetterQueueDeliveryCount)
}

func testGetQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, comp, e2e.WithDLQ(4), e2e.WithVisibility(40), e2e.WithTimeout(2), e2e.WithRetention(7200),
		e2e.WithChannelLimit(25), e2e.WithConsumerGroups(true))
	_, etag := e.ferry.QueueWithETag(t, queueID)

	got, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, got.RawResponse, err)
	requireField(t, queueID, got.Id)
	requireField(t, comp, got.CompartmentId)
	require.NotEmpty(t, *got.DisplayName)
	require.Equal(t, queue.QueueLifecycleStateActive, got.LifecycleState)
	requireField(t, 7200, got.RetentionInSeconds)
	requireField(t, 40, got.VisibilityInSeconds)
	requireField(t, 2, got.TimeoutInSeconds)
	requireField(t, 4, got.DeadLetterQueueDeliveryCount)
	requireField(t, 25, got.ChannelConsumptionLimit)
	requireField(t, e.srv.URL, got.MessagesEndpoint)
	require.NotNil(t, got.TimeCreated)
	require.NotNil(t, got.TimeUpdated)
	requireField(t, etag, got.Etag)
	// The polymorphic capability: {"type":"CONSUMER_GROUPS",…} is the SDK's ConsumerGroupsCapabilityDetails.
	require.Len(t, got.Capabilities, 1)
	groups, ok := got.Capabilities[0].(queue.ConsumerGroupsCapabilityDetails)
	require.True(t, ok, "capability %T", got.Capabilities[0])
	require.Equal(t, common.Bool(true), groups.IsPrimaryConsumerGroupEnabled)
}

func testListQueues(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	var ids []string
	for _, name := range []string{"b", "c", "a"} {
		ids = append(ids, e.ferry.NewNamedQueue(t, comp, name).Id)
	}
	withGroups := e.ferry.NewQueue(t, comp, e2e.WithConsumerGroups(true))

	// Pages of 2, newest first.
	req := queue.ListQueuesRequest{CompartmentId: &comp, Limit: common.Int(2)}
	var listed []string
	var summaries []queue.QueueSummary
	for pages := 1; ; pages++ {
		resp, err := e.admin.ListQueues(c, req)
		noError(t, resp.RawResponse, err)
		require.LessOrEqual(t, len(resp.Items), 2)
		for _, s := range resp.Items {
			listed = append(listed, *s.Id)
			summaries = append(summaries, s)
		}
		if resp.OpcNextPage == nil {
			require.Equal(t, 2, pages)
			break
		}
		req.Page = resp.OpcNextPage
	}
	require.Equal(t, []string{withGroups, ids[2], ids[1], ids[0]}, listed)
	for _, s := range summaries {
		requireField(t, comp, s.CompartmentId)
		require.Equal(t, queue.QueueLifecycleStateActive, s.LifecycleState)
		requireField(t, e.srv.URL, s.MessagesEndpoint)
	}
	// A summary's capabilities are the capabilities' names (not the objects a Queue has).
	require.Equal(t, []queue.QueueCapabilityEnum{queue.QueueCapabilityConsumerGroups}, summaries[0].Capabilities)
	require.Empty(t, summaries[1].Capabilities)

	// Sorted by name; by display name; by id alone, without a compartment, as OCI allows.
	resp, err := e.admin.ListQueues(c, queue.ListQueuesRequest{CompartmentId: &comp, DisplayName: common.String("a")})
	noError(t, resp.RawResponse, err)
	require.Equal(t, []string{ids[2]}, queueIDs(resp.Items))
	resp, err = e.admin.ListQueues(c, queue.ListQueuesRequest{CompartmentId: &comp, SortBy: queue.ListQueuesSortByDisplayname,
		SortOrder: queue.ListQueuesSortOrderAsc, LifecycleState: queue.QueueLifecycleStateActive})
	noError(t, resp.RawResponse, err)
	names := e2e.Map(resp.Items, func(s queue.QueueSummary) string { return *s.DisplayName })
	require.True(t, slices.IsSorted(names), "%v", names)
	require.Subset(t, names, []string{"a", "b", "c"})
	resp, err = e.admin.ListQueues(c, queue.ListQueuesRequest{Id: &ids[1]})
	noError(t, resp.RawResponse, err)
	require.Equal(t, []string{ids[1]}, queueIDs(resp.Items))
}

func queueIDs(items []queue.QueueSummary) []string {
	return e2e.Map(items, func(s queue.QueueSummary) string { return *s.Id })
}

func testUpdateQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, comp)
	before, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, before.RawResponse, err)

	resp, err := e.admin.UpdateQueue(c, queue.UpdateQueueRequest{QueueId: &queueID, IfMatch: before.Etag,
		UpdateQueueDetails: queue.UpdateQueueDetails{DisplayName: common.String("renamed"), VisibilityInSeconds: common.Int(90),
			TimeoutInSeconds: common.Int(3), DeadLetterQueueDeliveryCount: common.Int(6), ChannelConsumptionLimit: common.Int(10),
			FreeformTags: map[string]string{"state": "updated"}}})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeUpdateQueue, w.OperationType)
	require.Equal(t, queueID, resourceOf(t, w, "queue"))

	after, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, after.RawResponse, err)
	requireField(t, "renamed", after.DisplayName)
	requireField(t, 90, after.VisibilityInSeconds)
	requireField(t, 3, after.TimeoutInSeconds)
	requireField(t, 6, after.DeadLetterQueueDeliveryCount)
	requireField(t, 10, after.ChannelConsumptionLimit)
	require.Equal(t, map[string]string{"state": "updated"}, after.FreeformTags)
	require.Equal(t, before.RetentionInSeconds, after.RetentionInSeconds)
	require.NotEqual(t, *before.Etag, *after.Etag)
}

func testDeleteQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, comp)
	got, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, got.RawResponse, err)

	resp, err := e.admin.DeleteQueue(c, queue.DeleteQueueRequest{QueueId: &queueID, IfMatch: got.Etag})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeDeleteQueue, w.OperationType)
	require.Equal(t, queueID, resourceOf(t, w, "queue"))

	// Gone: 404, or (as OCI answers for a while) the queue as DELETED.
	after, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID, RequestMetadata: once()})
	if err != nil {
		requireServiceError(t, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	} else {
		require.Equal(t, queue.QueueLifecycleStateDeleted, after.LifecycleState)
	}
}

func testChangeQueueCompartment(t *testing.T, e *env) {
	c, from, to := ctx(t), e.compartment(t), e.compartment(t)
	queueID := e.ferry.NewQueue(t, from)

	resp, err := e.admin.ChangeQueueCompartment(c, queue.ChangeQueueCompartmentRequest{QueueId: &queueID,
		ChangeQueueCompartmentDetails: queue.ChangeQueueCompartmentDetails{CompartmentId: &to}})
	noError(t, resp.RawResponse, err)
	w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
	require.Equal(t, queue.OperationTypeMoveQueue, w.OperationType)
	require.Equal(t, queueID, resourceOf(t, w, "queue"))

	got, err := e.admin.GetQueue(c, queue.GetQueueRequest{QueueId: &queueID})
	noError(t, got.RawResponse, err)
	requireField(t, to, got.CompartmentId)
	list, err := e.admin.ListQueues(c, queue.ListQueuesRequest{CompartmentId: &from})
	noError(t, list.RawResponse, err)
	require.Empty(t, list.Items)
}

// testPurgeQueue purges by channel, by consumer group, then everything.
func testPurgeQueue(t *testing.T, e *env) {
	c, comp := ctx(t), e.compartment(t)
	purge := func(queueID string, d queue.PurgeQueueDetails) {
		t.Helper()
		resp, err := e.admin.PurgeQueue(c, queue.PurgeQueueRequest{QueueId: &queueID, PurgeQueueDetails: d})
		noError(t, resp.RawResponse, err)
		w := e.awaitWorkRequest(t, resp.OpcWorkRequestId)
		require.Equal(t, queue.OperationTypePurgeQueue, w.OperationType)
		require.Equal(t, queueID, resourceOf(t, w, "queue"))
	}

	// One channel of a queue.
	channels := e.ferry.NewQueue(t, comp)
	e.ferry.Put(t, channels, e2e.MsgOn("a1", "a"), e2e.MsgOn("a2", "a"), e2e.MsgOn("b1", "b"))
	purge(channels, queue.PurgeQueueDetails{PurgeType: queue.PurgeQueueDetailsPurgeTypeNormal, ChannelIds: []string{"a"}})
	require.Equal(t, int64(0), e.ferry.StatsOf(t, channels, "a").Queue.VisibleMessages)
	require.Equal(t, int64(1), e.ferry.StatsOf(t, channels, "b").Queue.VisibleMessages)

	// One consumer group of a queue (the primary group's OCID is the queue's).
	groups := e.ferry.NewQueue(t, comp, e2e.WithConsumerGroups(true))
	audit := e.ferry.NewGroup(t, groups, "audit", "")
	e.ferry.Put(t, groups, e2e.Msg("m1"), e2e.Msg("m2"))
	require.Equal(t, int64(2), e.ferry.GroupStats(t, groups, audit.Id).Queue.VisibleMessages)
	purge(groups, queue.PurgeQueueDetails{PurgeType: queue.PurgeQueueDetailsPurgeTypeNormal, ConsumerGroupId: &audit.Id})
	require.Equal(t, int64(0), e.ferry.GroupStats(t, groups, audit.Id).Queue.VisibleMessages)
	require.Equal(t, int64(2), e.ferry.GroupStats(t, groups, groups).Queue.VisibleMessages, "the primary group keeps its copies")

	// Everything.
	purge(groups, queue.PurgeQueueDetails{PurgeType: queue.PurgeQueueDetailsPurgeTypeBoth})
	require.Equal(t, int64(0), e.ferry.GroupStats(t, groups, groups).Queue.VisibleMessages)
}

// groupResource is the consumer group a work request acted on, whatever entityType names it.
func groupResource(t *testing.T, w queue.WorkRequest) string {
	t.Helper()
	for _, r := range w.Resources {
		if r.Identifier != nil && strings.HasPrefix(*r.Identifier, "ocid1.consumergroup.") {
			return *r.Identifier
		}
	}
	require.Failf(t, "no consumer group", "work request %s: %v", *w.Id, w.Resources)
	return ""
}
