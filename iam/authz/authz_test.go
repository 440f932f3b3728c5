package authz

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam/policy"
)

// The tenancy used by most tests: root ─┬─ A ── B
//
//	└─ C
const (
	tenancyID = "ocid1.tenancy.ferry.local.tttttttttttttttttttttttttttttttt"
	idA       = "ocid1.compartment.ferry.local.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idAB      = "ocid1.compartment.ferry.local.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC       = "ocid1.compartment.ferry.local.cccccccccccccccccccccccccccccccc"

	otherTenancyID = "ocid1.tenancy.ferry.local.oooooooooooooooooooooooooooooooo"
	otherIDX       = "ocid1.compartment.ferry.local.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
)

var (
	pathRoot = []string{tenancyID}
	pathA    = []string{tenancyID, idA}
	pathAB   = []string{tenancyID, idA, idAB}
	pathC    = []string{tenancyID, idC}
)

// resolveTree resolves compartment paths in the test tenancy.
func resolveTree(path []string) (string, bool) {
	id, ok := map[string]string{"A": idA, "A:B": idAB, "C": idC}[strings.Join(path, ":")]
	return id, ok
}

func parse(t testing.TB, statements ...string) []policy.Statement {
	t.Helper()
	parsed, err := policy.ParseStatements(statements)
	require.NoError(t, err)
	return parsed
}

func load(t testing.TB, tenancy string, policies ...Policy) *Tenancy {
	t.Helper()
	loaded, err := Load(tenancy, policies, resolveTree)
	require.NoError(t, err)
	return loaded
}

// newEngine returns an engine holding one policy, "policy-1", with the given statements in the test tenancy.
func newEngine(t testing.TB, statements ...string) *Engine {
	t.Helper()
	e, err := New(t.Context())
	require.NoError(t, err)
	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID, Policy{ID: "policy-1", Statements: parse(t, statements...)})))
	return e
}

// request is an input in the test tenancy by alice of group Producers on compartment A; tests override fields.
func request(permission string, mutate ...func(*Input)) Input {
	in := Input{
		TenancyID:       tenancyID,
		Principal:       "alice",
		Groups:          []string{"Producers"},
		Permission:      permission,
		Operation:       "Op",
		CompartmentPath: pathA,
		CompartmentName: "A",
	}
	for _, m := range mutate {
		m(&in)
	}
	return in
}

// allowed decides in through the memo (twice: the second comes from it) and checks both against an evaluation.
func allowed(t testing.TB, e *Engine, in Input) bool {
	t.Helper()
	want, err := e.Authorize(t.Context(), in)
	require.NoError(t, err)
	for range 2 {
		d, err := e.Decide(t.Context(), in)
		require.NoError(t, err)
		require.Equal(t, want, d)
	}
	return want.Allowed
}

