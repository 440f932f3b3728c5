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

func iamMakeTree(t *testing.T, e *iamEnv) iamTree {
	t.Helper()
	var tr iamTree
	tr.a = cpCreateCompartment(t, e.admin, e.tenancyID, "A").Id
	tr.b = cpCreateCompartment(t, e.admin, tr.a, "B").Id
	tr.c = cpCreateCompartment(t, e.admin, e.tenancyID, "C").Id
	tr.qa = cpCreateQueue(t, e.admin, tr.a, "qa").Id
	tr.qb = cpCreateQueue(t, e.admin, tr.b, "qb").Id
	tr.qc = cpCreateQueue(t, e.admin, tr.c, "qc").Id
	tr.qr = cpCreateQueue(t, e.admin, e.tenancyID, "qr").Id
	return tr
}

// iamRequireQueueAccess checks which of the queues client may read: allowed ones answer 200, the others 404.
func iamRequireQueueAccess(t *testing.T, client *sdk.ClientWithResponses, allowed []string, all ...string) {
	t.Helper()
	for _, q := range all {
		status, body := iamGetQueue(t, client, q)
		if slices.Contains(allowed, q) {
			require.Equal(t, http.StatusOK, status, "queue %s: %s", q, body)
		} else {
			iamRequireDenied(t, status, body, "queue %s", q)
		}
	}
}

// TestIAMCompartmentInheritance: a statement covers its compartment and every descendant, never a sibling or the
// parent, whichever way the location is written.
func TestIAMCompartmentInheritance(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	tr := iamMakeTree(t, e)
	all := []string{tr.qa, tr.qb, tr.qc, tr.qr}
	e.policy(t, e.tenancyID,
		"Allow group ByName to read queues in compartment A",
		"Allow group ByPath to read queues in compartment A:B",
		"Allow group ById to read queues in compartment id "+tr.a,
		"Allow group InTenancy to read queues in tenancy",
		"Allow group NotFromRoot to read queues in compartment B", // paths start at the root: B is not a root child
		"Allow group WrongCase to read queues in compartment a",   // names are case-sensitive
		"ALLOW GROUP Keywords TO READ QUEUES IN COMPARTMENT C",    // keywords are not
	)
	iamRequireQueueAccess(t, e.client(t, "u1", "ByName"), []string{tr.qa, tr.qb}, all...)
	iamRequireQueueAccess(t, e.client(t, "u2", "ByPath"), []string{tr.qb}, all...)
	iamRequireQueueAccess(t, e.client(t, "u3", "ById"), []string{tr.qa, tr.qb}, all...)
	iamRequireQueueAccess(t, e.client(t, "u4", "InTenancy"), all, all...)
	iamRequireQueueAccess(t, e.client(t, "u5", "NotFromRoot"), nil, all...)
	iamRequireQueueAccess(t, e.client(t, "u6", "WrongCase"), nil, all...)
	iamRequireQueueAccess(t, e.client(t, "u7", "Keywords"), []string{tr.qc}, all...)
	// Groups add up.
	iamRequireQueueAccess(t, e.client(t, "u8", "ByPath", "Keywords"), []string{tr.qb, tr.qc}, all...)

	// A compartment created after the policy is covered at once (its parent is named by the statement).
	d := cpCreateCompartment(t, e.admin, tr.b, "D").Id
	qd := cpCreateQueue(t, e.admin, d, "qd").Id
	iamRequireQueueAccess(t, e.client(t, "u1", "ByName"), []string{tr.qa, tr.qb, qd}, append(all, qd)...)

	// Renaming A: the name no longer resolves, the OCID still does.
	resp, err := e.admin.UpdateCompartmentWithResponse(context.Background(), tr.a, &sdk.UpdateCompartmentParams{},
		sdk.UpdateCompartmentDetails{Name: cpPtr("A-renamed")})
	cpRequireStatus(t, resp, err, http.StatusOK)
	iamRequireQueueAccess(t, e.client(t, "u1", "ByName"), nil, append(all, qd)...)
	iamRequireQueueAccess(t, e.client(t, "u2", "ByPath"), nil, append(all, qd)...)
	iamRequireQueueAccess(t, e.client(t, "u3", "ById"), []string{tr.qa, tr.qb, qd}, append(all, qd)...)
}

