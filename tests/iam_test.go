package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// TestIAMRouteCoverage: every authenticated route has a permission mapping, and every mapping has a route (a route
// without one would answer 500 to every caller; a stale mapping hides a renamed operation).
func TestIAMRouteCoverage(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	routes := srv.Node.Routes()
	require.Greater(t, len(routes), 30, "the node must report its routes")
	routed := map[string]bool{}
	for route, op := range routes {
		require.NotEmpty(t, op, "route %s has no operationId", route)
		routed[op] = true
		_, mapped := iam.Operations[op]
		require.True(t, mapped || iam.PublicOperations[op], "route %s (%s) has no entry in iam.Operations", route, op)
		require.False(t, mapped && iam.PublicOperations[op], "operation %s is both public and authorized", op)
	}
	for op, o := range iam.Operations {
		require.True(t, routed[op], "iam.Operations has a stale entry %s: no route serves it", op)
		require.True(t, o.Permission != "" || o.Target == iam.TargetAuthenticated, "operation %s has no permission", op)
	}
	for op := range iam.PublicOperations {
		require.True(t, routed[op], "iam.PublicOperations has a stale entry %s", op)
	}
}

// iamTree is root → A → B and root → C, with a queue in each.
type iamTree struct {
	a, b, c        string // compartment OCIDs
	qa, qb, qc, qr string // queues in A, B, C and the root
}

func iamMakeTree(t *testing.T, e *testserver.Tenancy) iamTree {
	t.Helper()
	var tr iamTree
	tr.a = e.Admin.NewCompartment(t, e.ID, "A").Id
	tr.b = e.Admin.NewCompartment(t, tr.a, "B").Id
	tr.c = e.Admin.NewCompartment(t, e.ID, "C").Id
	tr.qa = e.Admin.NewNamedQueue(t, tr.a, "qa").Id
	tr.qb = e.Admin.NewNamedQueue(t, tr.b, "qb").Id
	tr.qc = e.Admin.NewNamedQueue(t, tr.c, "qc").Id
	tr.qr = e.Admin.NewNamedQueue(t, e.ID, "qr").Id
	return tr
}

// iamRequireQueueAccess checks which of the queues client may read: allowed ones answer 200, the others 404.
func iamRequireQueueAccess(t *testing.T, client *e2e.Client, allowed []string, all ...string) {
	t.Helper()
	for _, q := range all {
		status, body := client.TryGetQueue(t, q)
		if slices.Contains(allowed, q) {
			require.Equal(t, http.StatusOK, status, "queue %s: %s", q, body)
		} else {
			e2e.RequireDenied(t, status, body, "queue %s", q)
		}
	}
}

// TestIAMCompartmentInheritance: a statement covers its compartment and every descendant, never a sibling or the
// parent, whichever way the location is written.
func TestIAMCompartmentInheritance(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := iamMakeTree(t, e)
	all := []string{tr.qa, tr.qb, tr.qc, tr.qr}
	e.Policy(t, e.ID,
		"Allow group ByName to read queues in compartment A",
		"Allow group ByPath to read queues in compartment A:B",
		"Allow group ById to read queues in compartment id "+tr.a,
		"Allow group InTenancy to read queues in tenancy",
		"Allow group NotFromRoot to read queues in compartment B", // paths start at the root: B is not a root child
		"Allow group WrongCase to read queues in compartment a",   // names are case-sensitive
		"ALLOW GROUP Keywords TO READ QUEUES IN COMPARTMENT C",    // keywords are not
	)
	iamRequireQueueAccess(t, e.Client(t, "u1", "ByName"), []string{tr.qa, tr.qb}, all...)
	iamRequireQueueAccess(t, e.Client(t, "u2", "ByPath"), []string{tr.qb}, all...)
	iamRequireQueueAccess(t, e.Client(t, "u3", "ById"), []string{tr.qa, tr.qb}, all...)
	iamRequireQueueAccess(t, e.Client(t, "u4", "InTenancy"), all, all...)
	iamRequireQueueAccess(t, e.Client(t, "u5", "NotFromRoot"), nil, all...)
	iamRequireQueueAccess(t, e.Client(t, "u6", "WrongCase"), nil, all...)
	iamRequireQueueAccess(t, e.Client(t, "u7", "Keywords"), []string{tr.qc}, all...)
	// Groups add up.
	iamRequireQueueAccess(t, e.Client(t, "u8", "ByPath", "Keywords"), []string{tr.qb, tr.qc}, all...)

	// A compartment created after the policy is covered at once (its parent is named by the statement).
	d := e.Admin.NewCompartment(t, tr.b, "D").Id
	qd := e.Admin.NewNamedQueue(t, d, "qd").Id
	iamRequireQueueAccess(t, e.Client(t, "u1", "ByName"), []string{tr.qa, tr.qb, qd}, append(all, qd)...)

	// Renaming A: the name no longer resolves, the OCID still does.
	resp, err := e.Admin.UpdateCompartmentWithResponse(context.Background(), tr.a, &sdk.UpdateCompartmentParams{},
		sdk.UpdateCompartmentDetails{Name: e2e.Ptr("A-renamed")})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	iamRequireQueueAccess(t, e.Client(t, "u1", "ByName"), nil, append(all, qd)...)
	iamRequireQueueAccess(t, e.Client(t, "u2", "ByPath"), nil, append(all, qd)...)
	iamRequireQueueAccess(t, e.Client(t, "u3", "ById"), []string{tr.qa, tr.qb, qd}, append(all, qd)...)
}