func TestPermissionTable(t *testing.T) {
	t.Parallel()
	// DESIGN section 5: each verb's own permission is granted, the next level's (or another type's) is not.
	tests := []struct {
		rt      policy.ResourceType
		verb    string
		granted []string
		denied  string
	}{
		{policy.ResourceQueues, "inspect", []string{"QUEUE_INSPECT"}, "QUEUE_READ"},
		{policy.ResourceQueues, "read", []string{"QUEUE_READ", "QUEUE_INSPECT"}, "QUEUE_UPDATE"},
		{policy.ResourceQueues, "use", []string{"QUEUE_UPDATE", "QUEUE_READ"}, "QUEUE_CREATE"},
		{policy.ResourceQueues, "manage", []string{"QUEUE_CREATE", "QUEUE_DELETE", "QUEUE_MOVE", "QUEUE_PURGE", "QUEUE_INSPECT"}, "QUEUE_PUSH"},
		{policy.ResourceQueuePush, "inspect", nil, "QUEUE_PUSH"},
		{policy.ResourceQueuePush, "read", nil, "QUEUE_PUSH"},
		{policy.ResourceQueuePush, "use", []string{"QUEUE_PUSH"}, "QUEUE_PULL"},
		{policy.ResourceQueuePush, "manage", []string{"QUEUE_PUSH"}, "QUEUE_INSPECT"},
		{policy.ResourceQueuePull, "read", nil, "QUEUE_PULL"},
		{policy.ResourceQueuePull, "use", []string{"QUEUE_PULL"}, "QUEUE_PUSH"},
		{policy.ResourceQueuePull, "manage", []string{"QUEUE_PULL"}, "QUEUE_READ"},
		{policy.ResourceQueueFamily, "read", []string{"QUEUE_READ"}, "QUEUE_PUSH"},
		{policy.ResourceQueueFamily, "use", []string{"QUEUE_UPDATE", "QUEUE_PUSH", "QUEUE_PULL"}, "QUEUE_DELETE"},
		{policy.ResourceQueueFamily, "manage", []string{"QUEUE_PURGE", "QUEUE_PUSH", "QUEUE_PULL"}, "COMPARTMENT_INSPECT"},
		{policy.ResourceCompartments, "inspect", []string{"COMPARTMENT_INSPECT"}, "COMPARTMENT_READ"},
		{policy.ResourceCompartments, "read", []string{"COMPARTMENT_READ"}, "COMPARTMENT_UPDATE"},
		{policy.ResourceCompartments, "use", []string{"COMPARTMENT_UPDATE"}, "COMPARTMENT_CREATE"},
		{policy.ResourceCompartments, "manage", []string{"COMPARTMENT_CREATE", "COMPARTMENT_DELETE"}, "QUEUE_INSPECT"},
		{policy.ResourcePolicies, "inspect", []string{"POLICY_INSPECT"}, "POLICY_READ"},
		{policy.ResourcePolicies, "read", []string{"POLICY_READ"}, "POLICY_UPDATE"},
		{policy.ResourcePolicies, "use", []string{"POLICY_READ"}, "POLICY_CREATE"},
		{policy.ResourcePolicies, "manage", []string{"POLICY_CREATE", "POLICY_UPDATE", "POLICY_DELETE"}, "COMPARTMENT_INSPECT"},
		{policy.ResourceAllResources, "read", []string{"QUEUE_READ", "COMPARTMENT_READ", "POLICY_READ"}, "QUEUE_PUSH"},
		{policy.ResourceAllResources, "manage", policy.AllPermissions(), ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %s", tt.verb, tt.rt), func(t *testing.T) {
			t.Parallel()
			text := fmt.Sprintf("Allow group Producers to %s %s in tenancy", tt.verb, tt.rt)
			e := newEngine(t, text)
			for _, perm := range tt.granted {
				require.True(t, allowed(t, e, request(perm)), "%s must be granted", perm)
			}
			if tt.denied != "" {
				require.False(t, allowed(t, e, request(tt.denied)), "%s must be denied", tt.denied)
			}
			// The engine agrees with the parser's expansion on every permission.
			granted := parse(t, text)[0].Permissions()
			for _, perm := range policy.AllPermissions() {
				require.Equal(t, slices.Contains(granted, perm), allowed(t, e, request(perm)), perm)
			}
		})
	}
}

func TestLocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		location string
		allowed  [][]string
		denied   [][]string
	}{
		{"tenancy", [][]string{pathRoot, pathA, pathAB, pathC}, nil},
		{"compartment A", [][]string{pathA, pathAB}, [][]string{pathRoot, pathC}},
		{"compartment A:B", [][]string{pathAB}, [][]string{pathRoot, pathA, pathC}},
		{"compartment C", [][]string{pathC}, [][]string{pathRoot, pathA, pathAB}},
		{"compartment id " + idAB, [][]string{pathAB}, [][]string{pathRoot, pathA, pathC}},
		{"compartment id " + tenancyID, [][]string{pathRoot, pathA, pathAB, pathC}, nil},
		{"compartment Nowhere", nil, [][]string{pathRoot, pathA, pathAB, pathC}}, // unresolved: kept, never matches
		{"compartment B", nil, [][]string{pathRoot, pathA, pathAB, pathC}},       // paths start at the root
	}
	for _, tt := range tests {
		t.Run(tt.location, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, "Allow group Producers to read queues in "+tt.location)
			for _, path := range tt.allowed {
				require.True(t, allowed(t, e, request("QUEUE_READ", func(in *Input) { in.CompartmentPath = path })), "%v", path)
			}
			for _, path := range tt.denied {
				require.False(t, allowed(t, e, request("QUEUE_READ", func(in *Input) { in.CompartmentPath = path })), "%v", path)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	t.Parallel()
	queue := func(id, name string) func(*Input) {
		return func(in *Input) { in.QueueID, in.QueueName = id, name }
	}
	tests := []struct {
		name      string
		condition string
		allowed   []func(*Input)
		denied    []func(*Input)
	}{
		{"queue id", "target.queue.id = 'q1'",
			[]func(*Input){queue("q1", "")},
			[]func(*Input){queue("q2", ""), queue("", ""), queue("Q1", "")}},
		{"not equal", "target.queue.name != 'secret'",
			[]func(*Input){queue("", "public")},
			// a variable the request does not carry makes != false too
			[]func(*Input){queue("", "secret"), queue("", "")}},
		{"all", "all {target.queue.id = 'q1', request.operation = 'PutMessages'}",
			[]func(*Input){func(in *Input) { in.QueueID, in.Operation = "q1", "PutMessages" }},
			[]func(*Input){func(in *Input) { in.QueueID, in.Operation = "q1", "GetMessages" },
				func(in *Input) { in.QueueID, in.Operation = "q2", "PutMessages" }}},
		{"any", "any {target.queue.id = 'q1', target.queue.name = 'orders'}",
			[]func(*Input){queue("q1", "x"), queue("q2", "orders")},
			[]func(*Input){queue("q2", "x"), queue("", "")}},
		{"nested to the maximum depth",
			"any {all {any {all {target.queue.id = 'q1', request.principal.id != 'mallory'}, target.queue.id = 'q9'}, " +
				"target.compartment.name = 'A'}, request.operation = 'Admin'}",
			[]func(*Input){queue("q1", ""), queue("q9", ""), func(in *Input) { in.Operation = "Admin"; in.CompartmentName = "Z" }},
			[]func(*Input){queue("q2", ""), func(in *Input) { in.QueueID, in.Principal = "q1", "mallory" },
				func(in *Input) { in.QueueID, in.CompartmentName = "q1", "C" }}},
		{"request.operation", "request.operation = 'GetQueue'",
			[]func(*Input){func(in *Input) { in.Operation = "GetQueue" }},
			[]func(*Input){func(in *Input) { in.Operation = "DeleteQueue" }, func(in *Input) { in.Operation = "" }}},
		{"request.principal.id", "request.principal.id = 'alice'",
			[]func(*Input){func(in *Input) {}},
			[]func(*Input){func(in *Input) { in.Principal = "bob" }}},
		{"request.permission", "request.permission = 'QUEUE_READ'",
			[]func(*Input){func(in *Input) {}},
			[]func(*Input){func(in *Input) { in.Permission = "QUEUE_INSPECT" }}},
		{"target.compartment.id is the path's last element", "target.compartment.id = '" + idAB + "'",
			[]func(*Input){func(in *Input) { in.CompartmentPath = pathAB }},
			[]func(*Input){func(in *Input) {}}},
		{"target.consumergroup.id", "target.consumergroup.id != 'cg-blocked'",
			[]func(*Input){func(in *Input) { in.ConsumerGroupID = "cg-1" }},
			[]func(*Input){func(in *Input) { in.ConsumerGroupID = "cg-blocked" }, func(in *Input) {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, "Allow group Producers to read queues in tenancy where "+tt.condition)
			for i, m := range tt.allowed {
				require.True(t, allowed(t, e, request("QUEUE_READ", m)), "allowed case %d", i)
			}
			for i, m := range tt.denied {
				require.False(t, allowed(t, e, request("QUEUE_READ", m)), "denied case %d", i)
			}
		})
	}
}

func TestSubjects(t *testing.T) {
	t.Parallel()
	e := newEngine(t,
		"Allow any-user to inspect queues in tenancy",
		"Allow group 'Queue Admins', group Ops to manage queues in compartment A",
	)
	groups := func(gs ...string) func(*Input) { return func(in *Input) { in.Groups = gs } }

	require.True(t, allowed(t, e, request("QUEUE_INSPECT", groups())), "any-user covers a caller without groups")
	require.True(t, allowed(t, e, request("QUEUE_INSPECT", groups("Whatever"))))
	require.False(t, allowed(t, e, request("QUEUE_DELETE", groups())))
	require.True(t, allowed(t, e, request("QUEUE_DELETE", groups("x", "Queue Admins"))), "any of the caller's groups")
	require.True(t, allowed(t, e, request("QUEUE_DELETE", groups("Ops"))), "any of the statement's groups")
	require.False(t, allowed(t, e, request("QUEUE_DELETE", groups("queue admins"))), "group names are case-sensitive")
	require.False(t, allowed(t, e, request("QUEUE_DELETE", groups("Queue"))))
	require.False(t, allowed(t, e, request("QUEUE_DELETE", groups("Ops"), func(in *Input) { in.CompartmentPath = pathC })))
}

// TestTenancyIsolation: whatever a tenancy's statements say, they grant nothing in another tenancy, and a caller is
// judged by its own tenancy's statements only.
func TestTenancyIsolation(t *testing.T) {
	t.Parallel()
	e, err := New(t.Context())
	require.NoError(t, err)
	// Both tenancies are as generous as can be with everyone; this one also names the other's compartments.
	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID, Policy{ID: "generous", Statements: parse(t,
		"Allow any-user to manage all-resources in tenancy",
		"Allow any-user to manage all-resources in compartment id "+otherIDX,
		"Allow any-user to manage all-resources in compartment id "+otherTenancyID,
	)})))
	other, err := Load(otherTenancyID, []Policy{{ID: "other", Statements: parse(t,
		"Allow any-user to manage all-resources in tenancy",
		"Allow any-user to manage all-resources in compartment id "+idA,
	)}}, func([]string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.NoError(t, e.SetTenancy(t.Context(), other))

	otherPath := []string{otherTenancyID, otherIDX}
	for _, perm := range policy.AllPermissions() {
		// Each tenancy's callers are allowed in their own tenancy...
		require.True(t, allowed(t, e, Input{TenancyID: tenancyID, Permission: perm, CompartmentPath: pathAB}), perm)
		require.True(t, allowed(t, e, Input{TenancyID: otherTenancyID, Permission: perm, CompartmentPath: otherPath}), perm)
		// ...and in neither direction in the other one, not even through `compartment id` statements naming the
		// other tenancy's compartments, nor by the other tenancy's any-user statements.
		for _, path := range [][]string{otherPath, {otherTenancyID}, {otherTenancyID, idA}} {
			require.False(t, allowed(t, e, Input{TenancyID: tenancyID, Permission: perm, CompartmentPath: path}), "%s %v", perm, path)
		}
		for _, path := range [][]string{pathAB, pathRoot, {tenancyID, otherIDX}} {
			require.False(t, allowed(t, e, Input{TenancyID: otherTenancyID, Permission: perm, CompartmentPath: path}), "%s %v", perm, path)
		}
	}
	// A tenancy the engine does not hold denies everything, even on a path of a tenancy it does hold.
	unknown := "ocid1.tenancy.ferry.local.uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
	require.False(t, allowed(t, e, Input{TenancyID: unknown, Permission: "QUEUE_READ", CompartmentPath: []string{unknown}}))
	require.False(t, allowed(t, e, Input{TenancyID: unknown, Permission: "QUEUE_READ", CompartmentPath: pathAB}))
}

func TestMatchedStatements(t *testing.T) {
	t.Parallel()
	e, err := New(t.Context())
	require.NoError(t, err)
	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID,
		Policy{ID: "p1", Statements: parse(t,
			"Allow group Producers to use queue-push in compartment A",
			"Allow group Consumers to use queue-pull in compartment A",
			"Allow any-user to manage queue-family in tenancy where target.queue.id = 'q1'",
		)},
		Policy{ID: "p2", Statements: parse(t,
			"Allow group Producers, group Others to manage queue-push in compartment A:B",
			"Allow group Producers to use queue-push in compartment C",
			"allow group Producers to use queue-push in compartment A",
		)},
	)))

	d, err := e.Authorize(t.Context(), request("QUEUE_PUSH", func(in *Input) {
		in.CompartmentPath = pathAB
		in.QueueID = "q1"
		in.Groups = []string{"Others", "Producers"}
	}))
	require.NoError(t, err)
	require.Equal(t, Decision{Allowed: true, Matched: []MatchedStatement{
		{PolicyID: "p1", Statement: "Allow group Producers to use queue-push in compartment A"},
		{PolicyID: "p1", Statement: "Allow any-user to manage queue-family in tenancy where target.queue.id = 'q1'"},
		{PolicyID: "p2", Statement: "Allow group Producers, group Others to manage queue-push in compartment A:B"},
		{PolicyID: "p2", Statement: "allow group Producers to use queue-push in compartment A"},
	}}, d)

	d, err = e.Authorize(t.Context(), request("QUEUE_PULL", func(in *Input) { in.CompartmentPath = pathC }))
	require.NoError(t, err)
	require.Equal(t, Decision{}, d)
}