// TestIAMQueueMoveNeedsBothSides: moving a queue needs QUEUE_MOVE where it is and where it goes, and afterwards
// the queue answers to the policies of its new compartment only.
func TestIAMQueueMoveNeedsBothSides(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	tr := iamMakeTree(t, e)
	e.policy(t, e.tenancyID,
		"Allow group MoversA to manage queues in compartment A",
		"Allow group MoversAC to manage queues in compartment A",
		"Allow group MoversAC to manage queues in compartment C",
	)
	move := func(client *sdk.ClientWithResponses, queueID, to string) (int, []byte) {
		resp, err := client.ChangeQueueCompartmentWithResponse(context.Background(), queueID, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: to})
		require.NoError(t, err)
		return resp.StatusCode(), resp.Body
	}
	onlyA, both := e.client(t, "a", "MoversA"), e.client(t, "ac", "MoversAC")
	status, body := move(onlyA, tr.qa, tr.c) // out of A into C: no rights in C
	iamRequireDenied(t, status, body)
	status, body = move(onlyA, tr.qc, tr.a) // from C into A: no rights in C
	iamRequireDenied(t, status, body)
	q, _ := cpGetQueue(t, e.admin, tr.qa)
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
	e := iamStart(t)
	ctx := context.Background()
	orders := cpCreateQueue(t, e.admin, e.tenancyID, "orders").Id
	invoices := cpCreateQueue(t, e.admin, e.tenancyID, "invoices").Id
	audit := cpCreateQueue(t, e.admin, e.tenancyID, "audit").Id
	e.policy(t, e.tenancyID,
		fmt.Sprintf("Allow group OrdersOnly to use queue-push in tenancy where target.queue.id = '%s'", orders),
		fmt.Sprintf("Allow group NotOrders to use queue-push in tenancy where target.queue.id != '%s'", orders),
		fmt.Sprintf("Allow group AnyOf to use queue-push in tenancy where any {target.queue.id = '%s', target.queue.name = 'invoices'}", orders),
		"Allow group AllOf to use queue-push in tenancy where all {target.queue.name = 'orders', request.principal.id = 'alice'}",
		"Allow group Readers to manage queues in tenancy where request.operation = 'GetQueue'",
		"Allow group ByCompartment to use queue-push in tenancy where target.compartment.name = 'team'",
	)
	push := func(client *sdk.ClientWithResponses, allowed []string) {
		t.Helper()
		for _, q := range []string{orders, invoices, audit} {
			status, body := iamPut(t, client, q, "m")
			if slices.Contains(allowed, q) {
				require.Equal(t, http.StatusOK, status, "queue %s: %s", q, body)
			} else {
				iamRequireDenied(t, status, body, "queue %s", q)
			}
		}
	}
	push(e.client(t, "p1", "OrdersOnly"), []string{orders})
	push(e.client(t, "p2", "NotOrders"), []string{invoices, audit})
	push(e.client(t, "p3", "AnyOf"), []string{orders, invoices})
	push(e.client(t, "alice", "AllOf"), []string{orders})
	push(e.client(t, "bob", "AllOf"), nil)
	push(e.client(t, "p4", "ByCompartment"), nil)
	// A condition grants only what the statement's verb grants: OrdersOnly may push to orders but not read it.
	status, body := iamGet(t, e.client(t, "p1", "OrdersOnly"), orders)
	iamRequireDenied(t, status, body)

	// request.operation: manage queues, but only for GetQueue.
	readers := e.client(t, "r", "Readers")
	status, body = iamGetQueue(t, readers, orders)
	require.Equal(t, http.StatusOK, status, string(body))
	st, err := readers.GetStatsWithResponse(ctx, orders, &sdk.GetStatsParams{})
	require.NoError(t, err)
	iamRequireDenied(t, st.StatusCode(), st.Body, "GetStats needs QUEUE_READ too, but is not GetQueue")
	up, err := readers.UpdateQueueWithResponse(ctx, orders, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{VisibilityInSeconds: cpPtr(3)})
	require.NoError(t, err)
	iamRequireDenied(t, up.StatusCode(), up.Body)

	// target.compartment.name: a queue in a compartment named team.
	team := cpCreateCompartment(t, e.admin, e.tenancyID, "team").Id
	inTeam := cpCreateQueue(t, e.admin, team, "in-team").Id
	status, body = iamPut(t, e.client(t, "p4", "ByCompartment"), inTeam, "m")
	require.Equal(t, http.StatusOK, status, string(body))

	// target.queue.name follows a rename at once: the name condition no longer holds for the renamed queue.
	alice := e.client(t, "alice", "AllOf")
	rename := func(queueID, name string) {
		t.Helper()
		resp, err := e.admin.UpdateQueueWithResponse(ctx, queueID, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: &name})
		cpRequireStatus(t, resp, err, http.StatusOK)
	}
	rename(orders, "orders-archive")
	status, body = iamPut(t, alice, orders, "m")
	iamRequireDenied(t, status, body, "the queue is no longer named orders")
	rename(audit, "orders")
	status, body = iamPut(t, alice, audit, "m")
	require.Equal(t, http.StatusOK, status, "the queue now named orders: %s", body)
}

