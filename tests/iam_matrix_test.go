package tests

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/openapi/sdk"
	"github.com/ferry-mq/ferry/tests/e2e"
	"github.com/ferry-mq/ferry/tests/testserver"
)

// iamRequest is one API call of the permission matrix.
type iamRequest struct {
	method, path string
	body         any
}

// iamMatrixRow is one operation of the permission matrix: a principal whose only statement grants allow may call
// it, and a principal whose only statement is one of deny (the verb just below, or a neighbouring resource type)
// gets 404, exactly like for a missing resource.
type iamMatrixRow struct {
	op    string
	allow string   // "<verb> <resource-type>", e.g. "read queues"; "" = any authenticated caller, no policy
	deny  []string // "<verb> <resource-type>[ in <location>]"
	in    string   // the statements' location; "" = the matrix compartment
	want  int      // the status of the allowed call
	// setup creates what the call needs (with the administrator) and returns the call. The denied calls are sent
	// first and must change nothing, so that the same call then succeeds for the allowed principal.
	setup func(t *testing.T, m *iamMatrix) iamRequest
}

// iamMatrix is the shared state of the matrix: the tenancy and the compartment "mx" every row works in.
type iamMatrix struct {
	*testserver.Tenancy
	mx string // OCID of compartment mx (a child of the root)
}

// child creates a compartment under mx.
func (m *iamMatrix) child(t *testing.T, name string) string {
	t.Helper()
	return m.Admin.NewCompartment(t, m.mx, name).Id
}

// queue creates a queue in mx.
func (m *iamMatrix) queue(t *testing.T, opts ...e2e.QueueOption) string {
	t.Helper()
	return m.Admin.NewQueue(t, m.mx, opts...)
}

// partitioned creates a partitioned queue in mx with a PARTITION group named "stream".
func (m *iamMatrix) partitioned(t *testing.T) string {
	t.Helper()
	q := m.queue(t, e2e.WithPartitions(2, false))
	m.Admin.NewGroup(t, q, "stream", "", e2e.ByPartition())
	return q
}

// receipt publishes a message to a new queue in mx and leases it: the queue and the receipt.
func (m *iamMatrix) receipt(t *testing.T) (queueID, receipt string) {
	t.Helper()
	queueID = m.queue(t)
	m.Admin.Put(t, queueID, e2e.Msg("leased"))
	leased := m.Admin.Get(t, queueID)
	require.Len(t, leased, 1)
	return queueID, leased[0].Receipt
}

// group creates a consumer group on a new queue with the capability: the queue and the group's OCID.
func (m *iamMatrix) group(t *testing.T, name string) (queueID, groupID string) {
	t.Helper()
	queueID = m.queue(t, e2e.WithConsumerGroups(true))
	return queueID, m.Admin.NewGroup(t, queueID, name, "").Id
}

