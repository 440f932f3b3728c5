package controlplane

import (
	"cmp"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

// Queue defaults (DESIGN section 3).
const (
	RetentionSecondsDefault        = 86400
	VisibilitySecondsDefault       = 30
	TimeoutSecondsDefault          = 30
	ChannelConsumptionLimitDefault = 100
	MaxSizeBytesDefault            = int64(2 << 30)
	ConsumerLeaseSecondsDefault    = 30
)

func (h *Handlers) toQueue(q persistence.Queue) api.Queue {
	return api.Queue{
		Id:                           q.ID,
		CompartmentId:                q.CompartmentID,
		DisplayName:                  q.DisplayName,
		LifecycleState:               api.LifecycleState(q.LifecycleState),
		LifecycleDetails:             ptrIfSet(q.LifecycleDetails),
		RetentionInSeconds:           int(q.RetentionSeconds),
		VisibilityInSeconds:          int(q.VisibilitySeconds),
		TimeoutInSeconds:             int(q.TimeoutSeconds),
		DeadLetterQueueDeliveryCount: int(q.DeadLetterQueueDeliveryCount),
		ChannelConsumptionLimit:      int(q.ChannelConsumptionLimit),
		MaxSizeInBytes:               q.MaxSizeBytes,
		DeduplicationWindowInSeconds: int(q.DedupWindowSeconds),
		IsSingleActiveConsumer:       q.SingleActiveConsumer,
		ConsumerLeaseInSeconds:       int(q.ConsumerLeaseSeconds),
		PartitionCount:               partitionCountOf(q),
		MessagesEndpoint:             h.publicURL,
		Capabilities:                 capabilitiesOf(q),
		CustomEncryptionKeyId:        q.CustomEncryptionKeyID,
		FreeformTags:                 q.FreeformTags,
		DefinedTags:                  api.DefinedTags(q.DefinedTags),
		TimeCreated:                  q.TimeCreated,
		TimeUpdated:                  q.TimeUpdated,
	}
}

// respondAccepted answers a change made at once the OCI way: 202 with the opc-work-request-id of its (already
// SUCCEEDED) work request, and the resource r in its API shape with its etag, or the error.
func respondAccepted[R interface{ Etag() string }, B any](c *gin.Context, wr persistence.WorkRequest, r R, err error, toAPI func(R) B) {
	if err != nil {
		apierror.Write(c, err)
		return
	}
	c.Header("opc-work-request-id", wr.ID)
	c.Header("etag", r.Etag())
	c.JSON(http.StatusAccepted, toAPI(r))
}

// completedWork is the work request of a change made at once (recorded by the store with the change).
func (h *Handlers) completedWork(operation, resourceType, action string) persistence.WorkRequest {
	return persistence.WorkRequest{ID: h.ocids.New(tenancy.TypeWorkRequest), OperationType: operation,
		ResourceType: resourceType, ActionType: action}
}

// CreateQueue creates a queue with the defaults of DESIGN section 3 for every setting left out.
func (h *Handlers) CreateQueue(c *gin.Context, _ api.CreateQueueParams) {
	var body api.CreateQueueDetails
	if !bind(c, &body) {
		return
	}
	caps, err := capabilitiesFrom(body.Capabilities)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	if body.PartitionCount != nil && httpapi.Deref(body.DeduplicationWindowInSeconds) > 0 {
		apierror.Write(c, fault.InvalidParameter("partitionCount: a partitioned queue has no deduplication window (deduplicationWindowInSeconds must be 0)"))
		return
	}
	wr := h.completedWork(persistence.OpCreateQueue, resourceQueue, persistence.ActionCreated)
	q, err := h.store.Queues.Create(c.Request.Context(), persistence.Queue{
		TenancyID:                    tenancyOf(c),
		ID:                           h.ocids.New(tenancy.TypeQueue),
		CompartmentID:                body.CompartmentId,
		DisplayName:                  body.DisplayName,
		RetentionSeconds:             int32(cmp.Or(httpapi.Deref(body.RetentionInSeconds), RetentionSecondsDefault)),
		VisibilitySeconds:            int32(orDefault(body.VisibilityInSeconds, VisibilitySecondsDefault)),
		TimeoutSeconds:               int32(orDefault(body.TimeoutInSeconds, TimeoutSecondsDefault)),
		DeadLetterQueueDeliveryCount: int32(httpapi.Deref(body.DeadLetterQueueDeliveryCount)),
		ChannelConsumptionLimit:      int32(cmp.Or(httpapi.Deref(body.ChannelConsumptionLimit), ChannelConsumptionLimitDefault)),
		MaxSizeBytes:                 cmp.Or(httpapi.Deref(body.MaxSizeInBytes), MaxSizeBytesDefault),
		DedupWindowSeconds:           int32(httpapi.Deref(body.DeduplicationWindowInSeconds)),
		SingleActiveConsumer:         httpapi.Deref(body.IsSingleActiveConsumer),
		ConsumerLeaseSeconds:         int32(cmp.Or(httpapi.Deref(body.ConsumerLeaseInSeconds), ConsumerLeaseSecondsDefault)),
		CustomEncryptionKeyID:        body.CustomEncryptionKeyId,
		FreeformTags:                 tagsOf(body.FreeformTags),
		DefinedTags:                  definedTagsOf(body.DefinedTags),
		ConsumerGroupsEnabled:        caps.consumerGroups != nil && *caps.consumerGroups,
		Primary:                      &caps.primary,
		LargeMessages:                caps.largeMessages != nil && *caps.largeMessages,
		PartitionCount:               int32(httpapi.Deref(body.PartitionCount)),
	}, wr)
	respondAccepted(c, wr, q, err, h.toQueue)
}

// orDefault applies def only when the field is absent (0 is a valid explicit value).
func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// GetQueue returns one queue.
func (h *Handlers) GetQueue(c *gin.Context, id api.QueueIdPath, _ api.GetQueueParams) {
	q, err := h.store.Queues.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, q, err, h.toQueue)
}