// TestIAMConsumerGroupCondition: target.consumergroup.id is the group a data-plane call addresses, however the call
// names it (OCID or displayName), and the primary group (no consumerGroupId) is the queue's OCID.
func TestIAMConsumerGroupCondition(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	q := createQueue(t, e.admin, e.tenancyID, withConsumerGroups(true))
	billing := createGroup(t, e.admin, q, "billing", "")
	audit := createGroup(t, e.admin, q, "audit", "")
	put(t, e.admin, q, msg("one"), msg("two"), msg("three"))
	e.policy(t, e.tenancyID,
		fmt.Sprintf("Allow group Billing to use queue-pull in tenancy where target.consumergroup.id = '%s'", billing.Id),
		fmt.Sprintf("Allow group NotAudit to use queue-pull in tenancy where target.consumergroup.id != '%s'", audit.Id),
		fmt.Sprintf("Allow group Primary to use queue-pull in tenancy where target.consumergroup.id = '%s'", q),
	)
	check := func(client *sdk.ClientWithResponses, ref string, allowed bool) {
		t.Helper()
		var opts []getOpts
		if ref != "" {
			opts = append(opts, ofGroup(ref))
		}
		status, body := iamGet(t, client, q, opts...)
		if allowed {
			require.Equal(t, http.StatusOK, status, "group %q: %s", ref, body)
		} else {
			iamRequireDenied(t, status, body, "group %q", ref)
		}
	}
	b := e.client(t, "b", "Billing")
	check(b, billing.Id, true)
	check(b, "billing", true) // by displayName
	check(b, "BILLING", true) // displayNames match case-insensitively
	check(b, audit.Id, false)
	check(b, "audit", false)
	check(b, "", false) // the primary group

	notAudit := e.client(t, "n", "NotAudit")
	check(notAudit, billing.Id, true)
	check(notAudit, "", true)
	check(notAudit, audit.Id, false)
	check(notAudit, "audit", false) // naming the group differently must not get around the condition
	check(notAudit, "Audit", false)

	primary := e.client(t, "p", "Primary")
	check(primary, "", true)
	check(primary, q, true)
	check(primary, "billing", false)

	// Acknowledging follows the same rule: a receipt of billing cannot be deleted through audit's name by a
	// principal limited to billing (denied before the receipt is even looked at).
	put(t, e.admin, q, msg("four"))
	leased := get(t, e.admin, q, ofGroup(billing.Id))
	require.NotEmpty(t, leased)
	del, err := b.DeleteMessageWithResponse(context.Background(), q, leased[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: cpPtr("audit")})
	require.NoError(t, err)
	iamRequireDenied(t, del.StatusCode(), del.Body)
	del, err = b.DeleteMessageWithResponse(context.Background(), q, leased[0].Receipt, &sdk.DeleteMessageParams{ConsumerGroupId: cpPtr("billing")})
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, del.StatusCode(), string(del.Body))
}

