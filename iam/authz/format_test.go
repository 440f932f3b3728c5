package authz

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/format"
	"github.com/stretchr/testify/require"

	"github.com/ferry-mq/ferry/iam/policy"
)

// TestModuleFormatted keeps authz.rego in `opa fmt` form, so that reviewers diff logic, not layout.
func TestModuleFormatted(t *testing.T) {
	t.Parallel()
	formatted, err := format.Source("authz.rego", []byte(module))
	require.NoError(t, err)
	require.Equal(t, string(formatted), module)
}

// TestModuleConditionLevels keeps the Rego module's per-level condition functions in step with the deepest nesting
// the parser accepts: cond_0 … cond_N with N = policy.MaxConditionDepth.
func TestModuleConditionLevels(t *testing.T) {
	t.Parallel()
	for level := range policy.MaxConditionDepth + 1 {
		require.Contains(t, module, fmt.Sprintf("\ncond_%d(c) if compare(c)\n", level))
	}
	require.NotContains(t, module, fmt.Sprintf("cond_%d(", policy.MaxConditionDepth+1))
}
