package controlplane

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/filter"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

func toConsumerGroup(g persistence.ConsumerGroup, compartmentID string) api.ConsumerGroup {
	out := api.ConsumerGroup{
		Id:             g.ID,
		QueueId:        g.QueueID,
		CompartmentId:  compartmentID,
		DisplayName:    g.DisplayName,
		Filter:         g.Filter,
		IsEnabled:      g.IsEnabled,
		IsPrimary:      g.IsPrimary(),
		LoadBalancing:  httpapi.Ptr(api.ConsumerGroupLoadBalancing(g.LoadBalancing)),
		LifecycleState: api.LifecycleState(g.LifecycleState),
		FreeformTags:   g.FreeformTags,
		DefinedTags:    api.DefinedTags(g.DefinedTags),
		TimeCreated:    g.TimeCreated,
		TimeUpdated:    g.TimeUpdated,
	}
	if g.DeadLetterQueueDeliveryCount != nil {
		n := int(*g.DeadLetterQueueDeliveryCount)
		out.DeadLetterQueueDeliveryCount = &n
	}
	return out
}

// respondGroup answers with the group and its etag (the compartment is its queue's), or the error; after a change
// (wr set), 202 with the work request's id.
func (h *Handlers) respondGroup(c *gin.Context, g persistence.ConsumerGroup, err error, wr *persistence.WorkRequest) {
	var q persistence.Queue
	if err == nil {
		q, err = h.store.Queues.Get(c.Request.Context(), tenancyOf(c), g.QueueID)
	}
	toAPI := func(g persistence.ConsumerGroup) api.ConsumerGroup { return toConsumerGroup(g, q.CompartmentID) }
	if wr != nil {
		respondAccepted(c, *wr, g, err, toAPI)
		return
	}
	respond(c, g, err, toAPI)
}

// OnQueueConfigChanged registers fn, called after this node committed a change to a queue's settings or consumer
// groups, so that the node's own data plane applies it to the very next call. Other nodes learn of it from the
// ferry_config NOTIFY, which cannot give read-your-writes: it arrives asynchronously, on this node too.
func (h *Handlers) OnQueueConfigChanged(fn func(queueID string)) { h.configChanged = fn }

func (h *Handlers) queueConfigChanged(queueID string) {
	if h.configChanged != nil {
		h.configChanged(queueID)
	}
}

// compileFilter checks the filter expression of field; errors name the field and the column.
func compileFilter(field, expr string) error {
	if _, err := filter.Compile(expr); err != nil {
		return fault.InvalidParameter("%s: %v", field, err)
	}
	return nil
}

// CreateConsumerGroup adds a group (with its filter) to a queue that has the CONSUMER_GROUPS capability.
func (h *Handlers) CreateConsumerGroup(c *gin.Context, _ api.CreateConsumerGroupParams) {
	var body api.CreateConsumerGroupDetails
	if !bind(c, &body) {
		return
	}
	expr := httpapi.Deref(body.Filter)
	if err := compileFilter("filter", expr); err != nil {
		apierror.Write(c, err)
		return
	}
	loadBalancing := string(httpapi.Deref(body.LoadBalancing))
	if loadBalancing == persistence.LoadBalancingPartition && (expr != "" || body.DeadLetterQueueDeliveryCount != nil) {
		apierror.Write(c, fault.InvalidParameter("filter, deadLetterQueueDeliveryCount: a PARTITION group reads every message of its partitions and has no dead-letter queue"))
		return
	}
	enabled := true
	if body.IsEnabled != nil {
		enabled = *body.IsEnabled
	}
	wr := h.completedWork(persistence.OpCreateConsumerGroup, resourceConsumerGroup, persistence.ActionCreated)
	g, err := h.store.ConsumerGroups.Create(c.Request.Context(), persistence.ConsumerGroup{
		TenancyID:                    tenancyOf(c),
		ID:                           h.ocids.New(tenancy.TypeConsumerGroup),
		QueueID:                      body.QueueId,
		DisplayName:                  body.DisplayName,
		Filter:                       expr,
		IsEnabled:                    enabled,
		DeadLetterQueueDeliveryCount: int32Ptr(body.DeadLetterQueueDeliveryCount),
		LoadBalancing:                loadBalancing,
		FreeformTags:                 tagsOf(body.FreeformTags),
		DefinedTags:                  definedTagsOf(body.DefinedTags),
	}, wr)
	if err == nil {
		h.queueConfigChanged(g.QueueID)
	}
	h.respondGroup(c, g, err, &wr)
}

// GetConsumerGroup returns one group (the primary group by its queue's OCID).
func (h *Handlers) GetConsumerGroup(c *gin.Context, id api.ConsumerGroupIdPath, _ api.GetConsumerGroupParams) {
	g, err := h.store.ConsumerGroups.Get(c.Request.Context(), tenancyOf(c), id)
	h.respondGroup(c, g, err, nil)
}