// TestIAMPushPullAnyUserAndGroups: queue-push alone puts but cannot get; any-user covers every principal of the
// tenancy; groups come from the token's groups claim only.
func TestIAMPushPullAnyUserAndGroups(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	tr := iamMakeTree(t, e)
	e.policy(t, e.tenancyID,
		"Allow group Producers to use queue-push in tenancy",
		"Allow group Consumers to use queue-pull in tenancy",
		"Allow any-user to read queues in compartment A",
	)
	producer := e.client(t, "producer", "Producers")
	status, body := iamPut(t, producer, tr.qc, "hello")
	require.Equal(t, http.StatusOK, status, string(body))
	status, body = iamGet(t, producer, tr.qc)
	iamRequireDenied(t, status, body, "queue-push does not get")
	st, err := producer.GetStatsWithResponse(context.Background(), tr.qc, &sdk.GetStatsParams{})
	require.NoError(t, err)
	iamRequireDenied(t, st.StatusCode(), st.Body, "queue-push does not read stats")

	consumer := e.client(t, "consumer", "Consumers")
	status, body = iamPut(t, consumer, tr.qc, "nope")
	iamRequireDenied(t, status, body, "queue-pull does not put")
	got := get(t, consumer, tr.qc)
	require.Equal(t, []string{"hello"}, contents(got))
	deleteAll(t, consumer, tr.qc, got)

	// any-user: a principal without any group, and one in unrelated groups, read queues in A (and below) only.
	for _, client := range []*sdk.ClientWithResponses{e.client(t, "nobody"), e.client(t, "someone", "Unrelated", "Others")} {
		iamRequireQueueAccess(t, client, []string{tr.qa, tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	}

	// Groups come from the token: the same subject with and without the group, and with a group of another case.
	status, body = iamPut(t, e.client(t, "producer"), tr.qc, "m")
	iamRequireDenied(t, status, body, "a token without the group")
	status, body = iamPut(t, e.client(t, "producer", "producers"), tr.qc, "m")
	iamRequireDenied(t, status, body, "group names are case-sensitive")
	status, body = iamPut(t, e.client(t, "someone-else", "Others", "Producers"), tr.qc, "m")
	require.Equal(t, http.StatusOK, status, "any subject in the group: %s", body)
	// The subject is not a group: a principal whose sub is "Producers" has no group.
	status, body = iamPut(t, e.client(t, "Producers"), tr.qc, "m")
	iamRequireDenied(t, status, body)
}

// TestIAMCrossTenancy: a tenancy's statements grant nothing in another tenancy, whatever they name; the other
// tenancy's resources answer 404 to its principals, including its administrators.
func TestIAMCrossTenancy(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	ctx := context.Background()
	tenancyA, adminA := srv.Admin(t, "cross-a")
	tenancyB, adminB := srv.Admin(t, "cross-b")
	compB := cpCreateCompartment(t, adminB, tenancyB, "shared").Id
	queueB := cpCreateQueue(t, adminB, compB, "secret").Id
	put(t, adminB, queueB, msg("b's message"))

	policyA := iamCreatePolicy(t, adminA, tenancyA, "reach into b",
		"Allow group Administrators to manage all-resources in compartment id "+compB,
		"Allow group Administrators to manage all-resources in compartment id "+tenancyB,
		"Allow any-user to manage all-resources in compartment id "+compB,
	)
	// A principal of A whose sub and groups are those of B's administrator.
	for _, a := range []*sdk.ClientWithResponses{adminA, srv.Client(t, srv.Token(t, tenancyA, "admin", "Administrators", "Anyone"))} {
		status, body := iamGetQueue(t, a, queueB)
		iamRequireDenied(t, status, body)
		status, body = iamPut(t, a, queueB, "from a")
		iamRequireDenied(t, status, body)
		status, body = iamGet(t, a, queueB)
		iamRequireDenied(t, status, body)
		lq, err := a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: compB})
		require.NoError(t, err)
		iamRequireDenied(t, lq.StatusCode(), lq.Body)
		lq, err = a.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true)})
		require.NoError(t, err)
		iamRequireDenied(t, lq.StatusCode(), lq.Body)
		cq, err := a.CreateQueueWithResponse(ctx, &sdk.CreateQueueParams{}, sdk.CreateQueueDetails{CompartmentId: compB, DisplayName: "planted"})
		require.NoError(t, err)
		iamRequireDenied(t, cq.StatusCode(), cq.Body)
		cc, err := a.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: tenancyB, Name: "planted"})
		require.NoError(t, err)
		iamRequireDenied(t, cc.StatusCode(), cc.Body)
		gc, err := a.GetCompartmentWithResponse(ctx, compB, &sdk.GetCompartmentParams{})
		require.NoError(t, err)
		iamRequireDenied(t, gc.StatusCode(), gc.Body)
		cp, err := a.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
			CompartmentId: tenancyB, Name: "planted", Statements: []string{"Allow any-user to manage all-resources in tenancy"}})
		require.NoError(t, err)
		iamRequireDenied(t, cp.StatusCode(), cp.Body)
		lp, err := a.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: tenancyB})
		require.NoError(t, err)
		iamRequireDenied(t, lp.StatusCode(), lp.Body)
		mv, err := a.ChangeQueueCompartmentWithResponse(ctx, queueB, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: tenancyA})
		require.NoError(t, err)
		iamRequireDenied(t, mv.StatusCode(), mv.Body)
		// The simulator of A knows nothing of B: B's compartment is no compartment of A's, B's queue is missing.
		sim := iamSimulate(t, a, sdk.AuthorizeDetails{Subject: "admin", Groups: &[]string{"Administrators"},
			Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, CompartmentId: &compB})
		require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
		require.False(t, sim.JSON200.Allowed, string(sim.Body))
		require.Empty(t, sim.JSON200.MatchedStatements)
		sim = iamSimulate(t, a, sdk.AuthorizeDetails{Subject: "admin", Groups: &[]string{"Administrators"},
			Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &queueB})
		iamRequireDenied(t, sim.StatusCode(), sim.Body)
	}
	// A's policies are A's: B cannot see them either.
	gp, err := adminB.GetPolicyWithResponse(ctx, policyA.Id, &sdk.GetPolicyParams{})
	require.NoError(t, err)
	iamRequireDenied(t, gp.StatusCode(), gp.Body)

	// Nothing happened in B: its queue still holds exactly its own message, nothing was created.
	require.Equal(t, []string{"b's message"}, contents(get(t, adminB, queueB)))
	require.Equal(t, []string{queueB}, cpQueueIDs(t, adminB, sdk.ListQueuesParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true)}))
	require.Equal(t, []string{compB}, cpCompartmentIDs(t, adminB, sdk.ListCompartmentsParams{CompartmentId: tenancyB, CompartmentIdInSubtree: cpPtr(true)}))
	lp, err := adminB.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: tenancyB})
	cpRequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1, "only B's Tenant Admin Policy")
	q, _ := cpGetQueue(t, adminB, queueB)
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
	a := cpCreateCompartment(t, admin, tenancyID, "A").Id
	c := cpCreateCompartment(t, admin, tenancyID, "C").Id
	q := cpCreateQueue(t, admin, a, "orders").Id
	reader := node2.Client(t, node2.Token(t, tenancyID, "reader", "Readers"))

	eventually := func(allowed bool, what string) {
		t.Helper()
		start := time.Now()
		require.Eventually(t, func() bool {
			status, _ := iamGetQueue(t, reader, q)
			return (status == http.StatusOK) == allowed && (allowed || status == http.StatusNotFound)
		}, time.Second, 20*time.Millisecond, "node 2 must see %s within 1 s", what)
		t.Logf("%s: seen on node 2 after %v", what, time.Since(start).Round(time.Millisecond))
	}
	// Node 2 has loaded the tenancy (and cached the queue) before anything changes.
	status, body := iamGetQueue(t, reader, q)
	iamRequireDenied(t, status, body)

	p := iamCreatePolicy(t, admin, tenancyID, "readers", "Allow group Readers to read queues in compartment A")
	eventually(true, "the new policy")

	etag := func() string {
		resp, err := admin.GetPolicyWithResponse(ctx, p.Id, &sdk.GetPolicyParams{})
		cpRequireStatus(t, resp, err, http.StatusOK)
		return resp.HTTPResponse.Header.Get("etag")
	}
	update := func(statement string) {
		t.Helper()
		resp, err := admin.UpdatePolicyWithResponse(ctx, p.Id, &sdk.UpdatePolicyParams{IfMatch: cpPtr(etag())},
			sdk.UpdatePolicyDetails{Statements: &[]string{statement}})
		cpRequireStatus(t, resp, err, http.StatusOK)
	}
	update("Allow group Readers to inspect queues in compartment A")
	eventually(false, "the policy downgraded to inspect")
	update("Allow group Readers to read queues in compartment A where target.queue.name = 'orders'")
	eventually(true, "the policy upgraded again, with a condition on the queue's name")

	// The queue renamed on node 1: the name condition no longer holds on node 2.
	ren, err := admin.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: cpPtr("orders-old")})
	cpRequireStatus(t, ren, err, http.StatusOK)
	eventually(false, "the queue renamed")
	ren, err = admin.UpdateQueueWithResponse(ctx, q, &sdk.UpdateQueueParams{}, sdk.UpdateQueueDetails{DisplayName: cpPtr("orders")})
	cpRequireStatus(t, ren, err, http.StatusOK)
	eventually(true, "the queue renamed back")

	// The queue moved to C on node 1: the policy on A no longer covers it on node 2; moved back, it does.
	moveTo := func(to string) {
		t.Helper()
		resp, err := admin.ChangeQueueCompartmentWithResponse(ctx, q, &sdk.ChangeQueueCompartmentParams{},
			sdk.ChangeQueueCompartmentDetails{CompartmentId: to})
		cpRequireStatus(t, resp, err, http.StatusOK)
	}
	moveTo(c)
	eventually(false, "the queue moved out of A")
	moveTo(a)
	eventually(true, "the queue moved back into A")

	// Compartment A renamed on node 1: `in compartment A` no longer resolves on node 2.
	renameA := func(name string) {
		t.Helper()
		resp, err := admin.UpdateCompartmentWithResponse(ctx, a, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: &name})
		cpRequireStatus(t, resp, err, http.StatusOK)
	}
	renameA("A2")
	eventually(false, "compartment A renamed")
	renameA("A")
	eventually(true, "compartment A named A again")

	iamDeletePolicy(t, admin, p.Id)
	eventually(false, "the deleted policy")

	// And the other way round: a policy written through node 2 applies on node 1.
	admin2 := node2.AdminOf(t, tenancyID)
	iamCreatePolicy(t, admin2, tenancyID, "producers", "Allow group Producers to use queue-push in compartment A")
	producer := node1.Client(t, node1.Token(t, tenancyID, "producer", "Producers"))
	require.Eventually(t, func() bool {
		status, _ := iamPut(t, producer, q, "m")
		return status == http.StatusOK
	}, time.Second, 20*time.Millisecond, "node 1 must see the policy created on node 2 within 1 s")
}

