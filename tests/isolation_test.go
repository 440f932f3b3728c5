package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// isolationSnapshot is everything tenancy A can read about its own resources; it must not change while tenancy B
// tries to reach them.
type isolationSnapshot struct {
	Compartments     map[string]sdk.Compartment
	CompartmentEtags map[string]string
	Queues           map[string]sdk.Queue
	QueueEtags       map[string]string
	WorkRequest      sdk.WorkRequest
	ConsumerGroups   map[string]sdk.ConsumerGroup
	ListedGroups     []string
	ListedQueues     []string
	ListedComps      []string
	ListedWork       []string
}

// TestTenantIsolation calls every control-plane operation with tenancy B's administrator token on tenancy A's
// resources. Each must answer 404 NotAuthorizedOrNotFound, exactly like a resource that does not exist, and leave
// A's resources as they were. Add a row to calls for every new endpoint.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	srv, tenancyA, clientA := testserver.StartAdmin(t)
	tenancyB, clientB := srv.Admin(t, "tenancy-b")
	ctx := context.Background()

	// Tenancy A: a compartment with a queue, an empty compartment, a second queue, a queue with consumer groups
	// and one group besides the primary, and a finished work request.
	compA := clientA.NewCompartment(t, tenancyA, "a-team")
	emptyA := clientA.NewCompartment(t, tenancyA, "a-empty")
	queueA := clientA.NewNamedQueue(t, compA.Id, "a-orders")
	queueA2 := clientA.NewNamedQueue(t, tenancyA, "a-invoices")
	fanout, err := clientA.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId: compA.Id, DisplayName: "a-fanout",
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: e2e.Ptr(true)}},
	})
	e2e.RequireStatus(t, fanout, err, http.StatusAccepted)
	fanoutA := *fanout.JSON202
	group, err := clientA.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: fanoutA.Id, DisplayName: "a-audit",
	})
	e2e.RequireStatus(t, group, err, http.StatusAccepted)
	groupA := *group.JSON202
	purge, err := clientA.PurgeQueueWithResponse(ctx, queueA.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
	e2e.RequireStatus(t, purge, err, http.StatusAccepted)
	workA := srv.WaitWorkRequest(t, clientA, purge.HTTPResponse.Header.Get("opc-work-request-id"))

	// Tenancy B: its own compartment and queue, used as the other end of moves.
	compB := clientB.NewCompartment(t, tenancyB, "b-team")
	queueB := clientB.NewNamedQueue(t, compB.Id, "b-orders")

	snapshot := func() isolationSnapshot {
		t.Helper()
		s := isolationSnapshot{Compartments: map[string]sdk.Compartment{}, CompartmentEtags: map[string]string{},
			Queues: map[string]sdk.Queue{}, QueueEtags: map[string]string{}, ConsumerGroups: map[string]sdk.ConsumerGroup{}}
		for _, id := range []string{tenancyA, compA.Id, emptyA.Id} {
			s.Compartments[id], s.CompartmentEtags[id] = clientA.CompartmentWithETag(t, id)
		}
		for _, id := range []string{queueA.Id, queueA2.Id, fanoutA.Id} {
			s.Queues[id], s.QueueEtags[id] = clientA.QueueWithETag(t, id)
		}
		for _, id := range []string{groupA.Id, fanoutA.Id} { // a group, and the primary group
			g, err := clientA.GetConsumerGroupWithResponse(ctx, id, &sdk.GetConsumerGroupParams{})
			e2e.RequireStatus(t, g, err, http.StatusOK)
			s.ConsumerGroups[id] = *g.JSON200
		}
		groups, err := clientA.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: fanoutA.Id})
		e2e.RequireStatus(t, groups, err, http.StatusOK)
		for _, g := range groups.JSON200.Items {
			s.ListedGroups = append(s.ListedGroups, g.Id)
		}
		wr, err := clientA.GetWorkRequestWithResponse(ctx, workA.Id, &sdk.GetWorkRequestParams{})
		e2e.RequireStatus(t, wr, err, http.StatusOK)
		s.WorkRequest = *wr.JSON200
		s.ListedQueues = clientA.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyA), CompartmentIdInSubtree: e2e.Ptr(true)})
		s.ListedComps = clientA.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyA, CompartmentIdInSubtree: e2e.Ptr(true)})
		wl, err := clientA.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(compA.Id)})
		e2e.RequireStatus(t, wl, err, http.StatusOK)
		for _, w := range wl.JSON200.Items {
			s.ListedWork = append(s.ListedWork, w.Id)
		}
		return s
	}
	before := snapshot()
	require.Len(t, before.ListedQueues, 3)
	require.Contains(t, before.ListedGroups, groupA.Id)
	require.Len(t, before.ListedComps, 2)
	// The newest is the purge; the others are the work requests of the changes made at once (the creations).
	require.Equal(t, workA.Id, before.ListedWork[0])
	require.Len(t, before.ListedWork, 4)

	// B passes A's real etags, so that only the tenancy can be the reason for a refusal.
	compEtag, queueEtag := before.CompartmentEtags[compA.Id], before.QueueEtags[queueA.Id]
	emptyEtag := before.CompartmentEtags[emptyA.Id]

	calls := []struct {
		name string
		call func() (e2e.Response, error)
	}{
		{"GetCompartment", func() (e2e.Response, error) {
			return clientB.GetCompartmentWithResponse(ctx, compA.Id, &sdk.GetCompartmentParams{})
		}},
		{"GetCompartment root", func() (e2e.Response, error) {
			return clientB.GetCompartmentWithResponse(ctx, tenancyA, &sdk.GetCompartmentParams{})
		}},
		{"ListCompartments", func() (e2e.Response, error) {
			return clientB.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyA})
		}},
		{"ListCompartments subtree", func() (e2e.Response, error) {
			return clientB.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: compA.Id, CompartmentIdInSubtree: e2e.Ptr(true)})
		}},
		{"CreateCompartment in A", func() (e2e.Response, error) {
			return clientB.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{},
				sdk.CreateCompartmentDetails{CompartmentId: compA.Id, Name: "intruder"})
		}},
		{"UpdateCompartment", func() (e2e.Response, error) {
			return clientB.UpdateCompartmentWithResponse(ctx, compA.Id, &sdk.UpdateCompartmentParams{IfMatch: &compEtag},
				sdk.UpdateCompartmentDetails{Name: e2e.Ptr("owned"), Description: e2e.Ptr("owned")})
		}},
		{"UpdateCompartment root", func() (e2e.Response, error) {
			return clientB.UpdateCompartmentWithResponse(ctx, tenancyA, &sdk.UpdateCompartmentParams{},
				sdk.UpdateCompartmentDetails{Description: e2e.Ptr("owned")})
		}},
		{"DeleteCompartment", func() (e2e.Response, error) {
			return clientB.DeleteCompartmentWithResponse(ctx, emptyA.Id, &sdk.DeleteCompartmentParams{IfMatch: &emptyEtag})
		}},
		{"CreateQueue in A", func() (e2e.Response, error) {
			return clientB.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{},
				sdk.CreateQueueDetails{CompartmentId: compA.Id, DisplayName: "intruder"})
		}},
		{"ListQueues", func() (e2e.Response, error) {
			return clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(compA.Id)})
		}},
		{"ListQueues subtree", func() (e2e.Response, error) {
			return clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyA), CompartmentIdInSubtree: e2e.Ptr(true)})
		}},
		{"GetQueue", func() (e2e.Response, error) {
			return clientB.GetQueueWithResponse(ctx, queueA.Id, &sdk.GetQueueParams{})
		}},
		{"UpdateQueue", func() (e2e.Response, error) {
			return clientB.UpdateQueueWithResponse(ctx, queueA.Id, &sdk.UpdateQueueParams{IfMatch: &queueEtag},
				sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("owned"), VisibilityInSeconds: e2e.Ptr(1)})
		}},
		{"DeleteQueue", func() (e2e.Response, error) {
			return clientB.DeleteQueueWithResponse(ctx, queueA.Id, &sdk.DeleteQueueParams{IfMatch: &queueEtag})
		}},
		{"DeleteQueue without if-match", func() (e2e.Response, error) {
			return clientB.DeleteQueueWithResponse(ctx, queueA2.Id, &sdk.DeleteQueueParams{})
		}},
		{"ChangeQueueCompartment of A's queue into B", func() (e2e.Response, error) {
			return clientB.ChangeQueueCompartmentWithResponse(ctx, queueA.Id, &sdk.ChangeQueueCompartmentParams{},
				sdk.ChangeQueueCompartmentDetails{CompartmentId: compB.Id})
		}},
		{"ChangeQueueCompartment of B's queue into A", func() (e2e.Response, error) {
			return clientB.ChangeQueueCompartmentWithResponse(ctx, queueB.Id, &sdk.ChangeQueueCompartmentParams{},
				sdk.ChangeQueueCompartmentDetails{CompartmentId: compA.Id})
		}},
		{"PurgeQueue", func() (e2e.Response, error) {
			return clientB.PurgeQueueWithResponse(ctx, queueA.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		}},
		{"GetConsumerGroup", func() (e2e.Response, error) {
			return clientB.GetConsumerGroupWithResponse(ctx, groupA.Id, &sdk.GetConsumerGroupParams{})
		}},
		{"GetConsumerGroup primary", func() (e2e.Response, error) {
			return clientB.GetConsumerGroupWithResponse(ctx, fanoutA.Id, &sdk.GetConsumerGroupParams{})
		}},
		{"ListConsumerGroups", func() (e2e.Response, error) {
			return clientB.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: fanoutA.Id})
		}},
		{"CreateConsumerGroup on A's queue", func() (e2e.Response, error) {
			return clientB.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{},
				sdk.CreateConsumerGroupDetails{QueueId: fanoutA.Id, DisplayName: "intruder"})
		}},
		{"UpdateConsumerGroup", func() (e2e.Response, error) {
			return clientB.UpdateConsumerGroupWithResponse(ctx, groupA.Id, &sdk.UpdateConsumerGroupParams{},
				sdk.UpdateConsumerGroupDetails{DisplayName: e2e.Ptr("owned"), IsEnabled: e2e.Ptr(false)})
		}},
		{"UpdateConsumerGroup primary", func() (e2e.Response, error) {
			return clientB.UpdateConsumerGroupWithResponse(ctx, fanoutA.Id, &sdk.UpdateConsumerGroupParams{},
				sdk.UpdateConsumerGroupDetails{IsEnabled: e2e.Ptr(false)})
		}},
		{"DeleteConsumerGroup", func() (e2e.Response, error) {
			return clientB.DeleteConsumerGroupWithResponse(ctx, groupA.Id, &sdk.DeleteConsumerGroupParams{})
		}},
		{"GetWorkRequest", func() (e2e.Response, error) {
			return clientB.GetWorkRequestWithResponse(ctx, workA.Id, &sdk.GetWorkRequestParams{})
		}},
		{"ListWorkRequests", func() (e2e.Response, error) {
			return clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(compA.Id)})
		}},
		{"ListWorkRequests root", func() (e2e.Response, error) {
			return clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyA), ResourceId: &queueA.Id})
		}},
	}
	for _, c := range calls {
		resp, err := c.call()
		require.NoError(t, err, c.name)
		require.Equal(t, http.StatusNotFound, resp.StatusCode(), "%s: %s", c.name, resp.GetBody())
		e2e.RequireErrorBody(t, resp.GetBody(), "NotAuthorizedOrNotFound")
		require.NotContains(t, string(resp.GetBody()), "a-team", c.name)
		require.NotContains(t, string(resp.GetBody()), "a-orders", c.name)
	}

	// A retry token A used is not replayed to B, even with the same body.
	tokenA := sdk.CreateQueueParams{OpcRetryToken: e2e.Ptr("shared-token")}
	details := sdk.CreateQueueDetails{CompartmentId: tenancyA, DisplayName: "a-retried"}
	createdA, err := clientA.CreateQueueWithResponse(ctx, &tokenA, details)
	e2e.RequireStatus(t, createdA, err, http.StatusAccepted)
	replayB, err := clientB.CreateQueueWithResponse(ctx, &tokenA, details)
	e2e.RequireError(t, replayB, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	require.NotContains(t, string(replayB.Body), createdA.JSON202.Id)
	ownB, err := clientB.CreateQueueWithResponse(ctx, &tokenA, sdk.CreateQueueDetails{CompartmentId: compB.Id, DisplayName: "a-retried"})
	e2e.RequireStatus(t, ownB, err, http.StatusAccepted)
	require.NotEqual(t, createdA.JSON202.Id, ownB.JSON202.Id)
	del, err := clientA.DeleteQueueWithResponse(ctx, createdA.JSON202.Id, &sdk.DeleteQueueParams{})
	e2e.RequireStatus(t, del, err, http.StatusAccepted)
	srv.WaitWorkRequest(t, clientA, del.HTTPResponse.Header.Get("opc-work-request-id"))

	// Filters that name A's resources from B's own compartments find nothing.
	listB, err := clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyB), CompartmentIdInSubtree: e2e.Ptr(true), Id: &queueA.Id})
	e2e.RequireStatus(t, listB, err, http.StatusOK)
	require.Empty(t, listB.JSON200.Items)
	workB, err := clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: e2e.Ptr(tenancyB), ResourceId: &queueA.Id})
	e2e.RequireStatus(t, workB, err, http.StatusOK)
	require.Empty(t, workB.JSON200.Items)
	require.Equal(t, []string{compB.Id}, clientB.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyB, CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.ElementsMatch(t, []string{queueB.Id, ownB.JSON202.Id}, clientB.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyB), CompartmentIdInSubtree: e2e.Ptr(true)}))

	// A's resources are exactly as they were; B's queue did not move.
	after := snapshot()
	after.ListedQueues = before.ListedQueues // A's own retried queue came and went; compared below
	require.Equal(t, before, after)
	require.ElementsMatch(t, before.ListedQueues, clientA.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyA), CompartmentIdInSubtree: e2e.Ptr(true)}))
	gotB, _ := clientB.QueueWithETag(t, queueB.Id)
	require.Equal(t, compB.Id, gotB.CompartmentId)
}