// ListQueues lists the queues of a compartment (or its subtree) with filters, sorting and pagination. Without a
// compartment, an id lists that queue wherever it is (IAM decided on its compartment), and no id lists the root
// compartment's.
func (h *Handlers) ListQueues(c *gin.Context, params api.ListQueuesParams) {
	compartmentID := httpapi.Deref(params.CompartmentId)
	if compartmentID == "" && httpapi.Deref(params.Id) == "" {
		compartmentID = tenancyOf(c)
	}
	if compartmentID != "" && !h.compartmentExists(c, compartmentID) {
		return
	}
	ctx := c.Request.Context()
	inSubtree := httpapi.Deref(params.CompartmentIdInSubtree)
	byName := params.SortBy != nil && *params.SortBy == api.ListQueuesParamsSortByDisplayName
	list, next, err := h.store.Queues.List(ctx, tenancyOf(c), persistence.QueueFilter{
		CompartmentID:  compartmentID,
		InSubtree:      inSubtree,
		DisplayName:    httpapi.Deref(params.DisplayName),
		ID:             httpapi.Deref(params.Id),
		LifecycleState: string(httpapi.Deref(params.LifecycleState)),
	}, page(params.Limit, params.Page, byName, params.SortOrder))
	respondList(c, list, next, err, func(q persistence.Queue) (api.QueueSummary, bool) {
		// In a subtree list, only the queues the caller may inspect.
		if inSubtree && !iam.CanInspect(ctx, policy.PermQueueInspect, q.CompartmentID) {
			return api.QueueSummary{}, false
		}
		full := h.toQueue(q)
		return api.QueueSummary{
			Id: full.Id, CompartmentId: full.CompartmentId, DisplayName: full.DisplayName,
			LifecycleState: full.LifecycleState, LifecycleDetails: full.LifecycleDetails,
			MessagesEndpoint: full.MessagesEndpoint, FreeformTags: full.FreeformTags, DefinedTags: full.DefinedTags,
			Capabilities: capabilityNames(q), TimeCreated: full.TimeCreated, TimeUpdated: full.TimeUpdated,
		}, true
	}, func(items []api.QueueSummary) any { return api.QueueCollection{Items: items} })
}

