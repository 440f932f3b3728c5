// Package dataplane serves the data plane of DESIGN section 7 (messages, stats, channels, redrive) over the
// messaging service. Handlers are thin: bind, call the service, convert, write.
package dataplane

import (
	"cmp"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/metering"
	"github.com/ferry-mq/ferry/services/wire"
)

// Handlers implements the data-plane operations of api.ServerInterface.
type Handlers struct {
	svc   *messaging.Service
	meter *metering.Meter
}

// New builds the handlers.
func New(svc *messaging.Service, meter *metering.Meter) *Handlers {
	return &Handlers{svc: svc, meter: meter}
}

func tenancyOf(c *gin.Context) string {
	if p := iam.PrincipalFrom(c.Request.Context()); p != nil {
		return p.TenancyID
	}
	return ""
}

// bind decodes the JSON body into dst, or takes the body the validator's fast path already decoded (for bodies
// whose fast decoder returns the api type itself).
func bind[T any](c *gin.Context, dst *T) bool {
	if body, ok := httpapi.DecodedBody[T](c); ok {
		*dst = *body
		return true
	}
	if err := c.ShouldBindJSON(dst); err != nil {
		apierror.Write(c, fault.InvalidParameter("body: %v", err))
		return false
	}
	return true
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

// PutMessages publishes a batch: all of it commits before the 200, or none of it. The body was decoded by the
// validator's fast path (wire.FastDecoders), or is decoded here when kin-openapi validated it.
func (h *Handlers) PutMessages(c *gin.Context, queueID api.QueueIdPath, _ api.PutMessagesParams) {
	var entries []messaging.PutEntry
	if decoded, ok := httpapi.DecodedBody[[]messaging.PutEntry](c); ok {
		entries = *decoded
	} else {
		var body api.PutMessagesDetails
		if !bind(c, &body) {
			return
		}
		entries = wire.PutEntries(body)
	}
	results, err := h.svc.Put(c.Request.Context(), tenancyOf(c), queueID, entries)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	writeBody(c, func(b []byte) []byte { return wire.AppendPutMessages(b, results) })
}

// GetMessages leases messages, long-polling up to timeoutInSeconds for the first one.
func (h *Handlers) GetMessages(c *gin.Context, queueID api.QueueIdPath, params api.GetMessagesParams) {
	req, ok := getRequest(c, params)
	if !ok {
		return
	}
	got, err := h.svc.Get(c.Request.Context(), tenancyOf(c), queueID, req)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	writeGetMessages(c, got)
}

// getRequest is the GetMessages request of the query parameters (and the consumer id header); false when it
// answered 400.
func getRequest(c *gin.Context, params api.GetMessagesParams) (messaging.GetRequest, bool) {
	consumerID := httpapi.Deref(params.ConsumerId)
	if header := httpapi.Deref(params.XFerryConsumerId); header != "" {
		if consumerID != "" && consumerID != header {
			apierror.Write(c, fault.InvalidParameter("consumerId: the query parameter and the X-Ferry-Consumer-Id header differ"))
			return messaging.GetRequest{}, false
		}
		consumerID = header
	}
	return messaging.GetRequest{
		ConsumerID:        consumerID,
		ConsumerGroup:     httpapi.Deref(params.ConsumerGroupId),
		DLQ:               httpapi.Deref(params.Dlq),
		Limit:             cmp.Or(httpapi.Deref(params.Limit), 1),
		VisibilitySeconds: int32Ptr(params.VisibilityInSeconds),
		TimeoutSeconds:    int32Ptr(params.TimeoutInSeconds),
		ChannelFilter:     httpapi.Deref(params.ChannelFilter),
	}, true
}

// DeleteAndGetMessages acknowledges a batch (each entry on its own, as DeleteMessages) and leases the next one,
// the acknowledgement in the lease's transaction.
func (h *Handlers) DeleteAndGetMessages(c *gin.Context, queueID api.QueueIdPath, params api.DeleteAndGetMessagesParams) {
	var body api.DeleteMessagesDetails
	if !bind(c, &body) {
		return
	}
	req, ok := getRequest(c, api.GetMessagesParams(params))
	if !ok {
		return
	}
	receipts := make([]string, len(body.Entries))
	for i, e := range body.Entries {
		receipts[i] = e.Receipt
	}
	got, errs, err := h.svc.GetAcknowledging(c.Request.Context(), tenancyOf(c), queueID, req, receipts)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	writeBody(c, func(b []byte) []byte { return wire.AppendDeleteAndGetMessages(b, got, errs) })
}

// DeleteMessage acknowledges one message: 204, 409 for a stale receipt, 404 when the message is gone.
func (h *Handlers) DeleteMessage(c *gin.Context, queueID api.QueueIdPath, receipt api.MessageReceiptPath, params api.DeleteMessageParams) {
	errs, err := h.svc.Delete(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.Dlq), []string{receipt})
	if err == nil && errs[0] != nil {
		err = errs[0]
	}
	if err != nil {
		apierror.Write(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// DeleteMessages acknowledges a batch; each entry succeeds or fails on its own.
func (h *Handlers) DeleteMessages(c *gin.Context, queueID api.QueueIdPath, params api.DeleteMessagesParams) {
	var body api.DeleteMessagesDetails
	if !bind(c, &body) {
		return
	}
	receipts := make([]string, len(body.Entries))
	for i, e := range body.Entries {
		receipts[i] = e.Receipt
	}
	errs, err := h.svc.Delete(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.Dlq), receipts)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	writeBody(c, func(b []byte) []byte { return wire.AppendEntryResults(b, errs) })
}

// UpdateMessage extends (or with 0 releases) one lease.
func (h *Handlers) UpdateMessage(c *gin.Context, queueID api.QueueIdPath, receipt api.MessageReceiptPath, params api.UpdateMessageParams) {
	var body api.UpdateMessageDetails
	if !bind(c, &body) {
		return
	}
	times, errs, err := h.svc.Update(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.Dlq),
		[]string{receipt}, []int32{int32(body.VisibilityInSeconds)})
	if err == nil && errs[0] != nil {
		err = errs[0]
	}
	if err != nil {
		apierror.Write(c, err)
		return
	}
	rc, _ := messaging.NewReceipts(nil).Peek(receipt)
	c.JSON(http.StatusOK, api.UpdatedMessage{Id: rc.ID, VisibleAfter: *times[0]})
}

// UpdateMessages extends or releases a batch of leases; each entry succeeds or fails on its own (a failed one
// carries the HTTP status of its failure in errorCode, as OCI's result does).
func (h *Handlers) UpdateMessages(c *gin.Context, queueID api.QueueIdPath, params api.UpdateMessagesParams) {
	var body api.UpdateMessagesDetails
	if !bind(c, &body) {
		return
	}
	receipts := make([]string, len(body.Entries))
	seconds := make([]int32, len(body.Entries))
	for i, e := range body.Entries {
		receipts[i], seconds[i] = e.Receipt, int32(e.VisibilityInSeconds)
	}
	times, errs, err := h.svc.Update(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.Dlq), receipts, seconds)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	out := api.UpdateMessagesResult{Entries: make([]api.UpdateMessagesResultEntry, len(errs))}
	for i, entryErr := range errs {
		if entryErr != nil {
			e := apierror.From(entryErr)
			out.Entries[i] = api.UpdateMessagesResultEntry{Code: &e.Code, ErrorCode: &e.Status, ErrorMessage: &e.Message}
			wire.CountFailure(e, &out.ClientFailures, &out.ServerFailures)
			continue
		}
		rc, _ := messaging.NewReceipts(nil).Peek(receipts[i])
		id, at := rc.ID, *times[i]
		out.Entries[i] = api.UpdateMessagesResultEntry{Id: &id, VisibleAfter: &at}
	}
	c.JSON(http.StatusOK, out)
}

