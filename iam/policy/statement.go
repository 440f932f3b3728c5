// Package policy parses IAM policy statements (DESIGN section 5) into a typed form and expands each statement into
// the permissions it grants.
//
// The grammar is OCI's, restricted to what ferry authorizes:
//
//	Allow <subject> to <verb> <resource-type> in <location> [where <condition>]
//
// Keywords (allow, to, in, where, group, any-user, tenancy, compartment, id, all, any, the verbs, the resource
// types and the condition variables) are case-insensitive; names and quoted values are case-sensitive. The package
// only parses and expands: resolving compartment names to ids and deciding requests is the job of iam/authz.
package policy

import "slices"

// Verb is the access level a statement grants. Verbs are ordered: each includes every verb before it, so comparing
// two verbs with < answers "is this level included in that one".
type Verb int

// The verbs from least to most access; the zero Verb is invalid so a forgotten field never grants anything.
const (
	VerbInspect Verb = iota + 1
	VerbRead
	VerbUse
	VerbManage
)

var verbNames = [...]string{VerbInspect: "inspect", VerbRead: "read", VerbUse: "use", VerbManage: "manage"}

// String returns the verb's keyword in lower case, or "" for an invalid verb.
func (v Verb) String() string {
	if v < VerbInspect || v > VerbManage {
		return ""
	}
	return verbNames[v]
}

// ResourceType is the family of resources a statement is about. The value is the keyword in lower case.
type ResourceType string

// The resource types of DESIGN section 5. ResourceQueueFamily and ResourceAllResources are aggregates: they grant
// the union of their members' permissions.
const (
	ResourceQueues       ResourceType = "queues"
	ResourceQueuePush    ResourceType = "queue-push"
	ResourceQueuePull    ResourceType = "queue-pull"
	ResourceQueueMetrics ResourceType = "queue-metrics"
	ResourceQueueFamily  ResourceType = "queue-family"
	ResourceCompartments ResourceType = "compartments"
	ResourcePolicies     ResourceType = "policies"
	ResourceAllResources ResourceType = "all-resources"
)

// ResourceTypes lists every resource type the parser accepts, in the order of DESIGN section 5.
var ResourceTypes = []ResourceType{
	ResourceQueues, ResourceQueuePush, ResourceQueuePull, ResourceQueueMetrics, ResourceQueueFamily,
	ResourceCompartments, ResourcePolicies, ResourceAllResources,
}

// Subject is who a statement applies to: every authenticated user of the tenancy, or members of any of the named
// groups. Exactly one of AnyUser and Groups is set by the parser.
type Subject struct {
	AnyUser bool
	Groups  []string // group names, case-sensitive, in statement order
}

// Location is where a statement applies; it covers the compartment it names and all of that compartment's
// descendants. Exactly one of Tenancy, Path and ID is set by the parser.
type Location struct {
	// Tenancy is set by `in tenancy`: the root compartment, hence every compartment of the tenancy.
	Tenancy bool
	// Path is set by `in compartment A:B:C` (or a single name): compartment names from the root down. Names are
	// resolved to an id when policies are loaded (iam/authz), not here, because compartments can be renamed.
	Path []string
	// ID is set by `in compartment id <ocid>`: a compartment (or tenancy) OCID that needs no resolution.
	ID string
}

// Statement is one parsed policy statement.
type Statement struct {
	Subject      Subject
	Verb         Verb
	ResourceType ResourceType
	Location     Location
	Condition    *Condition // nil when the statement has no where clause
	Text         string     // the source text exactly as given, for reporting which statements matched
}

// Permissions returns the permissions the statement grants, sorted, without duplicates. The condition does not
// narrow this set: it restricts which requests the permissions apply to, and is evaluated per request.
func (s Statement) Permissions() []string {
	return Grants(s.Verb, s.ResourceType)
}

// ConditionOp is the kind of a Condition node.
type ConditionOp string

// Condition operators. OpEqual and OpNotEqual compare a variable with a literal; OpAll and OpAny combine child
// conditions.
const (
	OpEqual    ConditionOp = "="
	OpNotEqual ConditionOp = "!="
	OpAll      ConditionOp = "all"
	OpAny      ConditionOp = "any"
)

// Condition is a node of a where clause. A comparison (OpEqual, OpNotEqual) has Variable and Value; a combination
// (OpAll, OpAny) has at least one child in Conditions.
//
// A comparison whose variable has no value in a request (say target.queue.id on ListQueues) is false for both = and
// !=, as in OCI: a statement conditioned on something a request does not carry does not apply to that request.
type Condition struct {
	Op         ConditionOp
	Variable   string // one of Variables, lower case
	Value      string // the literal, case-sensitive
	Conditions []*Condition
}

// MaxConditionDepth is how deeply all/any groups may nest. The bound exists because Rego has no recursion: the
// decision engine evaluates each nesting level with its own rule, so the parser must reject deeper trees.
const MaxConditionDepth = 4

// Condition variables (DESIGN section 5). Variable names are keywords, so they are matched case-insensitively and
// stored in lower case.
const (
	VarRequestPermission     = "request.permission"
	VarRequestOperation      = "request.operation"
	VarRequestPrincipalID    = "request.principal.id"
	VarTargetCompartmentID   = "target.compartment.id"
	VarTargetCompartmentName = "target.compartment.name"
	VarTargetQueueID         = "target.queue.id"
	VarTargetQueueName       = "target.queue.name"
	VarTargetConsumerGroupID = "target.consumergroup.id"
)

// Variables lists every condition variable the parser accepts.
var Variables = []string{
	VarRequestPermission, VarRequestOperation, VarRequestPrincipalID,
	VarTargetCompartmentID, VarTargetCompartmentName,
	VarTargetQueueID, VarTargetQueueName, VarTargetConsumerGroupID,
}

// Depth returns how deeply all/any groups nest in c: 0 for a comparison, 1 for a group of comparisons, and so on.
func (c *Condition) Depth() int {
	if c == nil || (c.Op != OpAll && c.Op != OpAny) {
		return 0
	}
	deepest := 0
	for _, child := range c.Conditions {
		deepest = max(deepest, child.Depth())
	}
	return deepest + 1
}

// Equal reports whether two conditions are the same tree; tests and the fuzz target compare parse results with it.
func (c *Condition) Equal(o *Condition) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Op == o.Op && c.Variable == o.Variable && c.Value == o.Value &&
		slices.EqualFunc(c.Conditions, o.Conditions, (*Condition).Equal)
}