// TestIAMQueueMoveNeedsBothSides: moving a queue needs QUEUE_MOVE where it is and where it goes, and afterwards
// the queue answers to the policies of its new compartment only.
func TestIAMQueueMoveNeedsBothSides(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := iamMakeTree(t, e)
	e.Policy(t, e.ID,
		"Allow group MoversA to manage queues in compartment A",
		"Allow group MoversAC to manage queues in compartment A",
		"Allow group MoversAC to manage queues in compartment C",
	)
	move := func(client *e2e.Client, queueID, to string) (int, []byte) {
		resp, err := client.ChangeQueueCompartmentWithResponse(context.Background(), queueID, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: to})
		require.NoError(t, err)
		return resp.StatusCode(), resp.Body
	}
	onlyA, both := e.Client(t, "a", "MoversA"), e.Client(t, "ac", "MoversAC")
	status, body := move(onlyA, tr.qa, tr.c) // out of A into C: no rights in C
	e2e.RequireDenied(t, status, body)
	status, body = move(onlyA, tr.qc, tr.a) // from C into A: no rights in C
	e2e.RequireDenied(t, status, body)
	q, _ := e.Admin.QueueWithETag(t, tr.qa)
	require.Equal(t, tr.a, q.CompartmentId, "a refused move changes nothing")

	status, body = move(both, tr.qa, tr.c)
	require.Equal(t, http.StatusOK, status, string(body))
	// The queue now lives in C: the A-only principal lost it at once, on this node.
	iamRequireQueueAccess(t, onlyA, []string{tr.qb}, tr.qa, tr.qb, tr.qc)
	iamRequireQueueAccess(t, both, []string{tr.qa, tr.qb, tr.qc}, tr.qa, tr.qb, tr.qc, tr.qr)
}