// GetStats counts the queue's and the DLQ's messages.
func (h *Handlers) GetStats(c *gin.Context, queueID api.QueueIdPath, params api.GetStatsParams) {
	ctx := c.Request.Context()
	queue, dlq, err := h.svc.Stats(ctx, tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.ChannelId))
	if err != nil {
		apierror.Write(c, err)
		return
	}
	groups, discarded, err := h.svc.AllGroupStats(ctx, tenancyOf(c), queueID, httpapi.Deref(params.ChannelId))
	if err != nil {
		apierror.Write(c, err)
		return
	}
	partitions, err := h.svc.PartitionStates(ctx, tenancyOf(c), queueID)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	out := api.QueueStats{Queue: toStats(queue), Dlq: toStats(dlq), DiscardedMessages: &discarded}
	if groups != nil {
		list := make([]api.ConsumerGroupStats, len(groups))
		for i, g := range groups {
			list[i] = api.ConsumerGroupStats{ConsumerGroupId: g.ID, DisplayName: g.DisplayName, IsEnabled: g.Enabled,
				Queue: toStats(g.Queue), Dlq: toStats(g.DLQ),
				LoadBalancing: httpapi.Ptr(api.ConsumerGroupStatsLoadBalancing(persistence.LoadBalancingMessage))}
			if states, ok := partitions[g.ID]; ok {
				var generation, lag int64
				for _, s := range states {
					generation, lag = max(generation, s.Generation), lag+s.Lag()
				}
				list[i].LoadBalancing = httpapi.Ptr(api.ConsumerGroupStatsLoadBalancing(persistence.LoadBalancingPartition))
				list[i].Generation, list[i].Lag, list[i].Partitions = &generation, &lag, httpapi.Ptr(toPartitionStates(states))
			}
		}
		out.ConsumerGroups = &list
	}
	c.JSON(http.StatusOK, out)
}