func iamMatrixRows() []iamMatrixRow {
	const v = "/20210201"
	return []iamMatrixRow{
		// Compartments: the target is the compartment itself (for create and list: the parent).
		{op: "CreateCompartment", allow: "manage compartments", deny: []string{"use compartments", "manage queues"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/compartments", map[string]any{"compartmentId": m.mx, "name": "created"}}
			}},
		{op: "GetCompartment", allow: "read compartments", deny: []string{"inspect compartments", "manage policies"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/compartments/" + m.child(t, "get"), nil}
			}},
		{op: "ListCompartments", allow: "inspect compartments", deny: []string{"manage queues", "manage policies"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/compartments?compartmentId=" + m.mx, nil}
			}},
		{op: "UpdateCompartment", allow: "use compartments", deny: []string{"read compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"PUT", v + "/compartments/" + m.child(t, "update"), map[string]any{"description": "changed"}}
			}},
		{op: "DeleteCompartment", allow: "manage compartments", deny: []string{"use compartments", "manage queue-family"}, want: http.StatusNoContent,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"DELETE", v + "/compartments/" + m.child(t, "delete"), nil}
			}},
		// Queues.
		{op: "CreateQueue", allow: "manage queues", deny: []string{"use queues", "manage queue-push", "manage queue-pull"}, want: http.StatusAccepted,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues", map[string]any{"compartmentId": m.mx, "displayName": "created"}}
			}},
		{op: "GetQueue", allow: "read queues", deny: []string{"inspect queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t), nil}
			}},
		{op: "ListQueues", allow: "inspect queues", deny: []string{"manage queue-push", "manage compartments"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues?compartmentId=" + m.mx, nil}
			}},
		{op: "UpdateQueue", allow: "use queues", deny: []string{"read queues", "manage queue-pull"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"PUT", v + "/queues/" + m.queue(t), map[string]any{"visibilityInSeconds": 5}}
			}},
		{op: "DeleteQueue", allow: "manage queues", deny: []string{"use queues"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"DELETE", v + "/queues/" + m.queue(t), nil}
			}},
		{op: "ChangeQueueCompartment", allow: "manage queues", deny: []string{"use queues"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.queue(t) + "/actions/changeCompartment",
					map[string]any{"compartmentId": m.child(t, "move-to")}}
			}},
		{op: "PurgeQueue", allow: "manage queues", deny: []string{"use queues", "manage queue-pull"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.queue(t) + "/actions/purge", map[string]any{"purgeType": "NORMAL"}}
			}},
		{op: "RedriveMessages", allow: "use queues", deny: []string{"read queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.queue(t, e2e.WithDLQ(1)) + "/actions/redrive", map[string]any{}}
			}},
		{op: "GetStats", allow: "read queues", deny: []string{"inspect queues", "manage queue-push"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t) + "/stats", nil}
			}},
		{op: "GetQueueMetrics", allow: "read queue-metrics", deny: []string{"inspect queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t) + "/metrics", nil}
			}},
		{op: "ListChannels", allow: "read queues", deny: []string{"inspect queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t) + "/channels", nil}
			}},
		// Work requests are queue resources.
		{op: "GetWorkRequest", allow: "read queues", deny: []string{"inspect queues", "manage compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/workRequests/" + m.Admin.StartQueueDelete(t, m.queue(t)), nil}
			}},
		{op: "ListWorkRequestErrors", allow: "read queues", deny: []string{"inspect queues", "manage compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/workRequests/" + m.Admin.StartQueueDelete(t, m.queue(t)) + "/errors", nil}
			}},
		{op: "ListWorkRequestLogs", allow: "read queues", deny: []string{"inspect queues", "manage compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/workRequests/" + m.Admin.StartQueueDelete(t, m.queue(t)) + "/logs", nil}
			}},
		{op: "ListWorkRequests", allow: "inspect queues", deny: []string{"manage compartments", "manage queue-push"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/workRequests?compartmentId=" + m.mx, nil}
			}},
		// Consumer groups are queue resources: the target is their queue's compartment.
		{op: "CreateConsumerGroup", allow: "manage queues", deny: []string{"use queues", "manage queue-pull"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/consumerGroups",
					map[string]any{"queueId": m.queue(t, e2e.WithConsumerGroups(true)), "displayName": "created"}}
			}},
		{op: "GetConsumerGroup", allow: "read queues", deny: []string{"inspect queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				_, g := m.group(t, "get")
				return iamRequest{"GET", v + "/consumerGroups/" + g, nil}
			}},
		{op: "ListConsumerGroups", allow: "inspect queues", deny: []string{"manage queue-pull", "manage compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, _ := m.group(t, "list")
				return iamRequest{"GET", v + "/consumerGroups?queueId=" + q, nil}
			}},
		{op: "UpdateConsumerGroup", allow: "use queues", deny: []string{"read queues", "manage queue-pull"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				_, g := m.group(t, "update")
				return iamRequest{"PUT", v + "/consumerGroups/" + g, map[string]any{"isEnabled": false}}
			}},
		{op: "DeleteConsumerGroup", allow: "manage queues", deny: []string{"use queues"}, want: http.StatusAccepted,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				_, g := m.group(t, "delete")
				return iamRequest{"DELETE", v + "/consumerGroups/" + g, nil}
			}},
		// The filter dry run touches no resource: any authenticated caller, without any policy.
		{op: "ValidateConsumerGroupFilter", want: http.StatusOK,
			setup: func(*testing.T, *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/consumerGroups/actions/validateFilter", map[string]any{"filter": `:team = "a"`}}
			}},
		// Data plane: queue-push puts, queue-pull gets and acknowledges; neither is part of queues.
		{op: "PutMessages", allow: "use queue-push", deny: []string{"read queue-push", "manage queue-pull", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.queue(t) + "/messages", map[string]any{"messages": []any{map[string]any{"content": "x"}}}}
			}},
		{op: "GetMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t) + "/messages?timeoutInSeconds=0", nil}
			}},
		{op: "DeleteMessage", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusNoContent,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, r := m.receipt(t)
				return iamRequest{"DELETE", v + "/queues/" + q + "/messages/" + url.PathEscape(r), nil}
			}},
		{op: "DeleteMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, r := m.receipt(t)
				return iamRequest{"POST", v + "/queues/" + q + "/messages/actions/deleteMessages",
					map[string]any{"entries": []any{map[string]any{"receipt": r}}}}
			}},
		{op: "DeleteAndGetMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, r := m.receipt(t)
				return iamRequest{"POST", v + "/queues/" + q + "/messages/actions/deleteAndGetMessages?timeoutInSeconds=0",
					map[string]any{"entries": []any{map[string]any{"receipt": r}}}}
			}},
		{op: "UpdateMessage", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, r := m.receipt(t)
				return iamRequest{"PUT", v + "/queues/" + q + "/messages/" + url.PathEscape(r), map[string]any{"visibilityInSeconds": 60}}
			}},
		{op: "UpdateMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q, r := m.receipt(t)
				return iamRequest{"POST", v + "/queues/" + q + "/messages/actions/updateMessages",
					map[string]any{"entries": []any{map[string]any{"receipt": r, "visibilityInSeconds": 60}}}}
			}},
		// A watch is a pull. Without the WebSocket upgrade, an allowed caller reaches the handler (426): the
		// authorization is decided before the upgrade (tests/watch_test.go opens real watches).
		{op: "WatchMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusUpgradeRequired,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t) + "/messages/watch", nil}
			}},
		// Consumers: listing them reads the queue; leaving is a consumer's own act (pull).
		{op: "ListConsumers", allow: "read queues", deny: []string{"inspect queues", "manage queue-pull"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.queue(t, e2e.WithSingleActiveConsumer(30)) + "/consumers", nil}
			}},
		{op: "DeleteConsumer", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusNoContent,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				q := m.queue(t, e2e.WithSingleActiveConsumer(30))
				m.Admin.Get(t, q, e2e.As("leaving"))
				return iamRequest{"DELETE", v + "/queues/" + q + "/consumers/leaving", nil}
			}},
		// Partitions are pulls. The matrix sends no consumer id: an allowed caller reaches the handler, which
		// wants one (400); tests/partitions_test.go reads and commits for real.
		{op: "GetPartitionMessages", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusBadRequest,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/queues/" + m.partitioned(t) + "/partitions/messages?consumerGroupId=stream&timeoutInSeconds=0", nil}
			}},
		{op: "CommitPartitionOffsets", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusBadRequest,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.partitioned(t) + "/partitions/actions/commit?consumerGroupId=stream",
					map[string]any{"offsets": []any{map[string]any{"partition": 0, "offset": -1, "generation": 0}}}}
			}},
		{op: "SeekPartitions", allow: "use queue-pull", deny: []string{"read queue-pull", "manage queue-push", "manage queues"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/queues/" + m.partitioned(t) + "/partitions/actions/seek?consumerGroupId=stream",
					map[string]any{"offset": 0}}
			}},
		// Policies: the target is the policy's compartment (for create and list: the compartment named).
		{op: "CreatePolicy", allow: "manage policies", deny: []string{"read policies", "manage compartments"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/policies", map[string]any{"compartmentId": m.mx, "name": "created-by-matrix",
					"statements": []string{"Allow group Nobody to inspect queues in compartment mx"}}}
			}},
		{op: "GetPolicy", allow: "read policies", deny: []string{"inspect policies", "manage compartments"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/policies/" + m.Policy(t, m.mx, "Allow group Nobody to read queues in compartment mx").Id, nil}
			}},
		{op: "ListPolicies", allow: "inspect policies", deny: []string{"manage compartments", "manage queues"}, want: http.StatusOK,
			setup: func(_ *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"GET", v + "/policies?compartmentId=" + m.mx, nil}
			}},
		{op: "UpdatePolicy", allow: "manage policies", deny: []string{"read policies"}, want: http.StatusOK,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"PUT", v + "/policies/" + m.Policy(t, m.mx, "Allow group Nobody to use queues in compartment mx").Id,
					map[string]any{"description": "changed"}}
			}},
		{op: "DeletePolicy", allow: "manage policies", deny: []string{"read policies"}, want: http.StatusNoContent,
			setup: func(t *testing.T, m *iamMatrix) iamRequest {
				return iamRequest{"DELETE", v + "/policies/" + m.Policy(t, m.mx, "Allow group Nobody to manage queues in compartment mx").Id, nil}
			}},
		// The simulator answers about the whole tenancy: it needs read policies in the tenancy.
		{op: "Authorize", allow: "read policies", in: "tenancy", deny: []string{"inspect policies", "manage policies in compartment mx"},
			want: http.StatusOK,
			setup: func(*testing.T, *iamMatrix) iamRequest {
				return iamRequest{"POST", v + "/actions/authorize", map[string]any{"subject": "someone", "permission": "QUEUE_READ"}}
			}},
	}
}

