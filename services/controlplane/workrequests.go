package controlplane

import (
	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/httpapi"
)

func (h *Handlers) toWorkRequest(w persistence.WorkRequest) api.WorkRequest {
	uri := "/20210201/queues/" + w.ResourceID
	return api.WorkRequest{
		Id:              w.ID,
		CompartmentId:   w.CompartmentID,
		OperationType:   api.WorkRequestOperationType(w.OperationType),
		Status:          api.WorkRequestStatus(w.Status),
		PercentComplete: w.PercentComplete,
		Resources: []api.WorkRequestResource{{
			EntityType: w.ResourceType,
			ActionType: api.WorkRequestResourceActionType(actionType(w)),
			Identifier: w.ResourceID,
			EntityUri:  &uri,
		}},
		TimeAccepted: w.TimeAccepted,
		TimeStarted:  w.TimeStarted,
		TimeFinished: w.TimeFinished,
	}
}

// actionType is IN_PROGRESS until the work finishes, then what it did to the resource.
func actionType(w persistence.WorkRequest) string {
	switch w.Status {
	case persistence.WorkSucceeded, persistence.WorkFailed:
		return w.ActionType
	}
	return "IN_PROGRESS"
}

// GetWorkRequest reports the status and progress of an asynchronous operation.
func (h *Handlers) GetWorkRequest(c *gin.Context, id api.WorkRequestIdPath, _ api.GetWorkRequestParams) {
	w, err := h.store.WorkRequests.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, w, err, h.toWorkRequest)
}

// ListWorkRequests lists a compartment's work requests, newest first.
func (h *Handlers) ListWorkRequests(c *gin.Context, params api.ListWorkRequestsParams) {
	if !h.compartmentExists(c, params.CompartmentId) {
		return
	}
	list, next, err := h.store.WorkRequests.List(c.Request.Context(), tenancyOf(c), params.CompartmentId, httpapi.Deref(params.ResourceId),
		page(params.Limit, params.Page, false, nil))
	respondList(c, list, next, err, all(h.toWorkRequest), func(items []api.WorkRequest) any {
		return api.WorkRequestSummaryCollection{Items: items}
	})
}