func TestUpdatesTakeEffect(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "Allow group Producers to use queue-push in tenancy")
	require.True(t, allowed(t, e, request("QUEUE_PUSH")))
	require.False(t, allowed(t, e, request("QUEUE_PULL")))

	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID, Policy{ID: "policy-1", Statements: parse(t,
		"Allow group Producers to use queue-pull in tenancy")})))
	require.False(t, allowed(t, e, request("QUEUE_PUSH")))
	require.True(t, allowed(t, e, request("QUEUE_PULL")))

	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID)))
	require.False(t, allowed(t, e, request("QUEUE_PULL")))

	require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID, Policy{ID: "policy-1", Statements: parse(t,
		"Allow group Producers to use queue-pull in tenancy")})))
	require.NoError(t, e.RemoveTenancy(t.Context(), tenancyID))
	require.False(t, allowed(t, e, request("QUEUE_PULL")))
	require.NoError(t, e.RemoveTenancy(t.Context(), tenancyID), "removing twice is fine")
}

func TestUnresolvedStatements(t *testing.T) {
	t.Parallel()
	policies := []Policy{{ID: "p", Statements: parse(t,
		"Allow group Producers to use queue-push in compartment D",
		"Allow group Producers to use queue-pull in compartment A",
	)}}
	loaded, err := Load(tenancyID, policies, resolveTree)
	require.NoError(t, err)
	require.Equal(t, 2, loaded.StatementCount)
	require.Equal(t, []MatchedStatement{{PolicyID: "p", Statement: "Allow group Producers to use queue-push in compartment D"}},
		loaded.Unresolved)

	e, err := New(t.Context())
	require.NoError(t, err)
	require.NoError(t, e.SetTenancy(t.Context(), loaded))
	require.False(t, allowed(t, e, request("QUEUE_PUSH")))
	require.True(t, allowed(t, e, request("QUEUE_PULL")))

	// Once D exists (and the tenancy is reloaded, as after any compartment change), the statement applies.
	idD := "ocid1.compartment.ferry.local.dddddddddddddddddddddddddddddddd"
	reloaded, err := Load(tenancyID, policies, func(path []string) (string, bool) {
		if slices.Equal(path, []string{"D"}) {
			return idD, true
		}
		return resolveTree(path)
	})
	require.NoError(t, err)
	require.Empty(t, reloaded.Unresolved)
	require.NoError(t, e.SetTenancy(t.Context(), reloaded))
	require.True(t, allowed(t, e, request("QUEUE_PUSH", func(in *Input) { in.CompartmentPath = []string{tenancyID, idD} })))
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "Allow any-user to read queues in tenancy")
	for _, in := range []Input{
		request("QUEUE_READ", func(in *Input) { in.TenancyID = "" }),
		request("", func(in *Input) {}),
		request("QUEUE_READ", func(in *Input) { in.CompartmentPath = nil }),
	} {
		_, err := e.Authorize(t.Context(), in)
		require.ErrorIs(t, err, ErrInvalidInput)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.Authorize(ctx, request("QUEUE_READ"))
	require.Error(t, err, "a cancelled context is an error, not a decision")

	_, err = Load("", nil, resolveTree)
	require.Error(t, err)
	require.Error(t, e.SetTenancy(t.Context(), nil))
	require.Error(t, e.SetTenancy(t.Context(), &Tenancy{ID: tenancyID}))

	deep := &policy.Condition{Op: policy.OpEqual, Variable: policy.VarTargetQueueID, Value: "q"}
	for range policy.MaxConditionDepth + 1 {
		deep = &policy.Condition{Op: policy.OpAll, Conditions: []*policy.Condition{deep}}
	}
	s := parse(t, "Allow any-user to read queues in tenancy")[0]
	s.Condition = deep
	_, err = Load(tenancyID, []Policy{{ID: "p", Statements: []policy.Statement{s}}}, resolveTree)
	require.ErrorContains(t, err, "5 levels deep")
}