// TestIAMPermissionMatrix checks every operation of both planes against a principal granted exactly the verb and
// resource type it needs (allowed) and principals granted the verb just below or a neighbouring resource type
// (404 NotAuthorizedOrNotFound).
func TestIAMPermissionMatrix(t *testing.T) {
	t.Parallel()
	rows := append(iamMatrixRows(), identityMatrixRows()...)

	// One row per operation, for every operation (a new route fails here until it has its row).
	var ops []string
	for _, r := range rows {
		ops = append(ops, r.op)
	}
	var want []string
	for op := range iam.Operations {
		want = append(want, op)
	}
	slices.Sort(ops)
	slices.Sort(want)
	require.Equal(t, want, ops, "the matrix must have exactly one row per operation of iam.Operations")

	// The rows agree with DESIGN section 5: the allowed statement grants the operation's permission, no denied
	// statement does (so the server, not the table, is what a failure below points at).
	for _, r := range rows {
		perm := iam.Operations[r.op].Permission
		if r.allow == "" {
			require.Empty(t, perm, r.op)
			continue
		}
		require.Contains(t, iamGrants(t, r.allow), perm, "%s: %q", r.op, r.allow)
		for _, d := range r.deny {
			if !strings.Contains(d, " in ") { // a statement elsewhere may grant the permission, but not here
				require.NotContains(t, iamGrants(t, d), perm, "%s: %q", r.op, d)
			}
		}
	}

	env := testserver.StartTenancy(t, "iam")
	m := &iamMatrix{Tenancy: env, mx: env.Admin.NewCompartment(t, env.ID, "mx").Id}
	for _, r := range rows {
		t.Run(r.op, func(t *testing.T) {
			t.Parallel()
			in := r.in
			if in == "" {
				in = "compartment mx"
			}
			var statements []string
			if r.allow != "" {
				statements = append(statements, fmt.Sprintf("Allow group %s-allow to %s in %s", r.op, r.allow, in))
			}
			for i, d := range r.deny {
				if !strings.Contains(d, " in ") {
					d += " in " + in
				}
				statements = append(statements, fmt.Sprintf("Allow group %s-deny-%d to %s", r.op, i, d))
			}
			if len(statements) > 0 {
				m.Policy(t, env.ID, statements...)
			}
			call := r.setup(t, m)

			// Nobody at all: a principal of the tenancy without any group.
			denied := []string{m.Token(t, r.op+"-stranger")}
			for i := range r.deny {
				denied = append(denied, m.Token(t, r.op+"-denied", fmt.Sprintf("%s-deny-%d", r.op, i)))
			}
			if r.allow == "" {
				denied = nil // no policy needed: the stranger is the allowed principal below
			}
			for i, token := range denied {
				resp := env.Server.Call(t, token, call.method, call.path, call.body)
				e2e.RequireDenied(t, resp.Status, resp.Body, "%s %s with denied principal %d", call.method, call.path, i)
			}

			allowed := m.Token(t, r.op+"-allowed", r.op+"-allow")
			if r.allow == "" {
				allowed = m.Token(t, r.op+"-stranger")
			}
			resp := env.Server.Call(t, allowed, call.method, call.path, call.body)
			require.Equal(t, r.want, resp.Status, "%s %s: %s", call.method, call.path, resp.Body)
		})
	}
}

