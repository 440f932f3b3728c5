package iam

import "github.com/ferry-mq/ferry/iam/policy"

// TargetKind says where an operation's target compartment comes from.
type TargetKind int

// Target kinds.
const (
	// TargetAuthenticated: any authenticated caller of the tenancy (no resource is touched).
	TargetAuthenticated TargetKind = iota
	// TargetTenancy: the tenancy's root compartment.
	TargetTenancy
	// TargetCompartmentPath: the compartment named by the compartmentId path parameter itself.
	TargetCompartmentPath
	// TargetCompartmentQuery: the compartmentId query parameter (lists). Without it, the compartment of the queue
	// (id) or work request (workRequestId) the list names, else the tenancy's root compartment.
	TargetCompartmentQuery
	// TargetCompartmentBody: the compartmentId of the JSON body (creates: the parent compartment).
	TargetCompartmentBody
	// TargetQueuePath: the compartment of the queue named by the queueId path parameter.
	TargetQueuePath
	// TargetQueueQuery: the compartment of the queue named by the queueId query parameter.
	TargetQueueQuery
	// TargetQueueBody: the compartment of the queue named by the body's queueId.
	TargetQueueBody
	// TargetConsumerGroupPath: the compartment of the consumer group's queue.
	TargetConsumerGroupPath
	// TargetWorkRequestPath: the compartment of the work request.
	TargetWorkRequestPath
	// TargetPolicyPath: the compartment of the policy.
	TargetPolicyPath
	// TargetCompartmentDeletionPath: the compartment whose deletion the workRequestId path parameter records (OCI
	// Identity's work requests, tenancy.DeletedCompartment).
	TargetCompartmentDeletionPath
)

// Operation is how one API operation is authorized: the permission it needs (DESIGN section 5) and where its
// target is. Every route of both planes has an entry; a test fails when a route lacks one.
type Operation struct {
	Permission string
	Target     TargetKind
	// AlsoBodyCompartment: the permission is needed on the body's compartmentId too (a move needs it on both
	// sides).
	AlsoBodyCompartment bool
}