// TestIAMListsOnlyWhatCallerMayInspect: a subtree list answers what the caller may inspect in the subtree, even
// from a compartment where it may inspect nothing itself; a caller who may inspect nothing there gets 404.
func TestIAMListsOnlyWhatCallerMayInspect(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	tr := iamMakeTree(t, e)
	a1 := cpCreateCompartment(t, e.admin, tr.a, "A1").Id
	c1 := cpCreateCompartment(t, e.admin, tr.c, "C1").Id
	e.policy(t, e.tenancyID,
		"Allow group InA to inspect queues in compartment A",
		"Allow group InA to inspect compartments in compartment A",
		"Allow group ListOnly to inspect queues in compartment A where request.operation = 'ListQueues'",
		"Allow group ListOnly to inspect compartments in compartment A where request.operation = 'ListCompartments'",
	)
	subtree := cpPtr(true)
	for _, group := range []string{"InA", "ListOnly"} {
		t.Run(group, func(t *testing.T) {
			client := e.client(t, "u-"+group, group)
			for _, from := range []string{e.tenancyID, tr.a} {
				require.ElementsMatch(t, []string{tr.qa, tr.qb},
					cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: from, CompartmentIdInSubtree: subtree}), "queues from %s", from)
				// The compartments in A (A itself lies in the root, where the caller may inspect nothing).
				require.ElementsMatch(t, []string{tr.b, a1},
					cpCompartmentIDs(t, client, sdk.ListCompartmentsParams{CompartmentId: from, CompartmentIdInSubtree: subtree}), "compartments from %s", from)
			}
			// Without the subtree, the root itself is not the caller's to list; A is.
			lq, err := client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e.tenancyID})
			require.NoError(t, err)
			iamRequireDenied(t, lq.StatusCode(), lq.Body)
			require.Equal(t, []string{tr.qa}, cpQueueIDs(t, client, sdk.ListQueuesParams{CompartmentId: tr.a}))
			// Nothing of C's subtree, from C either.
			lq, err = client.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: tr.c, CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			iamRequireDenied(t, lq.StatusCode(), lq.Body)
			lc, err := client.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: tr.c, CompartmentIdInSubtree: subtree})
			require.NoError(t, err)
			iamRequireDenied(t, lc.StatusCode(), lc.Body)
		})
	}
	// The administrator sees everything; a stranger gets 404 for the subtree as for anything else.
	require.ElementsMatch(t, []string{tr.qa, tr.qb, tr.qc, tr.qr},
		cpQueueIDs(t, e.admin, sdk.ListQueuesParams{CompartmentId: e.tenancyID, CompartmentIdInSubtree: subtree}))
	require.ElementsMatch(t, []string{tr.a, tr.b, tr.c, a1, c1},
		cpCompartmentIDs(t, e.admin, sdk.ListCompartmentsParams{CompartmentId: e.tenancyID, CompartmentIdInSubtree: subtree}))
	stranger := e.client(t, "stranger")
	lq, err := stranger.ListQueuesWithResponse(context.Background(), &sdk.ListQueuesParams{CompartmentId: e.tenancyID, CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	iamRequireDenied(t, lq.StatusCode(), lq.Body)
	lc, err := stranger.ListCompartmentsWithResponse(context.Background(), &sdk.ListCompartmentsParams{CompartmentId: e.tenancyID, CompartmentIdInSubtree: subtree})
	require.NoError(t, err)
	iamRequireDenied(t, lc.StatusCode(), lc.Body)
}

// TestIAMSimulator: the policy simulator explains decisions with the matching statements; it needs read policies
// in the tenancy and checks its input.
func TestIAMSimulator(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	ctx := context.Background()
	a := cpCreateCompartment(t, e.admin, e.tenancyID, "A").Id
	q := createQueue(t, e.admin, a, withConsumerGroups(true))
	billing := createGroup(t, e.admin, q, "billing", "")
	lp, err := e.admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.tenancyID, Name: cpPtr("Tenant Admin Policy")})
	cpRequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	tenantAdmin := lp.JSON200.Items[0]
	push := e.policy(t, e.tenancyID,
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
	sim := iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "alice", Groups: &[]string{"Producers", "Administrators"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH, QueueId: &q})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.True(t, sim.JSON200.Allowed)
	require.Equal(t, []matched{
		{tenantAdmin.Id, "Allow group Administrators to manage all-resources in tenancy"},
		{push.Id, "Allow group Producers to use queue-push in compartment A"},
	}, sim.JSON200.MatchedStatements)

	// A stranger: denied, and an empty list (not null).
	sim = iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "mallory", Permission: sdk.AuthorizeDetailsPermissionQUEUEPUSH, QueueId: &q})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.JSONEq(t, `{"allowed":false,"matchedStatements":[]}`, string(sim.Body))

	// A producer outside A's subtree: denied at the root, allowed in A.
	producer := func(d sdk.AuthorizeDetails) bool {
		t.Helper()
		d.Subject, d.Groups = "p", &[]string{"Producers"}
		resp := iamSimulate(t, e.admin, d)
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
		resp := iamSimulate(t, e.admin, d)
		require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
		return resp.JSON200.Allowed
	}
	require.True(t, pull(sdk.AuthorizeDetails{QueueId: &q, ConsumerGroupId: &billing.Id}))
	require.False(t, pull(sdk.AuthorizeDetails{QueueId: &q, ConsumerGroupId: &q}), "the primary group")
	require.False(t, pull(sdk.AuthorizeDetails{QueueId: &q}), "no group")
	require.True(t, pull(sdk.AuthorizeDetails{ConsumerGroupId: &billing.Id}), "the group's queue is in A")
	// A pull without a group addresses the primary group, in the simulator as in a real call.
	primary := iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "pp", Groups: &[]string{"PrimaryPullers"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEPULL, QueueId: &q})
	require.Equal(t, http.StatusOK, primary.StatusCode(), string(primary.Body))
	require.True(t, primary.JSON200.Allowed, string(primary.Body))
	status, body := iamGet(t, e.client(t, "pp", "PrimaryPullers"), q)
	require.Equal(t, http.StatusOK, status, string(body))

	// Who may ask: read policies in the tenancy.
	ask := func(groups ...string) *sdk.AuthorizeResponse {
		return iamSimulate(t, e.client(t, "asker", groups...), sdk.AuthorizeDetails{Subject: "x", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD})
	}
	resp := ask("PolicyReaders")
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	for _, groups := range [][]string{nil, {"PolicyInspectors"}, {"PolicyReadersInA"}, {"Producers"}} {
		resp = ask(groups...)
		iamRequireDenied(t, resp.StatusCode(), resp.Body, "groups %v", groups)
	}

	// Bad input: 400 naming the field.
	token := e.token(t, "admin", "Administrators")
	for _, body := range []string{
		`{"subject":"x","permission":"QUEUE_FLY"}`,
		`{"subject":"x","permission":"queue_read"}`,
		`{"subject":"x"}`,
	} {
		r := raw(t, e.srv, token, http.MethodPost, "/20210201/actions/authorize", strings.NewReader(body))
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Body)
		require.Contains(t, string(r.Body), "permission", body)
	}
	missingQueue := "ocid1.queue.ferry.local." + strings.Repeat("q", 32)
	sim = iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "x", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &missingQueue})
	iamRequireDenied(t, sim.StatusCode(), sim.Body)
}

