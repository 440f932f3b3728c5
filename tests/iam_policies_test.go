package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

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
	lq, err := e.Admin.ListQueuesWithResponse(ctx, &sdk.ListQueuesParams{CompartmentId: e2e.Ptr(e.ID), CompartmentIdInSubtree: e2e.Ptr(true)})
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
	tr := e.Admin.NewTree(t, e.ID)
	e.Policy(t, e.ID, "Allow group DelegatedA to manage policies in compartment A")
	delegate := e.Client(t, "d", "DelegatedA")

	// Inside A: accepted and effective.
	teamA := delegate.NewPolicy(t, tr.A, "team-a", "Allow group TeamA to read queues in compartment A:B")
	e.Client(t, "ta", "TeamA").RequireQueueAccess(t, []string{tr.QB}, tr.QA, tr.QB, tr.QC, tr.QR)
	// An update is held to the same rule (the policy's compartment, not the caller's choice).
	up, err := delegate.UpdatePolicyWithResponse(ctx, teamA.Id, &sdk.UpdatePolicyParams{},
		sdk.UpdatePolicyDetails{Statements: &[]string{"Allow group TeamA to read queues in tenancy"}})
	e2e.RequireError(t, up, err, http.StatusBadRequest, "InvalidParameter", "statements[0]", "compartment A")
	e.Client(t, "ta", "TeamA").RequireQueueAccess(t, []string{tr.QB}, tr.QA, tr.QB, tr.QC, tr.QR)

	// Reaching out of A: refused, whichever way the location is written.
	for i, statement := range []string{
		"Allow group DelegatedA to manage all-resources in tenancy",
		"Allow group DelegatedA to manage all-resources in compartment C",
		"Allow group DelegatedA to manage all-resources in compartment id " + tr.C,
		"Allow group DelegatedA to manage all-resources in compartment id " + e.ID,
	} {
		resp, err := delegate.CreatePolicyWithResponse(ctx, &sdk.CreatePolicyParams{}, sdk.CreatePolicyDetails{
			CompartmentId: tr.A, Name: fmt.Sprintf("escalate-%d", i), Statements: []string{"Allow group X to read queues in compartment A", statement}})
		e2e.RequireError(t, resp, err, http.StatusBadRequest, "InvalidParameter", "statements[1]")
	}
	delegate.RequireQueueAccess(t, nil, tr.QA, tr.QB, tr.QC, tr.QR)

	// A statement whose path later resolves outside the policy's compartment grants nothing there: A's policy
	// names A:B; B moved away is impossible, but renaming lets a path point elsewhere, so the check is repeated
	// when policies are loaded.
	e.Admin.NewPolicy(t, tr.A, "by-path", "Allow group ByPath to read queues in compartment A:B")
	byPath := e.Client(t, "bp", "ByPath")
	byPath.RequireQueueAccess(t, []string{tr.QB}, tr.QA, tr.QB, tr.QC, tr.QR)
	rename := func(id, name string) {
		t.Helper()
		resp, err := e.Admin.UpdateCompartmentWithResponse(ctx, id, &sdk.UpdateCompartmentParams{}, sdk.UpdateCompartmentDetails{Name: &name})
		e2e.RequireStatus(t, resp, err, http.StatusOK)
	}
	// Now "A:B" is C's child B (renamed C → A, A → Z): outside the policy's compartment.
	rename(tr.A, "Z")
	rename(tr.C, "A")
	cb := e.Admin.NewCompartment(t, tr.C, "B").Id
	qcb := e.Admin.NewNamedQueue(t, cb, "qcb").Id
	byPath.RequireQueueAccess(t, nil, tr.QA, tr.QB, tr.QC, tr.QR, qcb)
	// The simulator agrees.
	sim := e.Admin.Simulate(t, sdk.AuthorizeDetails{Subject: "bp", Groups: &[]string{"ByPath"},
		Permission: sdk.AuthorizeDetailsPermissionQUEUEREAD, QueueId: &qcb})
	require.Equal(t, http.StatusOK, sim.StatusCode(), string(sim.Body))
	require.False(t, sim.JSON200.Allowed)
}
