package controlplane

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

// OCI Identity's compartment operations (/20160918), so that OCI's own SDKs (identity.IdentityClient) manage
// ferry's compartments. They do what the /20210201 operations do (compartments.go's shared steps) and differ only
// in their shapes: OCI's Compartment (no timeUpdated, definedTags, isAccessible), a list answered as a bare JSON
// array, and a delete answered 202 with a work request id.

// toIdentityCompartment is a compartment in OCI Identity's shape. OCI's SDKs require compartmentId, which the
// root compartment has none of: it answers its own id, the tenancy's OCID, as OCI does for a tenancy.
func toIdentityCompartment(c persistence.Compartment) api.IdentityCompartment {
	parent := c.ID
	if c.ParentID != nil {
		parent = *c.ParentID
	}
	return api.IdentityCompartment{
		Id:             c.ID,
		CompartmentId:  parent,
		Name:           c.Name,
		Description:    c.Description,
		TimeCreated:    c.TimeCreated,
		LifecycleState: api.IdentityCompartmentLifecycleState(c.LifecycleState), // ferry's are ACTIVE or DELETED
		FreeformTags:   c.FreeformTags,
		DefinedTags:    api.IdentityDefinedTags{},
	}
}

// noDefinedTags refuses defined tags: they belong to tag namespaces, which ferry does not have, and OCI refuses a
// tag of a namespace that does not exist. An empty map (what OCI's SDKs send for "no tags") is accepted.
func noDefinedTags(tags *api.IdentityDefinedTags) error {
	if tags == nil {
		return nil
	}
	for namespace := range *tags {
		return fault.InvalidParameter("definedTags: the tag namespace %q does not exist (ferry has no tag namespaces)", namespace)
	}
	return nil
}

// IdentityCreateCompartment creates a compartment under compartmentId (OCI Identity's CreateCompartment).
func (h *Handlers) IdentityCreateCompartment(c *gin.Context, _ api.IdentityCreateCompartmentParams) {
	var body api.IdentityCreateCompartmentDetails
	if !bind(c, &body) {
		return
	}
	if err := noDefinedTags(body.DefinedTags); err != nil {
		apierror.Write(c, err)
		return
	}
	comp, err := h.createCompartment(c, body.CompartmentId, body.Name, body.Description, body.FreeformTags)
	respond(c, comp, err, toIdentityCompartment)
}

// IdentityGetCompartment returns one compartment (OCI Identity's GetCompartment).
func (h *Handlers) IdentityGetCompartment(c *gin.Context, id api.CompartmentIdPath, _ api.IdentityGetCompartmentParams) {
	comp, err := h.store.Compartments.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, comp, err, toIdentityCompartment)
}

// IdentityListCompartments lists the children (or the visible descendants) of a compartment as a bare JSON array
// (OCI Identity's ListCompartments). accessLevel=ACCESSIBLE keeps only the compartments the caller may inspect
// itself and marks them isAccessible.
func (h *Handlers) IdentityListCompartments(c *gin.Context, params api.IdentityListCompartmentsParams) {
	byName := params.SortBy != nil && *params.SortBy == api.IdentityListCompartmentsParamsSortByNAME
	accessible := params.AccessLevel != nil && *params.AccessLevel == api.IdentityListCompartmentsParamsAccessLevelACCESSIBLE
	list, next, err, ok := h.listCompartments(c, persistence.CompartmentFilter{
		ParentID:       params.CompartmentId,
		InSubtree:      httpapi.Deref(params.CompartmentIdInSubtree),
		Name:           httpapi.Deref(params.Name),
		LifecycleState: string(httpapi.Deref(params.LifecycleState)),
	}, page(params.Limit, params.Page, byName, params.SortOrder))
	if !ok {
		return
	}
	ctx := c.Request.Context()
	respondList(c, list, next, err, func(comp persistence.Compartment) (api.IdentityCompartment, bool) {
		item := toIdentityCompartment(comp)
		if !accessible {
			return item, true
		}
		visible := canInspectCompartment(ctx, comp.ID)
		item.IsAccessible = &visible
		return item, visible
	}, func(items []api.IdentityCompartment) any { return items })
}

// IdentityUpdateCompartment changes name, description or tags (OCI Identity's UpdateCompartment).
func (h *Handlers) IdentityUpdateCompartment(c *gin.Context, id api.CompartmentIdPath, params api.IdentityUpdateCompartmentParams) {
	var body api.IdentityUpdateCompartmentDetails
	if !bind(c, &body) {
		return
	}
	if err := noDefinedTags(body.DefinedTags); err != nil {
		apierror.Write(c, err)
		return
	}
	patch := persistence.CompartmentPatch{Name: body.Name, Description: body.Description, FreeformTags: tagsOf(body.FreeformTags)}
	comp, err := h.updateCompartment(c, id, httpapi.Deref(params.IfMatch), patch)
	respond(c, comp, err, toIdentityCompartment)
}

// IdentityDeleteCompartment deletes an empty compartment (OCI Identity's DeleteCompartment). OCI deletes
// asynchronously and answers 202 with a work request; ferry deletes at once, so that a compartment that still
// holds resources is refused here (409) rather than by a work request that fails later, and answers the 202 and
// the work request id OCI's SDKs read. The work request is answered from the deleted compartment
// (IdentityGetWorkRequest).
func (h *Handlers) IdentityDeleteCompartment(c *gin.Context, id api.CompartmentIdPath, params api.IdentityDeleteCompartmentParams) {
	if err := h.deleteCompartment(c, id, httpapi.Deref(params.IfMatch)); err != nil {
		apierror.Write(c, err)
		return
	}
	c.Header("opc-work-request-id", tenancy.CompartmentDeletionWorkRequest(id))
	c.Status(http.StatusAccepted)
}

// IdentityGetWorkRequest answers the work request of a compartment's deletion (OCI Identity's GetWorkRequest):
// SUCCEEDED, at the time the compartment was deleted. An id that records no deletion answers 404.
func (h *Handlers) IdentityGetWorkRequest(c *gin.Context, id api.WorkRequestIdPath, _ api.IdentityGetWorkRequestParams) {
	compartmentID, ok := tenancy.DeletedCompartment(id)
	var comp persistence.Compartment
	var err error = fault.ErrNotFound
	if ok {
		comp, err = h.store.Compartments.Get(c.Request.Context(), tenancyOf(c), compartmentID)
	}
	if err == nil && (comp.LifecycleState != persistence.StateDeleted || comp.ParentID == nil) {
		err = fault.ErrNotFound // not deleted (yet): no work request records it
	}
	if err != nil {
		apierror.Write(c, fault.NotFoundIn("workRequestId", err))
		return
	}
	uri := "/20160918/compartments/" + comp.ID
	deleted := comp.TimeUpdated // a DELETED compartment changes no more (compartmentUpdatable)
	c.JSON(http.StatusOK, api.IdentityWorkRequest{
		Id:              id,
		OperationType:   api.IdentityWorkRequestOperationTypeDELETECOMPARTMENT,
		Status:          api.IdentityWorkRequestStatusSUCCEEDED,
		CompartmentId:   *comp.ParentID,
		PercentComplete: 100,
		Resources: []api.IdentityWorkRequestResource{{
			Identifier: comp.ID,
			EntityType: "compartment",
			ActionType: api.IdentityWorkRequestResourceActionTypeDELETED,
			EntityUri:  &uri,
		}},
		TimeAccepted: deleted,
		TimeStarted:  &deleted,
		TimeFinished: &deleted,
	})
}