// TestIAMPoliciesAPI: CRUD, statement errors with index and column, etags, unique names, and the Tenant Admin
// Policy, whose deletion really revokes the administrators' access.
func TestIAMPoliciesAPI(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	ctx := context.Background()
	a := cpCreateCompartment(t, e.admin, e.tenancyID, "A").Id

	created := iamCreatePolicy(t, e.admin, a, "Ops", "Allow group Ops to read queues in compartment A")
	require.Equal(t, a, created.CompartmentId)
	require.Equal(t, sdk.LifecycleStateACTIVE, created.LifecycleState)
	require.True(t, strings.HasPrefix(created.Id, "ocid1.policy."), created.Id)
	get := func(id string) (sdk.Policy, string) {
		t.Helper()
		resp, err := e.admin.GetPolicyWithResponse(ctx, id, &sdk.GetPolicyParams{})
		cpRequireStatus(t, resp, err, http.StatusOK)
		return *resp.JSON200, resp.HTTPResponse.Header.Get("etag")
	}
	got, etag := get(created.Id)
	require.Equal(t, created, got)
	require.NotEmpty(t, etag)
	list := func(compartmentID string) []string {
		t.Helper()
		resp, err := e.admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: compartmentID})
		cpRequireStatus(t, resp, err, http.StatusOK)
		var names []string
		for _, p := range resp.JSON200.Items {
			names = append(names, p.Name)
		}
		return names
	}
	require.Equal(t, []string{"Ops"}, list(a))
	require.Equal(t, []string{"Tenant Admin Policy"}, list(e.tenancyID))

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
		resp, err := e.admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{},
			sdk.CreatePolicyDetails{CompartmentId: a, Name: "bad", Statements: tc.statements})
		cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", tc.want)
		up, err := e.admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{},
			sdk.UpdatePolicyDetails{Statements: &tc.statements})
		cpRequireError(t, up, err, http.StatusBadRequest, "InvalidParameter", tc.want)
	}
	require.Equal(t, []string{"Ops"}, list(a))
	got, _ = get(created.Id)
	require.Equal(t, created.Statements, got.Statements, "a refused update changes nothing")

	// Names are unique in the tenancy, case-insensitively, across compartments; a deleted policy frees its name.
	dup, err := e.admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{},
		sdk.CreatePolicyDetails{CompartmentId: e.tenancyID, Name: "ops", Statements: []string{"Allow group X to read queues in tenancy"}})
	cpRequireError(t, dup, err, http.StatusConflict, "Conflict", "name")
	other := iamCreatePolicy(t, e.admin, a, "Other", "Allow group X to read queues in compartment A")
	ren, err := e.admin.UpdatePolicyWithResponse(ctx, other.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Name: cpPtr("OPS")})
	cpRequireError(t, ren, err, http.StatusConflict, "Conflict", "name")

	// Update with the etag; a stale etag answers 412 for update and delete alike.
	up, err := e.admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{IfMatch: &etag}, sdk.UpdatePolicyDetails{
		Description: cpPtr("operators"), Statements: &[]string{"Allow group Ops to use queues in compartment A", "Allow group Ops to read policies in compartment A"}})
	cpRequireStatus(t, up, err, http.StatusOK)
	newEtag := up.HTTPResponse.Header.Get("etag")
	require.NotEqual(t, etag, newEtag)
	require.Equal(t, "operators", up.JSON200.Description)
	require.Len(t, up.JSON200.Statements, 2)
	require.Equal(t, "Ops", up.JSON200.Name, "absent fields are unchanged")
	stale, err := e.admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{IfMatch: &etag}, sdk.UpdatePolicyDetails{Description: cpPtr("x")})
	cpRequireError(t, stale, err, http.StatusPreconditionFailed, "NoEtagMatch")
	staleDel, err := e.admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{IfMatch: &etag})
	cpRequireError(t, staleDel, err, http.StatusPreconditionFailed, "NoEtagMatch")
	del, err := e.admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{IfMatch: &newEtag})
	cpRequireStatus(t, del, err, http.StatusNoContent)
	require.Equal(t, []string{"Other"}, list(a))
	del, err = e.admin.DeletePolicyWithResponse(ctx, created.Id, &sdk.DeletePolicyParams{})
	cpRequireError(t, del, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	up, err = e.admin.UpdatePolicyWithResponse(ctx, created.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Description: cpPtr("x")})
	cpRequireError(t, up, err, http.StatusNotFound, "NotAuthorizedOrNotFound")
	iamCreatePolicy(t, e.admin, a, "Ops", "Allow group Ops to read queues in compartment A")

	// The Tenant Admin Policy is an ordinary policy: visible and editable.
	lp, err := e.admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.tenancyID})
	cpRequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	admin := lp.JSON200.Items[0]
	require.Equal(t, []string{"Allow group Administrators to manage all-resources in tenancy"}, admin.Statements)
	desc, err := e.admin.UpdatePolicyWithResponse(ctx, admin.Id, &sdk.UpdatePolicyParams{}, sdk.UpdatePolicyDetails{Description: cpPtr("the admins")})
	cpRequireStatus(t, desc, err, http.StatusOK)
}