// TestConcurrentAuthorize runs decisions from many goroutines while the tenancy's policies flip between two
// versions; under -race it checks the engine's sharing, and every decision must be one of the two versions'.
func TestConcurrentAuthorize(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "Allow group Producers to use queue-push in tenancy")
	pushOnly := load(t, tenancyID, Policy{ID: "v1", Statements: parse(t, "Allow group Producers to use queue-push in tenancy")})
	both := load(t, tenancyID, Policy{ID: "v2", Statements: parse(t, "Allow group Producers to use queue-family in tenancy")})

	ctx := t.Context()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			require.NoError(t, e.SetTenancy(ctx, []*Tenancy{pushOnly, both}[i%2]))
		}
	})
	var deciders sync.WaitGroup
	for g := range 16 {
		deciders.Go(func() {
			for i := range 200 {
				// Through the memo too, with the same two Tenancy values installed in turn: a decision the
				// other version made must never be remembered as this one's.
				decide := e.Authorize
				if i%2 == 1 {
					decide = e.Decide
				}
				d, err := decide(ctx, request("QUEUE_PUSH", func(in *Input) { in.QueueID = fmt.Sprint(g, i%10) }))
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Len(t, d.Matched, 1)
				d, err = decide(ctx, request("QUEUE_DELETE"))
				require.NoError(t, err)
				require.False(t, d.Allowed)
				d, err = decide(ctx, request("QUEUE_PULL"))
				require.NoError(t, err)
				if d.Allowed { // only version 2 allows pulls: the decision must be version 2's
					require.Equal(t, "v2", d.Matched[0].PolicyID)
				} else {
					require.Empty(t, d.Matched)
				}
			}
		})
	}
	// Generated statements and requests (conditions included), decided sequentially and then again from many
	// goroutines at once: every concurrent decision must equal the sequential one.
	w := newWorld(t, 42, benchOCID("tenancy", 42, 0), 300)
	generated, err := Load(w.tenancyID, w.policies, w.resolve)
	require.NoError(t, err)
	require.NoError(t, e.SetTenancy(ctx, generated))
	want := make([]Decision, len(w.inputs))
	for i, in := range w.inputs {
		want[i], err = e.Authorize(ctx, in)
		require.NoError(t, err)
	}
	for g := range 4 {
		deciders.Go(func() {
			for i := range w.inputs {
				i = (i + g*97) % len(w.inputs)
				got, err := e.Authorize(ctx, w.inputs[i])
				require.NoError(t, err)
				require.Equal(t, want[i], got)
				got, err = e.Decide(ctx, w.inputs[i])
				require.NoError(t, err)
				require.Equal(t, want[i], got)
			}
		})
	}
	deciders.Wait()
	close(stop)
	wg.Wait()
}

