package controlplane

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
)

func (h *Handlers) toWorkRequest(w persistence.WorkRequest) api.WorkRequest {
	uri := "/20210201/queues/" + w.ResourceID
	if w.ResourceType == resourceConsumerGroup {
		uri = "/20210201/consumerGroups/" + w.ResourceID
	}
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

// ListWorkRequests lists work requests, newest first: a compartment's, or (without one) the work request
// workRequestId names wherever it is (IAM decided on its compartment), or the root compartment's.
func (h *Handlers) ListWorkRequests(c *gin.Context, params api.ListWorkRequestsParams) {
	compartmentID := httpapi.Deref(params.CompartmentId)
	if compartmentID == "" && httpapi.Deref(params.WorkRequestId) == "" {
		compartmentID = tenancyOf(c)
	}
	if compartmentID != "" && !h.compartmentExists(c, compartmentID) {
		return
	}
	list, next, err := h.store.WorkRequests.List(c.Request.Context(), tenancyOf(c), persistence.WorkRequestFilter{
		CompartmentID: compartmentID, ResourceID: httpapi.Deref(params.ResourceId), ID: httpapi.Deref(params.WorkRequestId),
	}, page(params.Limit, params.Page, false, nil))
	respondList(c, list, next, err, all(h.toWorkRequest), func(items []api.WorkRequest) any {
		return api.WorkRequestSummaryCollection{Items: items}
	})
}

// ListWorkRequestErrors lists the errors of a work request: the one it failed with, if it did.
func (h *Handlers) ListWorkRequestErrors(c *gin.Context, id api.WorkRequestIdPath, params api.ListWorkRequestErrorsParams) {
	w, err := h.store.WorkRequests.Get(c.Request.Context(), tenancyOf(c), id)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	var items []api.WorkRequestError
	if w.Status == persistence.WorkFailed && w.TimeFinished != nil {
		items = append(items, api.WorkRequestError{Code: "WorkFailed", Message: w.ErrorMessage, Timestamp: *w.TimeFinished})
	}
	respondSteps(c, items, params.Limit, params.Page, func(page []api.WorkRequestError) any {
		return api.WorkRequestErrorCollection{Items: page}
	})
}

// ListWorkRequestLogs lists the steps of a work request, from its timestamps: accepted, started, finished.
func (h *Handlers) ListWorkRequestLogs(c *gin.Context, id api.WorkRequestIdPath, params api.ListWorkRequestLogsParams) {
	w, err := h.store.WorkRequests.Get(c.Request.Context(), tenancyOf(c), id)
	if err != nil {
		apierror.Write(c, err)
		return
	}
	what := strings.ToLower(strings.ReplaceAll(w.OperationType, "_", " "))
	items := []api.WorkRequestLogEntry{{Message: what + ": accepted", Timestamp: w.TimeAccepted}}
	if w.TimeStarted != nil {
		items = append(items, api.WorkRequestLogEntry{Message: what + ": started", Timestamp: *w.TimeStarted})
	}
	if w.TimeFinished != nil {
		outcome := what + ": succeeded"
		if w.Status == persistence.WorkFailed {
			outcome = what + ": failed: " + w.ErrorMessage
		}
		items = append(items, api.WorkRequestLogEntry{Message: outcome, Timestamp: *w.TimeFinished})
	}
	respondSteps(c, items, params.Limit, params.Page, func(page []api.WorkRequestLogEntry) any {
		return api.WorkRequestLogEntryCollection{Items: page}
	})
}

// respondSteps answers one page of a work request's (few) errors or log entries, oldest first; the page token is
// the index of the page's first item.
func respondSteps[T any](c *gin.Context, items []T, limit *int, token *string, collection func([]T) any) {
	start := 0
	if t := httpapi.Deref(token); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(items) {
			apierror.Write(c, fault.InvalidParameter("page: invalid page token"))
			return
		}
		start = n
	}
	end := min(len(items), start+cmp.Or(httpapi.Deref(limit), persistence.ListLimitDefault))
	if end < len(items) {
		c.Header("opc-next-page", strconv.Itoa(end))
	}
	page := items[start:end:end]
	if page == nil {
		page = []T{}
	}
	c.JSON(http.StatusOK, collection(page))
}