// TestIAMDeleteTenantAdminPolicy: deleting the Tenant Admin Policy revokes the administrators' access at once:
// nothing works for them any more, not even restoring the policy.
func TestIAMDeleteTenantAdminPolicy(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	ctx := context.Background()
	q := createQueue(t, e.admin, e.tenancyID)
	lp, err := e.admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.tenancyID})
	cpRequireStatus(t, lp, err, http.StatusOK)
	require.Len(t, lp.JSON200.Items, 1)
	iamDeletePolicy(t, e.admin, lp.JSON200.Items[0].Id)

	status, body := iamGetQueue(t, e.admin, q)
	iamRequireDenied(t, status, body)
	status, body = iamPut(t, e.admin, q, "m")
	iamRequireDenied(t, status, body)
	lq, err := e.admin.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e.tenancyID, CompartmentIdInSubtree: cpPtr(true)})
	require.NoError(t, err)
	iamRequireDenied(t, lq.StatusCode(), lq.Body)
	lp, err = e.admin.ListPoliciesWithResponse(ctx, &sdk.ListPoliciesParams{CompartmentId: e.tenancyID})
	require.NoError(t, err)
	iamRequireDenied(t, lp.StatusCode(), lp.Body)
	cp, err := e.admin.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
		CompartmentId: e.tenancyID, Name: "Tenant Admin Policy", Statements: []string{"Allow group Administrators to manage all-resources in tenancy"}})
	require.NoError(t, err)
	iamRequireDenied(t, cp.StatusCode(), cp.Body)
	cc, err := e.admin.CreateCompartmentWithResponse(ctx, &sdk.CreateCompartmentParams{}, sdk.CreateCompartmentDetails{CompartmentId: e.tenancyID, Name: "x"})
	require.NoError(t, err)
	iamRequireDenied(t, cc.StatusCode(), cc.Body)
	sim := iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "admin", Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD})
	iamRequireDenied(t, sim.StatusCode(), sim.Body)
}