// TestIAMConditions: where clauses on the target queue, the consumer group, the operation and the principal.
func TestIAMConditions(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	ctx := context.Background()
	orders := e.Admin.NewNamedQueue(t, e.ID, "orders").Id
	invoices := e.Admin.NewNamedQueue(t, e.ID, "invoices").Id
	audit := e.Admin.NewNamedQueue(t, e.ID, "audit").Id
	e.Policy(t, e.ID,
		fmt.Sprintf("Allow group OrdersOnly to use queue-push in tenancy where target.queue.id = '%s'", orders),
		fmt.Sprintf("Allow group NotOrders to use queue-push in tenancy where target.queue.id != '%s'", orders),
		fmt.Sprintf("Allow group AnyOf to use queue-push in tenancy where any {target.queue.id = '%s', target.queue.name = 'invoices'}", orders),
		"Allow group AllOf to use queue-push in tenancy where all {target.queue.name = 'orders', request.principal.id = 'alice'}",
		"Allow group Readers to manage queues in tenancy where request.operation = 'GetQueue'",
		"Allow group ByCompartment to use queue-push in tenancy where target.compartment.name = 'team'",
	)
	push := func(client *e2e.Client, allowed []string) {
		t.Helper()
		for _, q := range []string{orders, invoices, audit} {
			status, body := client.TryPut(t, q, "m")
			if slices.Contains(allowed, q) {
				require.Equal(t, http.StatusOK, status, "queue %s: %s", q, body)
			} else {
				e2e.RequireDenied(t, status, body, "queue %s", q)
			}
		}
	}
	push(e.Client(t, "p1", "OrdersOnly"), []string{orders})
	push(e.Client(t, "p2", "NotOrders"), []string{invoices, audit})
	push(e.Client(t, "p3", "AnyOf"), []string{orders, invoices})
	push(e.Client(t, "alice", "AllOf"), []string{orders})
	push(e.Client(t, "bob", "AllOf"), nil)
	push(e.Client(t, "p4", "ByCompartment"), nil)
	// A condition grants only what the statement's verb grants: OrdersOnly may push to orders but not read it.
	status, body := e.Client(t, "p1", "OrdersOnly").TryGet(t, orders)
	e2e.RequireDenied(t, status, body)

	// request.operation: manage queues, but only for GetQueue.
	readers := e.Client(t, "r", "Readers")
	status, body = readers.TryGetQueue(t, orders)
	require.Equal(t, http.StatusOK, status, string(body))
	st, err := readers.GetStatsWithResponse(ctx, orders, &sdk.GetStatsParams{})
	require.NoError(t, err)
	e2e.RequireDenied(t, st.StatusCode(), st.Body, "GetStats needs QUEUE_READ too, but is not GetQueue")
	up, err := readers.UpdateQueueWithResponse(ctx, orders, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{VisibilityInSeconds: e2e.Ptr(3)})
	require.NoError(t, err)
	e2e.RequireDenied(t, up.StatusCode(), up.Body)

	// target.compartment.name: a queue in a compartment named team.
	team := e.Admin.NewCompartment(t, e.ID, "team").Id
	inTeam := e.Admin.NewNamedQueue(t, team, "in-team").Id
	status, body = e.Client(t, "p4", "ByCompartment").TryPut(t, inTeam, "m")
	require.Equal(t, http.StatusOK, status, string(body))

	// target.queue.name follows a rename at once: the name condition no longer holds for the renamed queue.
	alice := e.Client(t, "alice", "AllOf")
	rename := func(queueID, name string) {
		t.Helper()
		resp, err := e.Admin.UpdateQueueWithResponse(ctx, queueID, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: &name})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
	}
	rename(orders, "orders-archive")
	status, body = alice.TryPut(t, orders, "m")
	e2e.RequireDenied(t, status, body, "the queue is no longer named orders")
	rename(audit, "orders")
	status, body = alice.TryPut(t, audit, "m")
	require.Equal(t, http.StatusOK, status, "the queue now named orders: %s", body)
}

// TestIAMConsumerGroupCondition: target.consumergroup.id is the group a data-plane call addresses, however the call
// names it (OCID or displayName), and the primary group (no consumerGroupId) is the queue's OCID.
func TestIAMConsumerGroupCondition(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	q := e.Admin.NewQueue(t, e.ID, e2e.WithConsumerGroups(true))
	billing := e.Admin.NewGroup(t, q, "billing", "")
	audit := e.Admin.NewGroup(t, q, "audit", "")
	e.Admin.Put(t, q, e2e.Msg("one"), e2e.Msg("two"), e2e.Msg("three"))
	e.Policy(t, e.ID,
		fmt.Sprintf("Allow group Billing to use queue-pull in tenancy where target.consumergroup.id = '%s'", billing.Id),
		fmt.Sprintf("Allow group NotAudit to use queue-pull in tenancy where target.consumergroup.id != '%s'", audit.Id),
		fmt.Sprintf("Allow group Primary to use queue-pull in tenancy where target.consumergroup.id = '%s'", q),
	)
	check := func(client *e2e.Client, ref string, allowed bool) {
		t.Helper()
		var opts []e2e.GetOption
		if ref != "" {
			opts = append(opts, e2e.OfGroup(ref))
		}
		status, body := client.TryGet(t, q, opts...)
		if allowed {
			require.Equal(t, http.StatusOK, status, "group %q: %s", ref, body)
		} else {
			e2e.RequireDenied(t, status, body, "group %q", ref)
		}
	}
	b := e.Client(t, "b", "Billing")
	check(b, billing.Id, true)
	check(b, "billing", true) // by displayName
	check(b, "BILLING", true) // displayNames match case-insensitively
	check(b, audit.Id, false)
	check(b, "audit", false)
	check(b, "", false) // the primary group

	notAudit := e.Client(t, "n", "NotAudit")
	check(notAudit, billing.Id, true)
	check(notAudit, "", true)
	check(notAudit, audit.Id, false)
	check(notAudit, "audit", false) // naming the group differently must not get around the condition
	check(notAudit, "Audit", false)

	primary := e.Client(t, "p", "Primary")
	check(primary, "", true)
	check(primary, q, true)
	check(primary, "billing", false)

	// Acknowledging follows the same rule: a receipt of billing cannot be deleted through audit's name by a
	// principal limited to billing (denied before the receipt is even looked at).
	e.Admin.Put(t, q, e2e.Msg("four"))
	leased := e.Admin.Get(t, q, e2e.OfGroup(billing.Id))
	require.NotEmpty(t, leased)
	del, err := b.DeleteMessageWithResponse(context.Background(), q, leased[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: e2e.Ptr("audit")})
	require.NoError(t, err)
	e2e.RequireDenied(t, del.StatusCode(), del.Body)
	del, err = b.DeleteMessageWithResponse(context.Background(), q, leased[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: e2e.Ptr("billing")})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
}

