package dataplane

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/services/messaging"
	"github.com/ferry-mq/ferry/services/wire"
)

func toPartitionStates(states []persistence.PartitionState) []api.PartitionState {
	out := make([]api.PartitionState, len(states))
	for i, s := range states {
		out[i] = api.PartitionState{Partition: int(s.Partition), Generation: s.Generation, LatestOffset: s.Latest,
			CommittedOffset: s.Committed, Lag: s.Lag()}
		if s.Owner != "" {
			owner := s.Owner
			out[i].Owner = &owner
		}
	}
	return out
}

// writePartitionError answers a stale commit with 409 StaleGeneration, anything else as usual.
func writePartitionError(c *gin.Context, err error) {
	var stale *persistence.StaleGenerationError
	if errors.As(err, &stale) {
		apierror.Write(c, apierror.New(http.StatusConflict, "StaleGeneration", "%s", stale.Error()))
		return
	}
	apierror.Write(c, err)
}

// GetPartitionMessages reads the caller's partitions of a PARTITION group (long poll).
func (h *Handlers) GetPartitionMessages(c *gin.Context, queueID api.QueueIdPath, params api.GetPartitionMessagesParams) {
	got, err := h.svc.ReadPartitions(c.Request.Context(), tenancyOf(c), queueID, messaging.PartitionRead{
		ConsumerGroup:  httpapi.Deref(params.ConsumerGroupId),
		ConsumerID:     httpapi.Deref(params.XFerryConsumerId),
		Limit:          cmp.Or(httpapi.Deref(params.Limit), 100),
		TimeoutSeconds: int32Ptr(params.TimeoutInSeconds),
	})
	if err != nil {
		writePartitionError(c, err)
		return
	}
	writeBody(c, func(b []byte) []byte { return wire.AppendPartitionMessages(b, got) })
}

// CommitPartitionOffsets commits the caller's offsets: 204, or 409 StaleGeneration.
func (h *Handlers) CommitPartitionOffsets(c *gin.Context, queueID api.QueueIdPath, params api.CommitPartitionOffsetsParams) {
	var body api.CommitPartitionOffsetsDetails
	if !bind(c, &body) {
		return
	}
	offsets := make([]messaging.PartitionOffset, len(body.Offsets))
	for i, o := range body.Offsets {
		offsets[i] = messaging.PartitionOffset{Partition: int32(o.Partition), Offset: o.Offset, Generation: o.Generation}
	}
	err := h.svc.CommitOffsets(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId),
		httpapi.Deref(params.XFerryConsumerId), offsets)
	if err != nil {
		writePartitionError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// SeekPartitions moves a PARTITION group's offsets (replay or skip).
func (h *Handlers) SeekPartitions(c *gin.Context, queueID api.QueueIdPath, params api.SeekPartitionsParams) {
	var body api.SeekPartitionsDetails
	if !bind(c, &body) {
		return
	}
	var partitions []int32
	if body.Partitions != nil {
		partitions = make([]int32, len(*body.Partitions))
		for i, p := range *body.Partitions {
			partitions[i] = int32(p)
		}
	}
	states, err := h.svc.SeekPartitions(c.Request.Context(), tenancyOf(c), queueID, httpapi.Deref(params.ConsumerGroupId),
		partitions, body.Offset, body.Time)
	if err != nil {
		writePartitionError(c, err)
		return
	}
	out := api.SeekPartitionsResult{Partitions: toPartitionStates(states)}
	for _, s := range states {
		out.Generation = max(out.Generation, s.Generation)
	}
	c.JSON(http.StatusOK, out)
}