// iamGrants is the set of permissions "<verb> <resource-type>" grants, through the real parser.
func iamGrants(t *testing.T, verbAndType string) []string {
	t.Helper()
	parsed, err := policy.ParseStatements([]string{"Allow any-user to " + verbAndType + " in tenancy"})
	require.NoError(t, err)
	return parsed[0].Permissions()
}

// TestIAMPermissionMatrixSDK spot-checks that the SDK surfaces a denial as the same 404 (one call per plane), and
// that a denial cannot be told from a missing resource: the same status and the same body.
func TestIAMPermissionMatrixSDK(t *testing.T) {
	t.Parallel()
	env := testserver.StartTenancy(t, "iam")
	q := env.Admin.NewQueue(t, env.ID)
	missing := "ocid1.queue.ferry.local." + strings.Repeat("m", 32)
	stranger := env.Client(t, "stranger")
	status, body := stranger.TryGetQueue(t, q)
	e2e.RequireDenied(t, status, body)
	for _, c := range []*e2e.Client{stranger, env.Admin} {
		missingStatus, missingBody := c.TryGetQueue(t, missing)
		require.Equal(t, status, missingStatus)
		require.JSONEq(t, string(body), string(missingBody), "a denied queue and a missing one answer alike")
	}
	status, body = stranger.TryPut(t, q, "x")
	e2e.RequireDenied(t, status, body)
	missingStatus, missingBody := env.Admin.TryPut(t, missing, "x")
	require.Equal(t, status, missingStatus)
	require.JSONEq(t, string(body), string(missingBody))
	resp, err := stranger.ListPoliciesWithResponse(t.Context(), &sdk.ListPoliciesParams{CompartmentId: env.ID})
	require.NoError(t, err)
	e2e.RequireDenied(t, resp.StatusCode(), resp.Body)
}

// TestSimulatorPermissionsAreAllPermissions: the policy simulator's permission enum (openapi.yaml) lists every
// permission a statement can grant, and nothing else.
func TestSimulatorPermissionsAreAllPermissions(t *testing.T) {
	t.Parallel()
	spec, err := api.GetSwagger()
	require.NoError(t, err)
	var enum []string
	for _, v := range spec.Components.Schemas["AuthorizeDetails"].Value.Properties["permission"].Value.Enum {
		enum = append(enum, v.(string))
	}
	slices.Sort(enum)
	require.Equal(t, policy.AllPermissions(), enum)
}
