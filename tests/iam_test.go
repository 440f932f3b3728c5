package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

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

// TestIAMCompartmentInheritance: a statement covers its compartment and every descendant, never a sibling or the
// parent, whichever way the location is written.
func TestIAMCompartmentInheritance(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := e.Admin.NewTree(t, e.ID)
	all := []string{tr.QA, tr.QB, tr.QC, tr.QR}
	e.Policy(t, e.ID,
		"Allow group ByName to read queues in compartment A",
		"Allow group ByPath to read queues in compartment A:B",
		"Allow group ById to read queues in compartment id "+tr.A,
		"Allow group InTenancy to read queues in tenancy",
		"Allow group NotFromRoot to read queues in compartment B", // paths start at the root: B is not a root child
		"Allow group WrongCase to read queues in compartment a",   // names are case-sensitive
		"ALLOW GROUP Keywords TO READ QUEUES IN COMPARTMENT C",    // keywords are not
	)
	e.Client(t, "u1", "ByName").RequireQueueAccess(t, []string{tr.QA, tr.QB}, all...)
	e.Client(t, "u2", "ByPath").RequireQueueAccess(t, []string{tr.QB}, all...)
	e.Client(t, "u3", "ById").RequireQueueAccess(t, []string{tr.QA, tr.QB}, all...)
	e.Client(t, "u4", "InTenancy").RequireQueueAccess(t, all, all...)
	e.Client(t, "u5", "NotFromRoot").RequireQueueAccess(t, nil, all...)
	e.Client(t, "u6", "WrongCase").RequireQueueAccess(t, nil, all...)
	e.Client(t, "u7", "Keywords").RequireQueueAccess(t, []string{tr.QC}, all...)
	// Groups add up.
	e.Client(t, "u8", "ByPath", "Keywords").RequireQueueAccess(t, []string{tr.QB, tr.QC}, all...)

	// A compartment created after the policy is covered at once (its parent is named by the statement).
	d := e.Admin.NewCompartment(t, tr.B, "D").Id
	qd := e.Admin.NewNamedQueue(t, d, "qd").Id
	e.Client(t, "u1", "ByName").RequireQueueAccess(t, []string{tr.QA, tr.QB, qd}, append(all, qd)...)

	// Renaming A: the name no longer resolves, the OCID still does.
	resp, err := e.Admin.UpdateCompartmentWithResponse(context.Background(), tr.A, &sdk.UpdateCompartmentParams{},
		sdk.UpdateCompartmentDetails{Name: e2e.Ptr("A-renamed")})
	e2e.RequireStatus(t, resp, err, http.StatusOK)
	e.Client(t, "u1", "ByName").RequireQueueAccess(t, nil, append(all, qd)...)
	e.Client(t, "u2", "ByPath").RequireQueueAccess(t, nil, append(all, qd)...)
	e.Client(t, "u3", "ById").RequireQueueAccess(t, []string{tr.QA, tr.QB, qd}, append(all, qd)...)
}

// TestIAMQueueMoveNeedsBothSides: moving a queue needs QUEUE_MOVE where it is and where it goes, and afterwards
// the queue answers to the policies of its new compartment only.
func TestIAMQueueMoveNeedsBothSides(t *testing.T) {
	t.Parallel()
	e := testserver.StartTenancy(t, "iam")
	tr := e.Admin.NewTree(t, e.ID)
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
	status, body := move(onlyA, tr.QA, tr.C) // out of A into C: no rights in C
	e2e.RequireDenied(t, status, body)
	status, body = move(onlyA, tr.QC, tr.A) // from C into A: no rights in C
	e2e.RequireDenied(t, status, body)
	q, _ := e.Admin.QueueWithETag(t, tr.QA)
	require.Equal(t, tr.A, q.CompartmentId, "a refused move changes nothing")

	status, body = move(both, tr.QA, tr.C)
	require.Equal(t, http.StatusAccepted, status, string(body))
	// The queue now lives in C: the A-only principal lost it at once, on this node.
	onlyA.RequireQueueAccess(t, []string{tr.QB}, tr.QA, tr.QB, tr.QC)
	both.RequireQueueAccess(t, []string{tr.QA, tr.QB, tr.QC}, tr.QA, tr.QB, tr.QC, tr.QR)
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
		e2e.RequireStatus(t, resp, err, http.StatusAccepted)
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
	tr := e.Admin.NewTree(t, e.ID)
	e.Policy(t, e.ID,
		"Allow group Producers to use queue-push in tenancy",
		"Allow group Consumers to use queue-pull in tenancy",
		"Allow any-user to read queues in compartment A",
	)
	producer := e.Client(t, "producer", "Producers")
	status, body := producer.TryPut(t, tr.QC, "hello")
	require.Equal(t, http.StatusOK, status, string(body))
	status, body = producer.TryGet(t, tr.QC)
	e2e.RequireDenied(t, status, body, "queue-push does not get")
	st, err := producer.GetStatsWithResponse(context.Background(), tr.QC, &sdk.GetStatsParams{})
	require.NoError(t, err)
	e2e.RequireDenied(t, st.StatusCode(), st.Body, "queue-push does not read stats")

	consumer := e.Client(t, "consumer", "Consumers")
	status, body = consumer.TryPut(t, tr.QC, "nope")
	e2e.RequireDenied(t, status, body, "queue-pull does not put")
	got := consumer.Get(t, tr.QC)
	require.Equal(t, []string{"hello"}, e2e.Contents(got))
	consumer.DeleteAll(t, tr.QC, got)

	// any-user: a principal without any group, and one in unrelated groups, read queues in A (and below) only.
	for _, client := range []*e2e.Client{e.Client(t, "nobody"), e.Client(t, "someone", "Unrelated", "Others")} {
		client.RequireQueueAccess(t, []string{tr.QA, tr.QB}, tr.QA, tr.QB, tr.QC, tr.QR)
	}

	// Groups come from the token: the same subject with and without the group, and with a group of another case.
	status, body = e.Client(t, "producer").TryPut(t, tr.QC, "m")
	e2e.RequireDenied(t, status, body, "a token without the group")
	status, body = e.Client(t, "producer", "producers").TryPut(t, tr.QC, "m")
	e2e.RequireDenied(t, status, body, "group names are case-sensitive")
	status, body = e.Client(t, "someone-else", "Others", "Producers").TryPut(t, tr.QC, "m")
	require.Equal(t, http.StatusOK, status, "any subject in the group: %s", body)
	// The subject is not a group: a principal whose sub is "Producers" has no group.
	status, body = e.Client(t, "Producers").TryPut(t, tr.QC, "m")
	e2e.RequireDenied(t, status, body)
}