// TestIAMPushPullAnyUserAndGroups: queue-push alone puts but cannot get; any-user covers every principal of the
// tenancy; groups come from the token's groups claim only.
func TestIAMPushPullAnyUserAndGroups(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := iamMakeTree(t, e)
	e.Policy(t, e.ID,
		"Allow group Producers to use queue-push in tenancy",
		"Allow group Consumers to use queue-pull in tenancy",
		"Allow any-user to read queues in compartment A",
	)
	producer := e.Client(t, "producer", "Producers")
	status, body := producer.TryPut(t, tr.qc, "hello")
	require.Equal(t, http.StatusOK, status, string(body))
	status, body = producer.TryGet(t, tr.qc)
	e2e.RequireDenied(t, status, body, "queue-push does not get")
	st, err := producer.GetStatsWithResponse(context.Background(), tr.qc, &sdk.GetStatsParams{})
	require.NoError(t, err)
	e2e.RequireDenied(t, st.StatusCode(), st.Body, "queue-push does not read stats")

	consumer := e.Client(t, "consumer", "Consumers")
	status, body = consumer.TryPut(t, tr.qc, "nope")
	e2e.RequireDenied(t, status, body, "queue-pull does not put")
	got := consumer.Get(t, tr.qc)
	require.Equal(t, []string{"hello"}, e2e.Contents(got))
	consumer.DeleteAll(t, tr.qc, got)

	// any-user: a principal without any group, and one in unrelated groups, read queues in A (and below) only.
	for _, client := range []*e2e.Client{e.Client(t, "nobody"), e.Client(t, "someone", "Unrelated", "Others")} {
		iamRequireQueueAccess(t, client, []string{tr.qa, tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	}

	// Groups come from the token: the same subject with and without the group, and with a group of another case.
	status, body = e.Client(t, "producer").TryPut(t, tr.qc, "m")
	e2e.RequireDenied(t, status, body, "a token without the group")
	status, body = e.Client(t, "producer", "producers").TryPut(t, tr.qc, "m")
	e2e.RequireDenied(t, status, body, "group names are case-sensitive")
	status, body = e.Client(t, "someone-else", "Others", "Producers").TryPut(t, tr.qc, "m")
	require.Equal(t, http.StatusOK, status, "any subject in the group: %s", body)
	// The subject is not a group: a principal whose sub is "Producers" has no group.
	status, body = e.Client(t, "Producers").TryPut(t, tr.qc, "m")
	e2e.RequireDenied(t, status, body)
}

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
		lq, err := a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: compB})
		require.NoError(t, err)
		e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
		lq, err = a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: e2e.Ptr(true)})
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
	require.Equal(t, []string{queueB}, adminB.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: e2e.Ptr(true)}))
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
		}, time.Second, 20*time.Millisecond, "node 2 must see %s within 1 s", what)
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
	e2e.RequireStatus(t, ren, err, http.StatusOK)
	eventually(false, "the queue renamed")
	ren, err = admin.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: e2e.Ptr("orders")})
	e2e.RequireStatus(t, ren, err, http.StatusOK)
	eventually(true, "the queue renamed back")

	// The queue moved to C on node 1: the policy on A no longer covers it on node 2; moved back, it does.
	moveTo := func(to string) {
		t.Helper()
		resp, err := admin.ChangeQueueCompartmentWithResponse(ctx, q, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: to})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
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
	tr := iamMakeTree(t, e)
	a1 := e.Admin.NewCompartment(t, tr.a, "A1").Id
	c1 := e.Admin.NewCompartment(t, tr.c, "C1").Id
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
			for _, from := range []string{e.ID, tr.a} {
				require.ElementsMatch(t, []string{tr.qa, tr.qb},
					client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: from, CompartmentIdInSubtree: subtree}), "queues from %s", from)
				// The compartments in A (A itself lies in the root, where the caller may inspect nothing).
				require.ElementsMatch(t, []string{tr.b, a1},
					client.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: from, CompartmentIdInSubtree: subtree}), "compartments from %s", from)
			}
			// Without the subtree, the root itself is not the caller's to list; A is.
			lq, err := client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e.ID})
			require.NoError(t, err)
			e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
			require.Equal(t, []string{tr.qa}, client.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: tr.a}))
			// Nothing of C's subtree, from C either.
			lq, err = client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: tr.c, CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
			lc, err := client.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: tr.c, CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			e2e.RequireDenied(t, lc.StatusCode(), lc.Body)
		})
	}
	// The administrator sees everything; a stranger gets 404 for the subtree as for anything else.
	require.ElementsMatch(t, []string{tr.qa, tr.qb, tr.qc, tr.qr},
		e.Admin.QueueIDs(t, sdk.ListQueuesParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree}))
	require.ElementsMatch(t, []string{tr.a, tr.b, tr.c, a1, c1},
		e.Admin.CompartmentIDs(t, sdk.ListCompartmentsParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree}))
	stranger := e.Client(t, "stranger")
	lq, err := stranger.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
	lc, err := stranger.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: e.ID, CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	e2e.RequireDenied(t, lc.StatusCode(), lc.Body)
}