// TestIAMPolicyScope: a policy grants only inside the compartment it is attached to, so that `manage policies` in
// a compartment cannot be turned into more access than that compartment's.
func TestIAMPolicyScope(t *testing.T) {
	t.Parallel()
	e := iamStart(t)
	ctx := context.Background()
	tr := iamMakeTree(t, e)
	e.policy(t, e.tenancyID, "Allow group DelegatedA to manage policies in compartment A")
	delegate := e.client(t, "d", "DelegatedA")

	// Inside A: accepted and effective.
	teamA := iamCreatePolicy(t, delegate, tr.a, "team-a", "Allow group TeamA to read queues in compartment A:B")
	iamRequireQueueAccess(t, e.client(t, "ta", "TeamA"), []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	// An update is held to the same rule (the policy's compartment, not the caller's choice).
	up, err := delegate.UpdatePolicyWithResponse(ctx, teamA.Id, &sdk.UpdatePolicyParams{},
		sdk.UpdatePolicyDetails{Statements: &[]string{"Allow group TeamA to read queues in tenancy"}})
	cpRequireError(t, up, err, http.StatusBadRequest, "InvalidParameter", "statements[0]", "compartment A")
	iamRequireQueueAccess(t, e.client(t, "ta", "TeamA"), []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)

	// Reaching out of A: refused, whichever way the location is written.
	for i, statement := range []string{
		"Allow group DelegatedA to manage all-resources in tenancy",
		"Allow group DelegatedA to manage all-resources in compartment C",
		"Allow group DelegatedA to manage all-resources in compartment id " + tr.c,
		"Allow group DelegatedA to manage all-resources in compartment id " + e.tenancyID,
	} {
		resp, err := delegate.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
			CompartmentId: tr.a, Name: fmt.Sprintf("escalate-%d", i), Statements: []string{"Allow group X to read queues in compartment A", statement}})
		cpRequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "statements[1]")
	}
	iamRequireQueueAccess(t, delegate, nil, tr.qa, tr.qb, tr.qc, tr.qr)

	// A statement whose path later resolves outside the policy's compartment grants nothing there: A's policy
	// names A:B; B moved away is impossible, but renaming lets a path point elsewhere, so the check is repeated
	// when policies are loaded.
	iamCreatePolicy(t, e.admin, tr.a, "by-path", "Allow group ByPath to read queues in compartment A:B")
	byPath := e.client(t, "bp", "ByPath")
	iamRequireQueueAccess(t, byPath, []string{tr.qb}, tr.qa, tr.qb, tr.qc, tr.qr)
	rename := func(id, name string) {
		t.Helper()
		resp, err := e.admin.UpdateCompartmentWithResponse(ctx, id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: &name})
		cpRequireStatus(t, resp, err, http.StatusOK)
	}
	// Now "A:B" is C's child B (renamed C → A, A → Z): outside the policy's compartment.
	rename(tr.a, "Z")
	rename(tr.c, "A")
	cb := cpCreateCompartment(t, e.admin, tr.c, "B").Id
	qcb := cpCreateQueue(t, e.admin, cb, "qcb").Id
	iamRequireQueueAccess(t, byPath, nil, tr.qa, tr.qb, tr.qc, tr.qr, qcb)
	// The simulator agrees.
	sim := iamSimulate(t, e.admin, sdk.AuthorizeDetails{Subject: "bp", Groups: &[]string{"ByPath"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &qcb})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.False(t, sim.JSON200.Allowed)
}
