package tests

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestIAMCrossTenancy: a tenancy's statements grant nothing in another tenancy, whatever they name; the other
// tenancy's resources answer 404 to its principals, including its administrators.
func TestIAMCrossTenancy(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	ctx := context.Background()
	tenancyA, adminA := srv.Admin(t, "cross-a")
	tenancyB, adminB := srv.Admin(t, "cross-b")
	compB := adminB.NewCompartment(t, tenancyB, "shared").Id
	queueB := adminB.NewNamedQueue(t, compB, "secret").Id
	adminB.Put(t, queueB, e2e.Msg("b's message"))

	policyA := adminA.NewPolicy(t, tenancyA, "reach into b",
		"Allow group Administrators to manage all-resources in compartment id "+compB,
		"Allow group Administrators to manage all-resources in compartment id "+tenancyB,
		"Allow any-user to manage all-resources in compartment id "+compB,
	)
	// A principal of A whose sub and groups are those of B's administrator.
	for _, a := range []*e2e.Client{adminA, srv.Client(t, srv.Token(t, tenancyA, "admin", "Administrators", "Anyone"))} {
		status, body := a.TryGetQueue(t, queueB)
		e2e.RequireDenied(t, status, body)
		status, body = a.TryPut(t, queueB, "from a")
		e2e.RequireDenied(t, status, body)
		status, body = a.TryGet(t, queueB)
		e2e.RequireDenied(t, status, body)
		lq, err := a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(compB)})
		require.NoError(t, err)
		e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
		lq, err = a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyB), CompartmentIdInSubtree: e2e.Ptr(true)})
		require.NoError(t, err)
		e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
		cq, err := a.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: compB, DisplayName: "planted"})
		require.NoError(t, err)
		e2e.RequireDenied(t, cq.StatusCode(), cq.Body)
		cc, err := a.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: tenancyB, Name: "planted"})
		require.NoError(t, err)
		e2e.RequireDenied(t, cc.StatusCode(), cc.Body)
		gc, err := a.GetCompartmentWithResponse(ctx, compB, &sdk.GetCompartmentParams{})
		require.NoError(t, err)
		e2e.RequireDenied(t, gc.StatusCode(), gc.Body)
		cp, err := a.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
			CompartmentId: tenancyB, Name: "planted", Statements: []string{"Allow any-user to manage all-resources in tenancy"}})
		require.NoError(t, err)
		e2e.RequireDenied(t, cp.StatusCode(), cp.Body)
		lp, err := a.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: tenancyB})
		require.NoError(t, err)
		e2e.RequireDenied(t, lp.StatusCode(), lp.Body)
		mv, err := a.ChangeQueueCompartmentWithResponse(ctx, queueB, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyA})
		require.NoError(t, err)
		e2e.RequireDenied(t, mv.StatusCode(), mv.Body)
		// The simulator of A knows nothing of B: B's compartment is no compartment of A's, B's queue is missing.
		sim := a.Simulate(t, sdk.AuthorizeDetails{Subject: "admin", Groups: &[]string{"Administrators"},
			Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, CompartmentId: &compB})
		require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
		require.False(t, sim.JSON200.Allowed, string(sim.Body))
		require.Empty(t, sim.JSON200.MatchedStatements)
		sim = a.Simulate(t, sdk.AuthorizeDetails{Subject: "admin", Groups: &[]string{"Administrators"},
			Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &queueB})
		e2e.RequireDenied(t, sim.StatusCode(), sim.Body)
	}
	// A's policies are A's: B cannot see them either.
	gp, err := adminB.GetPolicyWithResponse(ctx, policyA.Id, &sdk.GetPolicyParams{})
	require.NoError(t, err)
	e2e.RequireDenied(t, gp.StatusCode(), gp.Body)

	// Nothing happened in B: its queue still holds exactly its own message, nothing was created.
	require.Equal(t, []string{"b's message"}, e2e.Contents(adminB.Get(t, queueB)))
	require.Equal(t, []string{queueB}, adminB.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tenancyB), CompartmentIdInSubtree: e2e.Ptr(true)}))
	require.Equal(t, []string{compB}, adminB.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: tenancyB, CompartmentIdInSubtree: e2e.Ptr(true)}))
	lp, err := adminB.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: tenancyB})
	e2e.RequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1, "only B's Tenant Admin Policy")
	q, _ := adminB.QueueWithETag(t, queueB)
	require.Equal(t, compB, q.CompartmentId)
}