// TestIAMSimulator: the policy simulator explains decisions with the matching statements; it needs read policies
// in the tenancy and checks its input.
func TestIAMSimulator(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	ctx := context.Background()
	a := e.Admin.NewCompartment(t, e.ID, "A").Id
	q := e.Admin.NewQueue(t, a, e2e.WithConsumerGroups(true))
	billing := e.Admin.NewGroup(t, q, "billing", "")
	lp, err := e.Admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.ID, Name: e2e.Ptr("Tenant Admin Policy")})
	e2e.RequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	tenantAdmin := lp.JSON200.Items[0]
	push := e.Policy(t, e.ID,
		"Allow group Producers to use queue-push in compartment A",
		fmt.Sprintf("Allow group Billing to use queue-pull in compartment A where target.consumergroup.id = '%s'", billing.Id),
		"Allow group PolicyReaders to read policies in tenancy",
		"Allow group PolicyInspectors to inspect policies in tenancy",
		"Allow group PolicyReadersInA to read policies in compartment A",
		fmt.Sprintf("Allow group PrimaryPullers to use queue-pull in compartment A where target.consumergroup.id = '%s'", q),
	)
	type matched = struct {
		PolicyId  sdk.Ocid `json:"policyId"`
		Statement string   `json:"statement"`
	}

	// An administrator who is also a producer: both statements, in load order.
	sim := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "alice", Groups: &[]string{"Producers", "Administrators"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH, QueueId: &q})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.True(t, sim.JSON200.Allowed)
	require.Equal(t, []matched{
		{tenantAdmin.Id, "Allow group Administrators to manage all-resources in tenancy"},
		{push.Id, "Allow group Producers to use queue-push in compartment A"},
	}, sim.JSON200.MatchedStatements)

	// A stranger: denied, and an empty list (not null).
	sim = e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "mallory", Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH, QueueId: &q})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.JSONEq(t, `{"allowed":false,"matchedStatements":[]}`, string(sim.Body))

	// A producer outside A's subtree: denied at the root, allowed in A.
	producer := func(d sdk.AuthorizeDetails) bool {
		t.Helper()
		d.Subject, d.Groups = "p", &[]string{"Producers"}
		resp := e.Admin.Simulate(t, d)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		return resp.JSON200.Allowed
	}
	require.False(t, producer(sdk.AuthorizeDetails{Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH}), "root compartment")
	require.True(t, producer(sdk.AuthorizeDetails{Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH, CompartmentId: &a}))
	require.False(t, producer(sdk.AuthorizeDetails{Permission: sdk.AuthorizeDetailsPermissionQUEUEPULL, CompartmentId: &a}))

	// Consumer-group conditions: with the queue and the group, or the group alone (its queue is looked up).
	pull := func(d sdk.AuthorizeDetails) bool {
		t.Helper()
		d.Subject, d.Groups, d.Permission = "b", &[]string{"Billing"}, sdk.AuthorizeDetailsPermissionQUEUEPULL
		resp := e.Admin.Simulate(t, d)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		return resp.JSON200.Allowed
	}
	require.True(t, pull(sdk.AuthorizeDetails{QueueId: &q, ConsumerGroupId: &billing.Id}))
	require.False(t, pull(sdk.AuthorizeDetails{QueueId: &q, ConsumerGroupId: &q}), "the primary group")
	require.False(t, pull(sdk.AuthorizeDetails{QueueId: &q}), "no group")
	require.True(t, pull(sdk.AuthorizeDetails{ConsumerGroupId: &billing.Id}), "the group's queue is in A")
	// A pull without a group addresses the primary group, in the simulator as in a real call.
	primary := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "pp", Groups: &[]string{"PrimaryPullers"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEPULL, QueueId: &q})
	require.Equal(t, http.StatusOK, primary.StatusCode(), string(primary.Body))
	require.True(t, primary.JSON200.Allowed, string(primary.Body))
	status, body := e.Client(t, "pp", "PrimaryPullers").TryGet(t, q)
	require.Equal(t, http.StatusOK, status, string(body))

	// Who may ask: read policies in the tenancy.
	ask := func(groups ...string) *sdk.AuthorizeResponse {
		return e.Client(t, "asker", groups...).Simulate(t, sdk.AuthorizeDetails{Subject: "x", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD})
	}
	resp := ask("PolicyReaders")
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	for _, groups := range [][]string{nil, {"PolicyInspectors"}, {"PolicyReadersInA"}, {"Producers"}} {
		resp = ask(groups...)
		e2e.RequireDenied(t, resp.StatusCode(), resp.Body, "groups %v", groups)
	}

	// Bad input: 400 naming the field.
	token := e.Token(t, "admin", "Administrators")
	for _, body := range []string{
		`{"subject":"x","permission":"QUEUE_FLY"}`,
		`{"subject":"x","permission":"queue_read"}`,
		`{"subject":"x"}`,
	} {
		r := e.Server.RawJSON(t, token, http.MethodPost, "/20210201/actions/authorize", strings.NewReader(body))
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Body)
		require.Contains(t, string(r.Body), "permission", body)
	}
	missingQueue := "ocid1.queue.ferry.local." + strings.Repeat("q", 32)
	sim = e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "x", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &missingQueue})
	e2e.RequireDenied(t, sim.StatusCode(), sim.Body)
}

