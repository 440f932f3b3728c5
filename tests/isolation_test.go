package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
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
	srv, tenancyA, clientA := cpStart(t)
	tenancyB, clientB := srv.Admin(t, "tenancy-b")
	ctx := context.Background()

	// Tenancy A: a compartment with a queue, an empty compartment, a second queue, a queue with consumer groups
	// and one group besides the primary, and a finished work request.
	compA := cpCreateCompartment(t, clientA, tenancyA, "a-team")
	emptyA := cpCreateCompartment(t, clientA, tenancyA, "a-empty")
	queueA := cpCreateQueue(t, clientA, compA.Id, "a-orders")
	queueA2 := cpCreateQueue(t, clientA, tenancyA, "a-invoices")
	fanout, err := clientA.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{
		CompartmentId: compA.Id, DisplayName: "a-fanout",
		Capabilities: &[]sdk.Capability{{Type: sdk.CapabilityTypeCONSUMERGROUPS, IsPrimaryConsumerGroupEnabled: cpPtr(true)}},
	})
	cpRequireStatus(t, fanout, err, http.StatusOK)
	fanoutA := *fanout.JSON200
	group, err := clientA.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{}, sdk.CreateConsumerGroupDetails{
		QueueId: fanoutA.Id, DisplayName: "a-audit",
	})
	cpRequireStatus(t, group, err, http.StatusOK)
	groupA := *group.JSON200
	purge, err := clientA.PurgeQueueWithResponse(ctx, queueA.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
	cpRequireStatus(t, purge, err, http.StatusAccepted)
	workA := cpWaitWorkRequest(t, srv, clientA, purge.HTTPResponse.Header.Get("opc-work-request-id"))

	// Tenancy B: its own compartment and queue, used as the other end of moves.
	compB := cpCreateCompartment(t, clientB, tenancyB, "b-team")
	queueB := cpCreateQueue(t, clientB, compB.Id, "b-orders")

	snapshot := func() isolationSnapshot {
		t.Helper()
		s := isolationSnapshot{Compartments: map[string]sdk.Compartment{}, CompartmentEtags: map[string]string{},
			Queues: map[string]sdk.Queue{}, QueueEtags: map[string]string{}, ConsumerGroups: map[string]sdk.ConsumerGroup{}}
		for _, id := range []string{tenancyA, compA.Id, emptyA.Id} {
			s.Compartments[id], s.CompartmentEtags[id] = cpGetCompartment(t, clientA, id)
		}
		for _, id := range []string{queueA.Id, queueA2.Id, fanoutA.Id} {
			s.Queues[id], s.QueueEtags[id] = cpGetQueue(t, clientA, id)
		}
		for _, id := range []string{groupA.Id, fanoutA.Id} { // a group, and the primary group
			g, err := clientA.GetConsumerGroupWithResponse(ctx, id, &sdk.GetConsumerGroupParams{})
			cpRequireStatus(t, g, err, http.StatusOK)
			s.ConsumerGroups[id] = *g.JSON200
		}
		groups, err := clientA.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: fanoutA.Id})
		cpRequireStatus(t, groups, err, http.StatusOK)
		for _, g := range groups.JSON200.Items {
			s.ListedGroups = append(s.ListedGroups, g.Id)
		}
		wr, err := clientA.GetWorkRequestWithResponse(ctx, workA.Id, &sdk.GetWorkRequestParams{})
		cpRequireStatus(t, wr, err, http.StatusOK)
		s.WorkRequest = *wr.JSON200
		s.ListedQueues = cpQueueIDs(t, clientA, sdk.ListQueuesParams{CompartmentId: tenancyA, CompartmentIdInSubtree: cpPtr(true)})
		s.ListedComps = cpCompartmentIDs(t, clientA, sdk.ListCompartmentsParams{CompartmentId: tenancyA, CompartmentIdInSubtree: cpPtr(true)})
		wl, err := clientA.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: compA.Id})
		cpRequireStatus(t, wl, err, http.StatusOK)
		for _, w := range wl.JSON200.Items {
			s.ListedWork = append(s.ListedWork, w.Id)
		}
		return s
	}
	before := snapshot()
	require.Len(t, before.ListedQueues, 3)
	require.Contains(t, before.ListedGroups, groupA.Id)
	require.Len(t, before.ListedComps, 2)
	require.Equal(t, []string{workA.Id}, before.ListedWork)

	// B passes A's real etags, so that only the tenancy can be the reason for a refusal.
	compEtag, queueEtag := before.CompartmentEtags[compA.Id], before.QueueEtags[queueA.Id]
	emptyEtag := before.CompartmentEtags[emptyA.Id]

	calls := []struct {
		name string
		call func() (cpResponse, error)
	}{
		{"GetCompartment", func() (cpResponse, error) {
			return clientB.GetCompartmentWithResponse(ctx, compA.Id, &sdk.GetCompartmentParams{})
		}},
		{"GetCompartment root", func() (cpResponse, error) {
			return clientB.GetCompartmentWithResponse(ctx, tenancyA, &sdk.GetCompartmentParams{})
		}},
		{"ListCompartments", func() (cpResponse, error) {
			return clientB.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: tenancyA})
		}},
		{"ListCompartments subtree", func() (cpResponse, error) {
			return clientB.ListCompartmentsWithResponse(ctx, &sdk.ListCompartmentsParams{CompartmentId: compA.Id, CompartmentIdInSubtree: cpPtr(true)})
		}},
		{"CreateCompartment in A", func() (cpResponse, error) {
			return clientB.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{},
				sdk.CreateCompartmentDetails{CompartmentId: compA.Id, Name: "intruder"})
		}},
		{"UpdateCompartment", func() (cpResponse, error) {
			return clientB.UpdateCompartmentWithResponse(ctx, compA.Id, &sdk.UpdateCompartmentParams{IfMatch: &compEtag},
				sdk.UpdateCompartmentDetails{Name: cpPtr("owned"), Description: cpPtr("owned")})
		}},
		{"UpdateCompartment root", func() (cpResponse, error) {
			return clientB.UpdateCompartmentWithResponse(ctx, tenancyA, &sdk.UpdateCompartmentParams{},
				sdk.UpdateCompartmentDetails{Description: cpPtr("owned")})
		}},
		{"DeleteCompartment", func() (cpResponse, error) {
			return clientB.DeleteCompartmentWithResponse(ctx, emptyA.Id, &sdk.DeleteCompartmentParams{IfMatch: &emptyEtag})
		}},
		{"CreateQueue in A", func() (cpResponse, error) {
			return clientB.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{},
				sdk.CreateQueueDetails{CompartmentId: compA.Id, DisplayName: "intruder"})
		}},
		{"ListQueues", func() (cpResponse, error) {
			return clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: compA.Id})
		}},
		{"ListQueues subtree", func() (cpResponse, error) {
			return clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: tenancyA, CompartmentIdInSubtree: cpPtr(true)})
		}},
		{"GetQueue", func() (cpResponse, error) {
			return clientB.GetQueueWithResponse(ctx, queueA.Id, &sdk.GetQueueParams{})
		}},
		{"UpdateQueue", func() (cpResponse, error) {
			return clientB.UpdateQueueWithResponse(ctx, queueA.Id, &sdk.UpdateQueueParams{IfMatch: &queueEtag},
				sdk.UpdateQueueDetails{DisplayName: cpPtr("owned"), VisibilityInSeconds: cpPtr(1)})
		}},
		{"DeleteQueue", func() (cpResponse, error) {
			return clientB.DeleteQueueWithResponse(ctx, queueA.Id, &sdk.DeleteQueueParams{IfMatch: &queueEtag})
		}},
		{"DeleteQueue without if-match", func() (cpResponse, error) {
			return clientB.DeleteQueueWithResponse(ctx, queueA2.Id, &sdk.DeleteQueueParams{})
		}},
		{"ChangeQueueCompartment of A's queue into B", func() (cpResponse, error) {
			return clientB.ChangeQueueCompartmentWithResponse(ctx, queueA.Id, &sdk.ChangeQueueCompartmentParams{},
				sdk.ChangeQueueCompartmentDetails{CompartmentId: compB.Id})
		}},
		{"ChangeQueueCompartment of B's queue into A", func() (cpResponse, error) {
			return clientB.ChangeQueueCompartmentWithResponse(ctx, queueB.Id, &sdk.ChangeQueueCompartmentParams{},
				sdk.ChangeQueueCompartmentDetails{CompartmentId: compA.Id})
		}},
		{"PurgeQueue", func() (cpResponse, error) {
			return clientB.PurgeQueueWithResponse(ctx, queueA.Id, &sdk.PurgeQueueParams{}, sdk.PurgeQueueDetails{PurgeType: sdk.PurgeTypeBOTH})
		}},
		{"GetConsumerGroup", func() (cpResponse, error) {
			return clientB.GetConsumerGroupWithResponse(ctx, groupA.Id, &sdk.GetConsumerGroupParams{})
		}},
		{"GetConsumerGroup primary", func() (cpResponse, error) {
			return clientB.GetConsumerGroupWithResponse(ctx, fanoutA.Id, &sdk.GetConsumerGroupParams{})
		}},
		{"ListConsumerGroups", func() (cpResponse, error) {
			return clientB.ListConsumerGroupsWithResponse(ctx, &sdk.ListConsumerGroupsParams{QueueId: fanoutA.Id})
		}},
		{"CreateConsumerGroup on A's queue", func() (cpResponse, error) {
			return clientB.CreateConsumerGroupWithResponse(ctx, &sdk.CreateConsumerGroupParams{},
				sdk.CreateConsumerGroupDetails{QueueId: fanoutA.Id, DisplayName: "intruder"})
		}},
		{"UpdateConsumerGroup", func() (cpResponse, error) {
			return clientB.UpdateConsumerGroupWithResponse(ctx, groupA.Id, &sdk.UpdateConsumerGroupParams{},
				sdk.UpdateConsumerGroupDetails{DisplayName: cpPtr("owned"), IsEnabled: cpPtr(false)})
		}},
		{"UpdateConsumerGroup primary", func() (cpResponse, error) {
			return clientB.UpdateConsumerGroupWithResponse(ctx, fanoutA.Id, &sdk.UpdateConsumerGroupParams{},
				sdk.UpdateConsumerGroupDetails{IsEnabled: cpPtr(false)})
		}},
		{"DeleteConsumerGroup", func() (cpResponse, error) {
			return clientB.DeleteConsumerGroupWithResponse(ctx, groupA.Id, &sdk.DeleteConsumerGroupParams{})
		}},
		{"GetWorkRequest", func() (cpResponse, error) {
			return clientB.GetWorkRequestWithResponse(ctx, workA.Id, &sdk.GetWorkRequestParams{})
		}},
		{"ListWorkRequests", func() (cpResponse, error) {
			return clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: compA.Id})
		}},
		{"ListWorkRequests root", func() (cpResponse, error) {
			return clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyA, ResourceId: &queueA.Id})
		}},
	}
	for _, c := range calls {
		resp, err := c.call()
		require.NoError(t, err, c.name)
		require.Equal(t, http.StatusNotFound, resp.StatusCode(), "%s: %s", c.name, resp.GetBody())
		cpRequireErrorBody(t, resp.GetBody(), "NotAuthorizedOrNotFound")
		require.NotContains(t, string(resp.GetBody()), "a-team", c.name)
		require.NotContains(t, string(resp.GetBody()), "a-orders", c.name)
	}

	// A retry token A used is not replayed to B, even with the same body.
	tokenA := sdk.CreateQueueParams{OpcRetryToken: cpPtr("shared-token")}
	details := sdk.CreateQueueDetails{CompartmentId: tenancyA, DisplayName: "a-retried"}
	createdA, err := clientA.CreateQueueWithResponse(ctx, &tokenA, details)
	cpRequireStatus(t, createdA, err, http.StatusOK)
	replayB, err := clientB.CreateQueueWithResponse(ctx, &tokenA, details)
	cpRequireError(t, replayB, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	require.NotContains(t, string(replayB.Body), createdA.JSON200.Id)
	ownB, err := clientB.CreateQueueWithResponse(ctx, &tokenA, sdk.CreateQueueDetails{CompartmentId: compB.Id, DisplayName: "a-retried"})
	cpRequireStatus(t, ownB, err, http.StatusOK)
	require.NotEqual(t, createdA.JSON200.Id, ownB.JSON200.Id)
	del, err := clientA.DeleteQueueWithResponse(ctx, createdA.JSON200.Id, &sdk.DeleteQueueParams{})
	cpRequireStatus(t, del, err, http.StatusAccepted)
	cpWaitWorkRequest(t, srv, clientA, del.HTTPResponse.Header.Get("opc-work-request-id"))

	// Filters that name A's resources from B's own compartments find nothing.
	listB, err := clientB.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true), Id: &queueA.Id})
	cpRequireStatus(t, listB, err, http.StatusOK)
	require.Empty(t, listB.JSON200.Items)
	workB, err := clientB.ListWorkRequestsWithResponse(ctx, &sdk.ListWorkRequestsParams{CompartmentId: tenancyB, ResourceId: &queueA.Id})
	cpRequireStatus(t, workB, err, http.StatusOK)
	require.Empty(t, workB.JSON200.Items)
	require.Equal(t, []string{compB.Id}, cpCompartmentIDs(t, clientB, sdk.ListCompartmentsParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true)}))
	require.ElementsMatch(t, []string{queueB.Id, ownB.JSON200.Id}, cpQueueIDs(t, clientB, sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true)}))

	// A's resources are exactly as they were; B's queue did not move.
	after := snapshot()
	after.ListedQueues = before.ListedQueues // A's own retried queue came and went; compared below
	require.Equal(t, before, after)
	require.ElementsMatch(t, before.ListedQueues, cpQueueIDs(t, clientA, sdk.ListQueuesParams{CompartmentId: tenancyA, CompartmentIdInSubtree: cpPtr(true)}))
	gotB, _ := cpGetQueue(t, clientB, queueB.Id)
	require.Equal(t, compB.Id, gotB.CompartmentId)
}