// ListConsumerGroups lists a queue's groups.
func (h *Handlers) ListConsumerGroups(c *gin.Context, params api.ListConsumerGroupsParams) {
	ctx := c.Request.Context()
	q, err := h.store.Queues.Get(ctx, tenancyOf(c), params.QueueId)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	byName := params.SortBy != nil && *params.SortBy == api.ListConsumerGroupsParamsSortByDisplayName
	list, next, err := h.store.ConsumerGroups.List(ctx, tenancyOf(c), persistence.ConsumerGroupFilter{
		QueueID:        params.QueueId,
		DisplayName:    httpapi.Deref(params.DisplayName),
		ID:             httpapi.Deref(params.Id),
		LifecycleState: string(httpapi.Deref(params.LifecycleState)),
	}, page(params.Limit, params.Page, byName, params.SortOrder))
	respondList(c, list, next, err, func(g persistence.ConsumerGroup) (api.ConsumerGroup, bool) {
		return toConsumerGroup(g, q.CompartmentID), true
	}, func(items []api.ConsumerGroup) any { return api.ConsumerGroupCollection{Items: items} })
}

// UpdateConsumerGroup changes a group; a new filter applies to messages published from now on.
func (h *Handlers) UpdateConsumerGroup(c *gin.Context, id api.ConsumerGroupIdPath, params api.UpdateConsumerGroupParams) {
	var body api.UpdateConsumerGroupDetails
	if !bind(c, &body) {
		return
	}
	if body.Filter != nil {
		if err := compileFilter("filter", *body.Filter); err != nil {
			apierror.Write(c, err)
			return
		}
	}
	patch := persistence.ConsumerGroupPatch{
		DisplayName:  body.DisplayName,
		Filter:       body.Filter,
		IsEnabled:    body.IsEnabled,
		FreeformTags: tagsOf(body.FreeformTags),
		DefinedTags:  definedTagsOf(body.DefinedTags),
	}
	if n := body.DeadLetterQueueDeliveryCount; n != nil {
		patch.SetDLQCount = true
		if *n >= 0 {
			patch.DeadLetterQueueDeliveryCount = int32Ptr(n)
		}
	}
	wr := h.completedWork(persistence.OpUpdateConsumerGroup, resourceConsumerGroup, persistence.ActionUpdated)
	changeable := groupChangeable(httpapi.Deref(params.IfMatch), false)
	check := func(cur persistence.GroupInQueue) error {
		if cur.IsPartitioned() && ((body.Filter != nil && *body.Filter != "") || patch.SetDLQCount) {
			return fault.InvalidParameter("filter, deadLetterQueueDeliveryCount: a PARTITION group reads every message of its partitions and has no dead-letter queue")
		}
		return changeable(cur)
	}
	g, err := h.store.ConsumerGroups.Update(c.Request.Context(), tenancyOf(c), id, check, patch, wr)
	if err == nil {
		h.queueConfigChanged(g.QueueID)
	}
	h.respondGroup(c, g, err, &wr)
}

// DeleteConsumerGroup deletes a (non-primary) group: 202 with its work request, already SUCCEEDED.
func (h *Handlers) DeleteConsumerGroup(c *gin.Context, id api.ConsumerGroupIdPath, params api.DeleteConsumerGroupParams) {
	wr := h.completedWork(persistence.OpDeleteConsumerGroup, resourceConsumerGroup, persistence.ActionDeleted)
	queueID, err := h.store.ConsumerGroups.Delete(c.Request.Context(), tenancyOf(c), id, groupChangeable(httpapi.Deref(params.IfMatch), true), wr)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	h.queueConfigChanged(queueID)
	c.Header("opc-work-request-id", wr.ID)
	c.Status(http.StatusAccepted)
}

// ValidateConsumerGroupFilter is the filter dry run: parse, and evaluate on each attribute set.
func (h *Handlers) ValidateConsumerGroupFilter(c *gin.Context, _ api.ValidateConsumerGroupFilterParams) {
	var body api.ValidateFilterDetails
	if !bind(c, &body) {
		return
	}
	f, err := filter.Compile(body.Filter)
	if err != nil {
		var ferr *filter.Error
		msg := err.Error()
		if !errors.As(err, &ferr) {
			msg = "invalid filter"
		}
		c.JSON(http.StatusOK, api.ValidateFilterResult{Valid: false, Error: &msg})
		return
	}
	matches := []bool{}
	if body.Attributes != nil {
		for _, attrs := range *body.Attributes {
			matches = append(matches, f.Match(attrs))
		}
	}
	c.JSON(http.StatusOK, api.ValidateFilterResult{Valid: true, Matches: &matches})
}