// TestIAMPoliciesAPI: CRUD, statement errors with index and column, etags, unique names, and the Tenant Admin
// Policy, whose deletion really revokes the administrators' access.
func TestIAMPoliciesAPI(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	ctx := context.Background()
	a := e.Admin.NewCompartment(t, e.ID, "A").Id

	created := e.Admin.NewPolicy(t, a, "Ops", "Allow group Ops to read queues in compartment A")
	require.Equal(t, a, created.CompartmentId)
	require.Equal(t, sdk.LifecycleStateACTIVE, created.LifecycleState)
	require.True(t, strings.HasPrefix(created.Id, "ocid1.policy."), created.Id)
	get := func(id string) (sdk.Policy, string) {
		t.Helper()
		resp, err := e.Admin.GetPolicyWithResponse(ctx, id, &sdk.GetPolicyParams{})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		return *resp.JSON200, resp.HTTPResponse.Header.Get("etag")
	}
	got, etag := get(created.Id)
	require.Equal(t, created, got)
	require.NotEmpty(t, etag)
	list := func(compartmentID string) []string {
		t.Helper()
		resp, err := e.Admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: compartmentID})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
		var names []string
		for _, p := range resp.JSON200.Items {
			names = append(names, p.Name)
		}
		return names
	}
	require.Equal(t, []string{"Ops"}, list(a))
	require.Equal(t, []string{"Tenant Admin Policy"}, list(e.ID))

	// Statement errors: 400 naming the statement's index and the column, nothing stored.
	for _, tc := range []struct {
		statements []string
		want       string
	}{
		{[]string{"Allow group Ops to read queues in tenancy", "Allow grup Ops to read queues in tenancy"}, "statements[1]: column 7: "},
		{[]string{"Allow group Ops to fly queues in tenancy"}, "statements[0]: column 20: "},
		{[]string{"Allow group Ops to read tables in tenancy"}, "statements[0]: column 25: "},
		{[]string{"Allow group Ops to read queues in tenancy where target.colour = 'red'"}, "statements[0]: column 49: "},
		{[]string{"Allow group Ops to read queues"}, "statements[0]: column 31: "},
	} {
		resp, err := e.Admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{},
			sdk.CreatePolicyDetails{CompartmentId: a, Name: "bad", Statements: tc.statements})
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", tc.want)
		up, err := e.Admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{},
			sdk.UpdatePolicyDetails{Statements: &tc.statements})
		e2e.RequireError(t, up, err, http.StatusBadRequest, "InvalidParameter", tc.want)
	}
	require.Equal(t, []string{"Ops"}, list(a))
	got, _ = get(created.Id)
	require.Equal(t, created.Statements, got.Statements, "a refused update changes nothing")

	// Names are unique in the tenancy, case-insensitively, across compartments; a deleted policy frees its name.
	dup, err := e.Admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{},
		sdk.CreatePolicyDetails{CompartmentId: e.ID, Name: "ops", Statements: []string{"Allow group X to read queues in tenancy"}})
	e2e.RequireError(t, dup, err, http.StatusConflict, "Conflict", "name")
	other := e.Admin.NewPolicy(t, a, "Other", "Allow group X to read queues in compartment A")
	ren, err := e.Admin.UpdatePolicyWithResponse(ctx, other.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Name: e2e.Ptr("OPS")})
	e2e.RequireError(t, ren, err, http.StatusConflict, "Conflict", "name")

	// Update with the etag; a stale etag answers 412 for update and delete alike.
	up, err := e.Admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{IfMatch: &etag}, sdk.UpdatePolicyDetails{
		Description: e2e.Ptr("operators"), Statements: &[]string{"Allow group Ops to use queues in compartment A", "Allow group Ops to read policies in compartment A"}})
	e2e.RequireStatus(t, up, err, http.StatusOK)
	newEtag := up.HTTPResponse.Header.Get("etag")
	require.NotEqual(t, etag, newEtag)
	require.Equal(t, "operators", up.JSON200.Description)
	require.Len(t, up.JSON200.Statements, 2)
	require.Equal(t, "Ops", up.JSON200.Name, "absent fields are unchanged")
	stale, err := e.Admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{IfMatch: &etag}, sdk.UpdatePolicyDetails{Description: e2e.Ptr("x")})
	e2e.RequireError(t, stale, err, http.StatusPreconditionFailed, "NoEtagMatch")
	staleDel, err := e.Admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{IfMatch: &etag})
	e2e.RequireError(t, staleDel, err, http.StatusPreconditionFailed, "NoEtagMatch")
	del, err := e.Admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{IfMatch: &newEtag})
	e2e.RequireStatus(t, del, err, http.StatusNoContent)
	require.Equal(t, []string{"Other"}, list(a))
	del, err = e.Admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{})
	e2e.RequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	up, err = e.Admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Description: e2e.Ptr("x")})
	e2e.RequireError(t, up, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	e.Admin.NewPolicy(t, a, "Ops", "Allow group Ops to read queues in compartment A")

	// The Tenant Admin Policy is an ordinary policy: visible and editable.
	lp, err := e.Admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.ID})
	e2e.RequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	admin := lp.JSON200.Items[0]
	require.Equal(t, []string{"Allow group Administrators to manage all-resources in tenancy"}, admin.Statements)
	desc, err := e.Admin.UpdatePolicyWithResponse(ctx, admin.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Description: e2e.Ptr("the admins")})
	e2e.RequireStatus(t, desc, err, http.StatusOK)
}