// TestMemoKeys: inputs that differ in any field, or only in where one field ends and the next begins, are
// remembered apart. Every field of Input is changed in turn (by reflection, so that a field added to Input but
// not to memoKey fails here rather than sharing decisions).
func TestMemoKeys(t *testing.T) {
	t.Parallel()
	base := request("QUEUE_PUSH")
	seen := map[string]string{string(memoKey(nil, base)): "base"}
	variant := func(name string, in Input) {
		t.Helper()
		key := string(memoKey(nil, in))
		if other, ok := seen[key]; ok {
			t.Fatalf("%s and %s share a memo key", name, other)
		}
		seen[key] = name
	}
	fields := reflect.TypeFor[Input]()
	for i := range fields.NumField() {
		in := base
		in.Groups, in.CompartmentPath = slices.Clone(base.Groups), slices.Clone(base.CompartmentPath)
		f := reflect.ValueOf(&in).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf("x")))
		default:
			t.Fatalf("Input.%s: a %s; teach memoKey and this test about it", fields.Field(i).Name, f.Kind())
		}
		variant("changed "+fields.Field(i).Name, in)
	}
	split := base
	split.Groups = []string{"Produ", "cers"}
	variant("groups split", split)
	for _, q := range [][2]string{{"ab", "c"}, {"a", "bc"}} {
		in := base
		in.QueueID, in.QueueName = q[0], q[1]
		variant("queue "+q[0]+"|"+q[1], in)
	}
}
