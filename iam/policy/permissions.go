package policy

import (
	"slices"
)

// Permissions checked by ferry's handlers (DESIGN section 5). A request needs exactly one permission; a statement
// grants a set of them, derived from its verb and resource type by Grants.
const (
	PermQueueInspect       = "QUEUE_INSPECT"
	PermQueueRead          = "QUEUE_READ"
	PermQueueUpdate        = "QUEUE_UPDATE"
	PermQueueCreate        = "QUEUE_CREATE"
	PermQueueDelete        = "QUEUE_DELETE"
	PermQueueMove          = "QUEUE_MOVE"
	PermQueuePurge         = "QUEUE_PURGE"
	PermQueuePush          = "QUEUE_PUSH"
	PermQueuePull          = "QUEUE_PULL"
	PermQueueMetricsRead   = "QUEUE_METRICS_READ"
	PermCompartmentInspect = "COMPARTMENT_INSPECT"
	PermCompartmentRead    = "COMPARTMENT_READ"
	PermCompartmentUpdate  = "COMPARTMENT_UPDATE"
	PermCompartmentCreate  = "COMPARTMENT_CREATE"
	PermCompartmentDelete  = "COMPARTMENT_DELETE"
	PermPolicyInspect      = "POLICY_INSPECT"
	PermPolicyRead         = "POLICY_READ"
	PermPolicyCreate       = "POLICY_CREATE"
	PermPolicyUpdate       = "POLICY_UPDATE"
	PermPolicyDelete       = "POLICY_DELETE"
)

// grantsByLevel is DESIGN section 5's table: what each verb adds on top of the verbs below it, per base resource
// type. Writing the increments rather than the cumulative sets keeps the table identical to the design document.
//
// queue-push and queue-pull grant nothing below use: `inspect queue-push` parses (OCI accepts it) but grants no
// permission, so it can never allow a request. queue-metrics (a queue's metrics, and nothing else of it) is
// granted from read, as `read queues` grants it too.
var grantsByLevel = map[ResourceType][VerbManage + 1][]string{
	ResourceQueues: {
		VerbInspect: {PermQueueInspect},
		VerbRead:    {PermQueueRead, PermQueueMetricsRead},
		VerbUse:     {PermQueueUpdate},
		VerbManage:  {PermQueueCreate, PermQueueDelete, PermQueueMove, PermQueuePurge},
	},
	ResourceQueuePush:    {VerbUse: {PermQueuePush}},
	ResourceQueuePull:    {VerbUse: {PermQueuePull}},
	ResourceQueueMetrics: {VerbRead: {PermQueueMetricsRead}},
	ResourceCompartments: {
		VerbInspect: {PermCompartmentInspect},
		VerbRead:    {PermCompartmentRead},
		VerbUse:     {PermCompartmentUpdate},
		VerbManage:  {PermCompartmentCreate, PermCompartmentDelete},
	},
	ResourcePolicies: {
		VerbInspect: {PermPolicyInspect},
		VerbRead:    {PermPolicyRead},
		VerbManage:  {PermPolicyCreate, PermPolicyUpdate, PermPolicyDelete},
	},
}

// aggregates lists the base resource types each aggregate resource type stands for.
var aggregates = map[ResourceType][]ResourceType{
	ResourceQueueFamily:  {ResourceQueues, ResourceQueuePush, ResourceQueuePull, ResourceQueueMetrics},
	ResourceAllResources: {ResourceQueues, ResourceQueuePush, ResourceQueuePull, ResourceQueueMetrics, ResourceCompartments, ResourcePolicies},
}

// Grants returns the permissions that verb grants on resource type rt, sorted and without duplicates. It returns
// nil for an invalid verb or resource type, and for combinations that grant nothing (inspect or read on queue-push,
// queue-pull).
func Grants(verb Verb, rt ResourceType) []string {
	if verb < VerbInspect || verb > VerbManage {
		return nil
	}
	bases, ok := aggregates[rt]
	if !ok {
		bases = []ResourceType{rt}
	}
	var perms []string
	for _, base := range bases {
		levels, ok := grantsByLevel[base]
		if !ok {
			return nil
		}
		for level := VerbInspect; level <= verb; level++ {
			perms = append(perms, levels[level]...)
		}
	}
	slices.Sort(perms)
	return slices.Compact(perms)
}

// AllPermissions returns every permission some statement can grant, sorted.
func AllPermissions() []string {
	return Grants(VerbManage, ResourceAllResources)
}
