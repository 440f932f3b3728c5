package controlplane

import (
	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

func toCompartment(c persistence.Compartment) api.Compartment {
	return api.Compartment{
		Id:             c.ID,
		CompartmentId:  c.ParentID,
		Name:           c.Name,
		Description:    c.Description,
		LifecycleState: api.LifecycleState(c.LifecycleState),
		FreeformTags:   c.FreeformTags,
		TimeCreated:    c.TimeCreated,
		TimeUpdated:    c.TimeUpdated,
	}
}

// CreateCompartment creates a compartment under compartmentId.
func (h *Handlers) CreateCompartment(c *gin.Context, _ api.CreateCompartmentParams) {
	var body api.CreateCompartmentDetails
	if !bind(c, &body) {
		return
	}
	parent := body.CompartmentId
	comp, err := h.store.Compartments.Create(c.Request.Context(), persistence.Compartment{
		TenancyID:    tenancyOf(c),
		ID:           h.ocids.New(tenancy.TypeCompartment),
		ParentID:     &parent,
		Name:         body.Name,
		Description:  httpapi.Deref(body.Description),
		FreeformTags: tagsOf(body.FreeformTags),
	})
	h.invalidateOnSuccess(c, err)
	respond(c, comp, err, toCompartment)
}

// GetCompartment returns one compartment (a deleted one answers with lifecycleState DELETED).
func (h *Handlers) GetCompartment(c *gin.Context, id api.CompartmentIdPath, _ api.GetCompartmentParams) {
	comp, err := h.store.Compartments.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, comp, err, toCompartment)
}

// ListCompartments lists the children (or, with compartmentIdInSubtree, all descendants) of a compartment.
func (h *Handlers) ListCompartments(c *gin.Context, params api.ListCompartmentsParams) {
	if !h.compartmentExists(c, params.CompartmentId) {
		return
	}
	ctx := c.Request.Context()
	inSubtree := httpapi.Deref(params.CompartmentIdInSubtree)
	byName := params.SortBy != nil && *params.SortBy == api.ListCompartmentsParamsSortByName
	list, next, err := h.store.Compartments.List(ctx, tenancyOf(c), persistence.CompartmentFilter{
		ParentID:       params.CompartmentId,
		InSubtree:      inSubtree,
		Name:           httpapi.Deref(params.Name),
		LifecycleState: string(httpapi.Deref(params.LifecycleState)),
	}, page(params.Limit, params.Page, byName, params.SortOrder))
	respondList(c, list, next, err, func(comp persistence.Compartment) (api.Compartment, bool) {
		// In a subtree list, only the compartments the caller may inspect.
		return toCompartment(comp), !inSubtree || iam.CanInspect(ctx, policy.PermCompartmentInspect, *comp.ParentID)
	}, func(items []api.Compartment) any { return api.CompartmentCollection{Items: items} })
}

// UpdateCompartment changes name, description or tags.
func (h *Handlers) UpdateCompartment(c *gin.Context, id api.CompartmentIdPath, params api.UpdateCompartmentParams) {
	var body api.UpdateCompartmentDetails
	if !bind(c, &body) {
		return
	}
	patch := persistence.CompartmentPatch{Name: body.Name, Description: body.Description, FreeformTags: tagsOf(body.FreeformTags)}
	comp, err := h.store.Compartments.Update(c.Request.Context(), tenancyOf(c), id, compartmentUpdatable(httpapi.Deref(params.IfMatch), patch), patch)
	h.invalidateOnSuccess(c, err)
	respond(c, comp, err, toCompartment)
}

// DeleteCompartment deletes an empty compartment (409 IncorrectState when it still holds resources).
func (h *Handlers) DeleteCompartment(c *gin.Context, id api.CompartmentIdPath, params api.DeleteCompartmentParams) {
	err := h.store.Compartments.Delete(c.Request.Context(), tenancyOf(c), id, compartmentDeletable(httpapi.Deref(params.IfMatch)))
	h.invalidateOnSuccess(c, err)
	respondNoContent(c, err)
}
