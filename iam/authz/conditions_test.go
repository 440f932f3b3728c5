package authz

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam/policy"
)

// holds is the reference semantics of a condition (DESIGN section 5): a comparison on a variable without a value
// is false for = and != alike.
func holds(c *policy.Condition, vars map[string]string) bool {
	switch c.Op {
	case policy.OpAll:
		for _, child := range c.Conditions {
			if !holds(child, vars) {
				return false
			}
		}
		return true
	case policy.OpAny:
		for _, child := range c.Conditions {
			if holds(child, vars) {
				return true
			}
		}
		return false
	}
	v, ok := vars[c.Variable]
	return ok && (v == c.Value) == (c.Op == policy.OpEqual)
}

// randomCondition writes a condition of at most depth levels of all/any over a few variables with small value
// domains, so that generated requests satisfy it about as often as not. wide makes every group have six members,
// which multiplies out past maxClauses.
func randomCondition(rng *rand.Rand, depth int, wide bool) string {
	if depth == 0 || rng.IntN(3) == 0 {
		vars := []string{"target.queue.id", "target.queue.name", "request.operation", "request.principal.id"}
		op := "="
		if rng.IntN(3) == 0 {
			op = "!="
		}
		return fmt.Sprintf("%s %s 'v%d'", vars[rng.IntN(len(vars))], op, rng.IntN(3))
	}
	n := 1 + rng.IntN(3)
	if wide {
		n = 6
	}
	args := make([]string, n)
	for i := range args {
		args[i] = randomCondition(rng, depth-1, wide && i < 2)
	}
	return []string{"all", "any"}[rng.IntN(2)] + " {" + strings.Join(args, ", ") + "}"
}

// TestConditionForms checks that the rewritten forms of conditions (clauses checked against facts, whole conditions
// past maxClauses) decide like the reference semantics, on generated conditions and requests.
func TestConditionForms(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	var texts []string
	for i := range 300 {
		depth := 1 + i%policy.MaxConditionDepth
		texts = append(texts, "Allow group Producers to read queues in tenancy where "+randomCondition(rng, depth, i%10 == 0))
	}
	// Past maxClauses: all of three groups of four comparisons has 64 clauses.
	texts = append(texts, "Allow group Producers to read queues in tenancy where all {"+
		"any {target.queue.id = 'v0', target.queue.id = 'v1', request.operation = 'v0', request.operation = 'v1'}, "+
		"any {target.queue.name = 'v0', target.queue.name = 'v1', request.principal.id != 'v2', request.operation != 'v2'}, "+
		"any {request.principal.id = 'v0', request.principal.id = 'v1', target.queue.id != 'v0', target.queue.name != 'v2'}}")
	statements := parse(t, texts...)
	kinds := keyKinds(0)
	for _, s := range statements {
		loaded := load(t, tenancyID, Policy{ID: "p", Statements: []policy.Statement{s}})
		for _, k := range loaded.keys[policy.PermQueueRead] {
			kinds |= k
		}
	}
	require.Equal(t, keyConditional|keyConditions, kinds, "every conditional index is exercised")

	e, err := New(t.Context())
	require.NoError(t, err)
	outcomes := map[bool]int{}
	for i, s := range statements {
		require.NoError(t, e.SetTenancy(t.Context(), load(t, tenancyID, Policy{ID: "p", Statements: []policy.Statement{s}})))
		for range 40 {
			value := func() string {
				if rng.IntN(4) == 0 {
					return ""
				}
				return fmt.Sprintf("v%d", rng.IntN(3))
			}
			in := request(policy.PermQueueRead, func(in *Input) {
				in.QueueID, in.QueueName, in.Operation, in.Principal = value(), value(), value(), value()
			})
			vars := map[string]string{}
			for name, v := range map[string]string{"target.queue.id": in.QueueID, "target.queue.name": in.QueueName,
				"request.operation": in.Operation, "request.principal.id": in.Principal} {
				if v != "" {
					vars[name] = v
				}
			}
			want := holds(s.Condition, vars)
			require.Equal(t, want, allowed(t, e, in), "statement %d %q, vars %v", i, texts[i], vars)
			outcomes[want]++
		}
	}
	require.Greater(t, outcomes[true], len(statements)*40/5, "the generated requests must also satisfy conditions")
	require.Greater(t, outcomes[false], len(statements)*40/5, "the generated requests must also fail conditions")
}