// TestIAMDeleteTenantAdminPolicy: deleting the Tenant Admin Policy revokes the administrators' access at once:
// nothing works for them any more, not even restoring the policy.
func TestIAMDeleteTenantAdminPolicy(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	ctx := context.Background()
	q := e.Admin.NewQueue(t, e.ID)
	lp, err := e.Admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.ID})
	e2e.RequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	e.Admin.RemovePolicy(t, lp.JSON200.Items[0].Id)

	status, body := e.Admin.TryGetQueue(t, q)
	e2e.RequireDenied(t, status, body)
	status, body = e.Admin.TryPut(t, q, "m")
	e2e.RequireDenied(t, status, body)
	lq, err := e.Admin.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e.ID, CompartmentIdInSubtree: e2e.Ptr(true)})
	require.NoError(t, err)
	e2e.RequireDenied(t, lq.StatusCode(), lq.Body)
	lp, err = e.Admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.ID})
	require.NoError(t, err)
	e2e.RequireDenied(t, lp.StatusCode(), lp.Body)
	cp, err := e.Admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
		CompartmentId: e.ID, Name: "Tenant Admin Policy", Statements: []string{"Allow group Administrators to manage all-resources in tenancy"}})
	require.NoError(t, err)
	e2e.RequireDenied(t, cp.StatusCode(), cp.Body)
	cc, err := e.Admin.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: e.ID, Name: "x"})
	require.NoError(t, err)
	e2e.RequireDenied(t, cc.StatusCode(), cc.Body)
	sim := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "admin", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD})
	e2e.RequireDenied(t, sim.StatusCode(), sim.Body)
}

