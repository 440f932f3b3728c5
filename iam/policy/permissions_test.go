package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGrants(t *testing.T) {
	t.Parallel()
	// DESIGN section 5's table, written out cumulatively so that a mistake in grantsByLevel's increments shows.
	tests := []struct {
		rt   ResourceType
		verb Verb
		want []string
	}{
		{ResourceQueues, VerbInspect, []string{"QUEUE_INSPECT"}},
		{ResourceQueues, VerbRead, []string{"QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_READ"}},
		{ResourceQueues, VerbUse, []string{"QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_READ", "QUEUE_UPDATE"}},
		{ResourceQueues, VerbManage, []string{"QUEUE_CREATE", "QUEUE_DELETE", "QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_MOVE", "QUEUE_PURGE", "QUEUE_READ", "QUEUE_UPDATE"}},
		{ResourceQueuePush, VerbInspect, nil},
		{ResourceQueuePush, VerbRead, nil},
		{ResourceQueuePush, VerbUse, []string{"QUEUE_PUSH"}},
		{ResourceQueuePush, VerbManage, []string{"QUEUE_PUSH"}},
		{ResourceQueuePull, VerbInspect, nil},
		{ResourceQueuePull, VerbRead, nil},
		{ResourceQueuePull, VerbUse, []string{"QUEUE_PULL"}},
		{ResourceQueuePull, VerbManage, []string{"QUEUE_PULL"}},
		{ResourceQueueMetrics, VerbInspect, nil},
		{ResourceQueueMetrics, VerbRead, []string{"QUEUE_METRICS_READ"}},
		{ResourceQueueMetrics, VerbManage, []string{"QUEUE_METRICS_READ"}},
		{ResourceCompartments, VerbInspect, []string{"COMPARTMENT_INSPECT"}},
		{ResourceCompartments, VerbRead, []string{"COMPARTMENT_INSPECT", "COMPARTMENT_READ"}},
		{ResourceCompartments, VerbUse, []string{"COMPARTMENT_INSPECT", "COMPARTMENT_READ", "COMPARTMENT_UPDATE"}},
		{ResourceCompartments, VerbManage, []string{"COMPARTMENT_CREATE", "COMPARTMENT_DELETE", "COMPARTMENT_INSPECT", "COMPARTMENT_READ", "COMPARTMENT_UPDATE"}},
		{ResourcePolicies, VerbInspect, []string{"POLICY_INSPECT"}},
		{ResourcePolicies, VerbRead, []string{"POLICY_INSPECT", "POLICY_READ"}},
		{ResourcePolicies, VerbUse, []string{"POLICY_INSPECT", "POLICY_READ"}},
		{ResourcePolicies, VerbManage, []string{"POLICY_CREATE", "POLICY_DELETE", "POLICY_INSPECT", "POLICY_READ", "POLICY_UPDATE"}},
		{ResourceQueueFamily, VerbInspect, []string{"QUEUE_INSPECT"}},
		{ResourceQueueFamily, VerbUse, []string{"QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_PULL", "QUEUE_PUSH", "QUEUE_READ", "QUEUE_UPDATE"}},
		{ResourceQueueFamily, VerbManage, []string{"QUEUE_CREATE", "QUEUE_DELETE", "QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_MOVE", "QUEUE_PULL", "QUEUE_PURGE", "QUEUE_PUSH", "QUEUE_READ", "QUEUE_UPDATE"}},
		{ResourceAllResources, VerbRead, []string{"COMPARTMENT_INSPECT", "COMPARTMENT_READ", "POLICY_INSPECT", "POLICY_READ", "QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_READ"}},
		{ResourceAllResources, VerbManage, []string{
			"COMPARTMENT_CREATE", "COMPARTMENT_DELETE", "COMPARTMENT_INSPECT", "COMPARTMENT_READ", "COMPARTMENT_UPDATE",
			"POLICY_CREATE", "POLICY_DELETE", "POLICY_INSPECT", "POLICY_READ", "POLICY_UPDATE",
			"QUEUE_CREATE", "QUEUE_DELETE", "QUEUE_INSPECT", "QUEUE_METRICS_READ", "QUEUE_MOVE", "QUEUE_PULL", "QUEUE_PURGE", "QUEUE_PUSH", "QUEUE_READ", "QUEUE_UPDATE",
		}},
		{ResourceType("buckets"), VerbManage, nil},
		{ResourceQueues, Verb(0), nil},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Grants(tt.verb, tt.rt), "%s %s", tt.verb, tt.rt)
	}
	require.Len(t, AllPermissions(), 20)

	s, err := Parse("Allow group A to use queue-family in tenancy")
	require.NoError(t, err)
	require.Equal(t, Grants(VerbUse, ResourceQueueFamily), s.Permissions())
}

func TestVerbString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "inspect", VerbInspect.String())
	require.Equal(t, "manage", VerbManage.String())
	require.Empty(t, Verb(0).String())
	require.Empty(t, Verb(9).String())
}