// Operations maps operationIds (openapi/openapi.yaml) to their authorization.
var Operations = map[string]Operation{
	// Compartments.
	"CreateCompartment": {policy.PermCompartmentCreate, TargetCompartmentBody, false},
	"GetCompartment":    {policy.PermCompartmentRead, TargetCompartmentPath, false},
	"ListCompartments":  {policy.PermCompartmentInspect, TargetCompartmentQuery, false},
	"UpdateCompartment": {policy.PermCompartmentUpdate, TargetCompartmentPath, false},
	"DeleteCompartment": {policy.PermCompartmentDelete, TargetCompartmentPath, false},
	// OCI Identity's compartments (/20160918): the same permissions as ferry's own compartment operations.
	"IdentityCreateCompartment": {policy.PermCompartmentCreate, TargetCompartmentBody, false},
	"IdentityGetCompartment":    {policy.PermCompartmentRead, TargetCompartmentPath, false},
	"IdentityListCompartments":  {policy.PermCompartmentInspect, TargetCompartmentQuery, false},
	"IdentityUpdateCompartment": {policy.PermCompartmentUpdate, TargetCompartmentPath, false},
	"IdentityDeleteCompartment": {policy.PermCompartmentDelete, TargetCompartmentPath, false},
	// Following a deletion reads the deleted compartment, as GetCompartment does.
	"IdentityGetWorkRequest": {policy.PermCompartmentRead, TargetCompartmentDeletionPath, false},
	// Queues (consumer groups and work requests are queue resources).
	"CreateQueue":            {policy.PermQueueCreate, TargetCompartmentBody, false},
	"GetQueue":               {policy.PermQueueRead, TargetQueuePath, false},
	"ListQueues":             {policy.PermQueueInspect, TargetCompartmentQuery, false},
	"UpdateQueue":            {policy.PermQueueUpdate, TargetQueuePath, false},
	"DeleteQueue":            {policy.PermQueueDelete, TargetQueuePath, false},
	"ChangeQueueCompartment": {policy.PermQueueMove, TargetQueuePath, true},
	"PurgeQueue":             {policy.PermQueuePurge, TargetQueuePath, false},
	"RedriveMessages":        {policy.PermQueueUpdate, TargetQueuePath, false},
	"GetStats":               {policy.PermQueueRead, TargetQueuePath, false},
	"GetQueueMetrics":        {policy.PermQueueMetricsRead, TargetQueuePath, false},
	"ListChannels":           {policy.PermQueueRead, TargetQueuePath, false},
	"GetWorkRequest":         {policy.PermQueueRead, TargetWorkRequestPath, false},
	"ListWorkRequestErrors":  {policy.PermQueueRead, TargetWorkRequestPath, false},
	"ListWorkRequestLogs":    {policy.PermQueueRead, TargetWorkRequestPath, false},
	"ListWorkRequests":       {policy.PermQueueInspect, TargetCompartmentQuery, false},
	"CreateConsumerGroup":    {policy.PermQueueCreate, TargetQueueBody, false},
	"GetConsumerGroup":       {policy.PermQueueRead, TargetConsumerGroupPath, false},
	"ListConsumerGroups":     {policy.PermQueueInspect, TargetQueueQuery, false},
	"UpdateConsumerGroup":    {policy.PermQueueUpdate, TargetConsumerGroupPath, false},
	"DeleteConsumerGroup":    {policy.PermQueueDelete, TargetConsumerGroupPath, false},
	// The filter dry run touches no resource: any authenticated caller may use it.
	"ValidateConsumerGroupFilter": {"", TargetAuthenticated, false},
	// Data plane.
	"PutMessages":    {policy.PermQueuePush, TargetQueuePath, false},
	"GetMessages":    {policy.PermQueuePull, TargetQueuePath, false},
	"DeleteMessage":  {policy.PermQueuePull, TargetQueuePath, false},
	"DeleteMessages": {policy.PermQueuePull, TargetQueuePath, false},
	// Acknowledging and leasing are both QUEUE_PULL.
	"DeleteAndGetMessages": {policy.PermQueuePull, TargetQueuePath, false},
	"UpdateMessage":        {policy.PermQueuePull, TargetQueuePath, false},
	"UpdateMessages":       {policy.PermQueuePull, TargetQueuePath, false},
	"WatchMessages":        {policy.PermQueuePull, TargetQueuePath, false},
	// Consumers: listing them reads the queue; leaving is a consumer's own act.
	"ListConsumers":  {policy.PermQueueRead, TargetQueuePath, false},
	"DeleteConsumer": {policy.PermQueuePull, TargetQueuePath, false},
	// Queue-based load balancing: reading, committing and seeking a PARTITION group's offsets is consuming.
	"GetPartitionMessages":   {policy.PermQueuePull, TargetQueuePath, false},
	"CommitPartitionOffsets": {policy.PermQueuePull, TargetQueuePath, false},
	"SeekPartitions":         {policy.PermQueuePull, TargetQueuePath, false},
	// Policies.
	"CreatePolicy": {policy.PermPolicyCreate, TargetCompartmentBody, false},
	"GetPolicy":    {policy.PermPolicyRead, TargetPolicyPath, false},
	"ListPolicies": {policy.PermPolicyInspect, TargetCompartmentQuery, false},
	"UpdatePolicy": {policy.PermPolicyUpdate, TargetPolicyPath, false},
	"DeletePolicy": {policy.PermPolicyDelete, TargetPolicyPath, false},
	"Authorize":    {policy.PermPolicyRead, TargetTenancy, false},
}

// PublicOperations need no token (operational endpoints).
var PublicOperations = map[string]bool{"Healthz": true, "Readyz": true, "Metrics": true, "GetOpenAPISpec": true}