func toStats(s persistence.Stats) api.QueueStatsDetail {
	return api.QueueStatsDetail{VisibleMessages: s.Visible, InFlightMessages: s.InFlight, DelayedMessages: s.Delayed, SizeInBytes: s.SizeBytes}
}

// ListChannels lists the non-empty channels, paginated.
func (h *Handlers) ListChannels(c *gin.Context, queueID api.QueueIdPath, params api.ListChannelsParams) {
	limit := cmp.Or(httpapi.Deref(params.Limit), persistence.ListLimitDefault)
	items, next, err := h.svc.Channels(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), httpapi.Deref(params.Page), httpapi.Deref(params.ChannelFilter), limit)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	if next != "" {
		c.Header("opc-next-page", next)
	}
	if items == nil {
		items = []string{}
	}
	c.JSON(http.StatusOK, api.ChannelCollection{Items: items})
}

// RedriveMessages moves DLQ messages back to the queue.
func (h *Handlers) RedriveMessages(c *gin.Context, queueID api.QueueIdPath, _ api.RedriveMessagesParams) {
	var body api.RedriveMessagesDetails
	if !bind(c, &body) {
		return
	}
	n, err := h.svc.Redrive(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(body.ConsumerGroupId), cmp.Or(httpapi.Deref(body.Limit), 1000))
	if err != nil {
		apierror.Write(c, err)
		return
	}
	c.JSON(http.StatusOK, api.RedriveMessagesResult{RedrivenMessages: int(n)})
}

// ListConsumers lists the consumers of the queue's consumer groups (watches and single active consumers).
func (h *Handlers) ListConsumers(c *gin.Context, queueID api.QueueIdPath, params api.ListConsumersParams) {
	list, groups, err := h.svc.Consumers(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId))
	if err != nil {
		apierror.Write(c, err)
		return
	}
	out := api.ConsumerCollection{Items: make([]api.Consumer, len(list)), Groups: make([]api.ConsumerGroupConsumers, len(groups))}
	for i, cs := range list {
		item := api.Consumer{Id: cs.ID, ConsumerGroupId: cs.GroupID, Status: api.ConsumerStatus(cs.Status),
			Kind: api.ConsumerKindPOLL, Pending: cs.Pending, Delivered: cs.Delivered,
			IdleSeconds: int(cs.Idle / time.Second), TimeRegistered: cs.TimeRegistered}
		if cs.Partition {
			item.Kind = api.ConsumerKindPARTITION
			parts := make([]int, len(cs.Partitions))
			for k, p := range cs.Partitions {
				parts[k] = int(p)
			}
			lag := cs.Lag
			item.Partitions, item.Lag = &parts, &lag
		}
		if cs.Watch {
			item.Kind = api.ConsumerKindWATCH
			auto := cs.AutoCommit
			item.AutoCommit = &auto
			if cs.Window != nil {
				window := int(*cs.Window)
				slots := max(0, window-int(cs.Pending))
				item.Window, item.Slots = &window, &slots
			}
		}
		out.Items[i] = item
	}
	for i, g := range groups {
		out.Groups[i] = api.ConsumerGroupConsumers{ConsumerGroupId: g.GroupID, Pending: g.Pending, Delivered: g.Delivered, Consumers: g.Consumers}
	}
	c.JSON(http.StatusOK, out)
}

// DeleteConsumer removes a consumer from its consumer group (it leaves): 204, or 404 when it is not registered.
func (h *Handlers) DeleteConsumer(c *gin.Context, queueID api.QueueIdPath, consumerID api.ConsumerIdPath, params api.DeleteConsumerParams) {
	if err := h.svc.Leave(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId), consumerID); err != nil {
		apierror.Write(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