// UpdateQueue changes the queue's settings (retentionInSeconds cannot change: the spec rejects it).
func (h *Handlers) UpdateQueue(c *gin.Context, id api.QueueIdPath, params api.UpdateQueueParams) {
	var body api.UpdateQueueDetails
	if !bind(c, &body) {
		return
	}
	caps, err := capabilitiesFrom(body.Capabilities)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	wr := h.completedWork(persistence.OpUpdateQueue, resourceQueue, persistence.ActionUpdated)
	updatable := queueIn(httpapi.Deref(params.IfMatch), persistence.StateActive)
	check := func(cur persistence.Queue) error {
		if cur.PartitionCount > 0 && httpapi.Deref(body.DeduplicationWindowInSeconds) > 0 {
			return fault.InvalidParameter("deduplicationWindowInSeconds: a partitioned queue has no deduplication window")
		}
		return updatable(cur)
	}
	q, err := h.store.Queues.Update(c.Request.Context(), tenancyOf(c), id, check, persistence.QueuePatch{
		DisplayName:                  body.DisplayName,
		VisibilitySeconds:            int32Ptr(body.VisibilityInSeconds),
		TimeoutSeconds:               int32Ptr(body.TimeoutInSeconds),
		DeadLetterQueueDeliveryCount: int32Ptr(body.DeadLetterQueueDeliveryCount),
		ChannelConsumptionLimit:      int32Ptr(body.ChannelConsumptionLimit),
		MaxSizeBytes:                 body.MaxSizeInBytes,
		DedupWindowSeconds:           int32Ptr(body.DeduplicationWindowInSeconds),
		SingleActiveConsumer:         body.IsSingleActiveConsumer,
		ConsumerLeaseSeconds:         int32Ptr(body.ConsumerLeaseInSeconds),
		CustomEncryptionKeyID:        body.CustomEncryptionKeyId,
		FreeformTags:                 tagsOf(body.FreeformTags),
		DefinedTags:                  definedTagsOf(body.DefinedTags),
		ConsumerGroups:               caps.consumerGroups,
		Primary:                      caps.primary,
		LargeMessages:                caps.largeMessages,
	}, wr)
	if err == nil {
		h.queueConfigChanged(q.ID)
		if body.DisplayName != nil && h.Access != nil {
			h.Access.Changed(c.Request.Context(), tenancyOf(c)) // target.queue.name conditions see the new name
		}
	}
	respondAccepted(c, wr, q, err, h.toQueue)
}

// DeleteQueue marks the queue DELETING and answers 202 with the work request that removes its messages.
func (h *Handlers) DeleteQueue(c *gin.Context, id api.QueueIdPath, params api.DeleteQueueParams) {
	// A delete that failed leaves the queue FAILED and asks for the delete to be retried: accept that retry.
	check := queueIn(httpapi.Deref(params.IfMatch), persistence.StateActive, persistence.StateFailed)
	h.startWork(c, id, check, persistence.StateDeleting, persistence.WorkRequest{
		OperationType: persistence.OpDeleteQueue, ResourceType: resourceQueue, ActionType: persistence.ActionDeleted,
	})
}

// PurgeQueue answers 202 with the work request that deletes the queue's (or its DLQ's) messages.
func (h *Handlers) PurgeQueue(c *gin.Context, id api.QueueIdPath, params api.PurgeQueueParams) {
	var body api.PurgeQueueDetails
	if !bind(c, &body) {
		return
	}
	h.startWork(c, id, queueIn(httpapi.Deref(params.IfMatch), persistence.StateActive), "", persistence.WorkRequest{
		OperationType: persistence.OpPurgeQueue, ActionType: persistence.ActionUpdated,
		Params: persistence.PurgeParams(string(body.PurgeType), httpapi.Deref(body.ChannelIds), httpapi.Deref(body.ConsumerGroupId)),
	})
}

func (h *Handlers) startWork(c *gin.Context, id string, check persistence.Check[persistence.Queue], newState string, wr persistence.WorkRequest) {
	wr.ID = h.ocids.New(tenancy.TypeWorkRequest)
	wr, err := h.store.Queues.StartWork(c.Request.Context(), tenancyOf(c), id, check, newState, wr)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	h.wake()
	c.Header("opc-work-request-id", wr.ID)
	c.Status(http.StatusAccepted)
}

// ChangeQueueCompartment moves the queue to another compartment of the tenancy.
func (h *Handlers) ChangeQueueCompartment(c *gin.Context, id api.QueueIdPath, params api.ChangeQueueCompartmentParams) {
	var body api.ChangeQueueCompartmentDetails
	if !bind(c, &body) {
		return
	}
	wr := h.completedWork(persistence.OpMoveQueue, resourceQueue, persistence.ActionUpdated)
	q, err := h.store.Queues.ChangeCompartment(c.Request.Context(), tenancyOf(c), id,
		queueIn(httpapi.Deref(params.IfMatch), persistence.StateActive), body.CompartmentId, wr)
	h.invalidateOnSuccess(c, err)
	respondAccepted(c, wr, q, err, h.toQueue)
}

// partitionCountOf is the queue's partitionCount as the API shows it: absent when it is not partitioned.
func partitionCountOf(q persistence.Queue) *int {
	if q.PartitionCount == 0 {
		return nil
	}
	n := int(q.PartitionCount)
	return &n
}