// TestIAMPolicyScope: a policy grants only inside the compartment it is attached to, so that `manage policies` in
// a compartment cannot be turned into more access than that compartment's.
func TestIAMPolicyScope(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	ctx := context.Background()
	tr := iamMakeTree(t, e)
	e.Policy(t, e.ID, "Allow group DelegatedA to manage policies in compartment A")
	delegate := e.Client(t, "d", "DelegatedA")

	// Inside A: accepted and effective.
	teamA := delegate.NewPolicy(t, tr.a, "team-a", "Allow group TeamA to read queues in compartment A:B")
	iamRequireQueueAccess(t, e.Client(t, "ta", "TeamA"), []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	// An update is held to the same rule (the policy's compartment, not the caller's choice).
	up, err := delegate.UpdatePolicyWithResponse(ctx, teamA.Id, &sdk.UpdatePolicyParams{},
		sdk.UpdatePolicyDetails{Statements: &[]string{"Allow group TeamA to read queues in tenancy"}})
	e2e.RequireError(t, up, err, http.StatusBadRequest, "InvalidParameter", "statements[0]", "compartment A")
	iamRequireQueueAccess(t, e.Client(t, "ta", "TeamA"), []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)

	// Reaching out of A: refused, whichever way the location is written.
	for i, statement := range []string{
		"Allow group DelegatedA to manage all-resources in tenancy",
		"Allow group DelegatedA to manage all-resources in compartment C",
		"Allow group DelegatedA to manage all-resources in compartment id " + tr.c,
		"Allow group DelegatedA to manage all-resources in compartment id " + e.ID,
	} {
		resp, err := delegate.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
			CompartmentId: tr.a, Name: fmt.Sprintf("escalate-%d", i), Statements: []string{"Allow group X to read queues in compartment A", statement}})
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "statements[1]")
	}
	iamRequireQueueAccess(t, delegate, nil, tr.qa, tr.qb, tr.qc, tr.qr)

	// A statement whose path later resolves outside the policy's compartment grants nothing there: A's policy
	// names A:B; B moved away is impossible, but renaming lets a path point elsewhere, so the check is repeated
	// when policies are loaded.
	e.Admin.NewPolicy(t, tr.a, "by-path", "Allow group ByPath to read queues in compartment A:B")
	byPath := e.Client(t, "bp", "ByPath")
	iamRequireQueueAccess(t, byPath, []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	rename := func(id, name string) {
		t.Helper()
		resp, err := e.Admin.UpdateCompartmentWithResponse(ctx, id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: &name})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
	}
	// Now "A:B" is C's child B (renamed C → A, A → Z): outside the policy's compartment.
	rename(tr.a, "Z")
	rename(tr.c, "A")
	cb := e.Admin.NewCompartment(t, tr.c, "B").Id
	qcb := e.Admin.NewNamedQueue(t, cb, "qcb").Id
	iamRequireQueueAccess(t, byPath, nil, tr.qa, tr.qb, tr.qc, tr.qr, qcb)
	// The simulator agrees.
	sim := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "bp", Groups: &[]string{"ByPath"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &qcb})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.False(t, sim.JSON200.Allowed)
}