// TestIAMPolicyChangesAcrossNodes: a policy created, changed or deleted through one node takes effect on another
// node of the same database within a second, without a restart; so do the compartment renames and queue moves and
// renames that policies depend on.
func TestIAMPolicyChangesAcrossNodes(t *testing.T) {
	t.Parallel()
	node1 := testserver.Start(t)
	node2 := node1.Peer(t)
	ctx := context.Background()
	tenancyID, admin := node1.Admin(t, "two-nodes")
	a := admin.NewCompartment(t, tenancyID, "A").Id
	c := admin.NewCompartment(t, tenancyID, "C").Id
	q := admin.NewNamedQueue(t, a, "orders").Id
	reader := node2.Client(t, node2.Token(t, tenancyID, "reader", "Readers"))

	eventually := func(allowed bool, what string) {
		t.Helper()
		start := time.Now()
		require.Eventually(t, func() bool {
			status, _ := reader.TryGetQueue(t, q)
			return (status == http.StatusOK) == allowed && (allowed || status == http.StatusNotFound)
		}, 3*time.Second, 20*time.Millisecond, "node 2 must see %s within 3 s", what)
		t.Logf("%s: seen on node 2 after %v", what, time.Since(start).Round(time.Millisecond))
	}
	// Node 2 has loaded the tenancy (and cached the queue) before anything changes.
	status, body := reader.TryGetQueue(t, q)
	e2e.RequireDenied(t, status, body)

	p := admin.NewPolicy(t, tenancyID, "readers", "Allow group Readers to read queues in compartment A")
	eventually(true, "the new policy")

	etag := func() string {
		resp, err := admin.GetPolicyWithResponse(ctx, p.Id, &sdk.GetPolicyParams{})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		return resp.HTTPResponse.Header.Get("etag")
	}
	update := func(statement string) {
		t.Helper()
		resp, err := admin.UpdatePolicyWithResponse(ctx, p.Id, &sdk.UpdatePolicyParams{IfMatch: e2e.Ptr(etag())},
			sdk.UpdatePolicyDetails{Statements: &[]string{statement}})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
	}
	update("Allow group Readers to inspect queues in compartment A")
	eventually(false, "the policy downgraded to inspect")
	update("Allow group Readers to read queues in compartment A where target.queue.name = 'orders'")
	eventually(true, "the policy upgraded again, with a condition on the queue's name")

	// The queue renamed on node 1: the name condition no longer holds on node 2.
	ren, err := admin.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("orders-old")})
	e2e.RequireStatus(t, ren, err, http.StatusAccepted)
	eventually(false, "the queue renamed")
	ren, err = admin.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("orders")})
	e2e.RequireStatus(t, ren, err, http.StatusAccepted)
	eventually(true, "the queue renamed back")

	// The queue moved to C on node 1: the policy on A no longer covers it on node 2; moved back, it does.
	moveTo := func(to string) {
		t.Helper()
		resp, err := admin.ChangeQueueCompartmentWithResponse(ctx, q, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: to})
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
	}
	moveTo(c)
	eventually(false, "the queue moved out of A")
	moveTo(a)
	eventually(true, "the queue moved back into A")

	// Compartment A renamed on node 1: `in compartment A` no longer resolves on node 2.
	renameA := func(name string) {
		t.Helper()
		resp, err := admin.UpdateCompartmentWithResponse(ctx, a, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: &name})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
	}
	renameA("A2")
	eventually(false, "compartment A renamed")
	renameA("A")
	eventually(true, "compartment A named A again")

	admin.RemovePolicy(t, p.Id)
	eventually(false, "the deleted policy")

	// And the other way round: a policy written through node 2 applies on node 1.
	admin2 := node2.AdminOf(t, tenancyID)
	admin2.NewPolicy(t, tenancyID, "producers", "Allow group Producers to use queue-push in compartment A")
	producer := node1.Client(t, node1.Token(t, tenancyID, "producer", "Producers"))
	require.Eventually(t, func() bool {
		status, _ := producer.TryPut(t, q, "m")
		return status == http.StatusOK
	}, time.Second, 20*time.Millisecond, "node 1 must see the policy created on node 2 within 1 s")
}

// TestIAMListsOnlyWhatCallerMayInspect: a subtree list answers what the caller may inspect in the subtree, even
// from a compartment where it may inspect nothing itself; a caller who may inspect nothing there gets 404.
func TestIAMListsOnlyWhatCallerMayInspect(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := e.Admin.NewTree(t, e.ID)
	a1 := e.Admin.NewCompartment(t, tr.A, "A1").Id
	c1 := e.Admin.NewCompartment(t, tr.C, "C1").Id
	e.Policy(t, e.ID,
		"Allow group InA to inspect queues in compartment A",
		"Allow group InA to inspect compartments in compartment A",
		"Allow group ListOnly to inspect queues in compartment A where request.operation = 'ListQueues'",
		"Allow group ListOnly to inspect compartments in compartment A where request.operation = 'ListCompartments'",
	)
	subtree := e2e.Ptr(true)
	for _, group := range []string{"InA", "ListOnly"} {
		t.Run(group, func(t *testing.T) {
			client := e.Client(t, "u-"+group, group)
			for _, from := range []string{e.ID, tr.A} {
				require.ElementsMatch(t, []string{tr.QA, tr.QB},
					client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(from), CompartmentIdInSubtree: subtree}), "queues from %s", from)
				// The compartments in A (A itself lies in the root, where the caller may inspect nothing).
				require.ElementsMatch(t, []string{tr.B, a1},
					client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: from, CompartmentIdInSubtree: subtree}), "compartments from %s", from)
			}
			// Without the subtree, the root itself is not the caller's to list; A is.
			lq, err := client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(e.ID)})
			require.NoError(t, err)
			e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
			require.Equal(t, []string{tr.QA}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tr.A)}))
			// Nothing of C's subtree, from C either.
			lq, err = client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(tr.C), CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
			lc, err := client.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: tr.C, CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			e2e.RequireDenied(t, lc.StatusCode(), lc.Body)
		})
	}
	// The administrator sees everything; a stranger gets 404 for the subtree as for anything else.
	require.ElementsMatch(t, []string{tr.QA, tr.QB, tr.QC, tr.QR},
		e.Admin.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e2e.Ptr(e.ID), CompartmentIdInSubtree: subtree}))
	require.ElementsMatch(t, []string{tr.A, tr.B, tr.C, a1, c1},
		e.Admin.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree}))
	stranger := e.Client(t, "stranger")
	lq, err := stranger.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(e.ID), CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
	lc, err := stranger.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	e2e.RequireDenied(t, lc.StatusCode(), lc.Body)
}
