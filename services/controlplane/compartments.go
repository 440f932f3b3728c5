package controlplane

import (
	"context"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/iam/policy"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

// Compartments are served twice: here under /20210201 in ferry's shapes, and in identity.go under /20160918 in
// OCI Identity's. Both bind their own shapes and call the shared steps below (createCompartment, listCompartments,
// updateCompartment, deleteCompartment), so that the two APIs cannot drift apart in what they do.

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
	comp, err := h.createCompartment(c, body.CompartmentId, body.Name, httpapi.Deref(body.Description), body.FreeformTags)
	respond(c, comp, err, toCompartment)
}

// GetCompartment returns one compartment (a deleted one answers with lifecycleState DELETED).
func (h *Handlers) GetCompartment(c *gin.Context, id api.CompartmentIdPath, _ api.GetCompartmentParams) {
	comp, err := h.store.Compartments.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, comp, err, toCompartment)
}

// ListCompartments lists the children (or, with compartmentIdInSubtree, all descendants) of a compartment.
func (h *Handlers) ListCompartments(c *gin.Context, params api.ListCompartmentsParams) {
	byName := params.SortBy != nil && *params.SortBy == api.ListCompartmentsParamsSortByName
	list, next, err, ok := h.listCompartments(c, persistence.CompartmentFilter{
		ParentID:       params.CompartmentId,
		InSubtree:      httpapi.Deref(params.CompartmentIdInSubtree),
		Name:           httpapi.Deref(params.Name),
		LifecycleState: string(httpapi.Deref(params.LifecycleState)),
	}, page(params.Limit, params.Page, byName, params.SortOrder))
	if ok {
		respondList(c, list, next, err, all(toCompartment), func(items []api.Compartment) any { return api.CompartmentCollection{Items: items} })
	}
}

// UpdateCompartment changes name, description or tags.
func (h *Handlers) UpdateCompartment(c *gin.Context, id api.CompartmentIdPath, params api.UpdateCompartmentParams) {
	var body api.UpdateCompartmentDetails
	if !bind(c, &body) {
		return
	}
	patch := persistence.CompartmentPatch{Name: body.Name, Description: body.Description, FreeformTags: tagsOf(body.FreeformTags)}
	comp, err := h.updateCompartment(c, id, httpapi.Deref(params.IfMatch), patch)
	respond(c, comp, err, toCompartment)
}

// DeleteCompartment deletes an empty compartment (409 IncorrectState when it still holds resources).
func (h *Handlers) DeleteCompartment(c *gin.Context, id api.CompartmentIdPath, params api.DeleteCompartmentParams) {
	respondNoContent(c, h.deleteCompartment(c, id, httpapi.Deref(params.IfMatch)))
}

// createCompartment stores a new compartment under parentID.
func (h *Handlers) createCompartment(c *gin.Context, parentID, name, description string, tags *api.FreeformTags) (persistence.Compartment, error) {
	comp, err := h.store.Compartments.Create(c.Request.Context(), persistence.Compartment{
		TenancyID:    tenancyOf(c),
		ID:           h.ocids.New(tenancy.TypeCompartment),
		ParentID:     &parentID,
		Name:         name,
		Description:  description,
		FreeformTags: tagsOf(tags),
	})
	h.invalidateOnSuccess(c, err)
	return comp, err
}

// listCompartments reads one page of f. It answers 404 itself, and reports ok=false, when f's compartment is not
// one of the caller's tenancy: a list of an unknown compartment is an error, not an empty page. A subtree list
// keeps only the compartments the caller may see (those whose parent it may inspect); the page may then hold
// fewer than its limit.
func (h *Handlers) listCompartments(c *gin.Context, f persistence.CompartmentFilter, p persistence.Page) (list []persistence.Compartment, next string, err error, ok bool) {
	if !h.compartmentExists(c, f.ParentID) {
		return nil, "", nil, false
	}
	ctx := c.Request.Context()
	list, next, err = h.store.Compartments.List(ctx, tenancyOf(c), f, p)
	if err == nil && f.InSubtree {
		list = slices.DeleteFunc(list, func(comp persistence.Compartment) bool { return !canInspectCompartment(ctx, *comp.ParentID) })
	}
	return list, next, err, true
}

// updateCompartment applies patch to a compartment that compartmentUpdatable accepts.
func (h *Handlers) updateCompartment(c *gin.Context, id, ifMatch string, patch persistence.CompartmentPatch) (persistence.Compartment, error) {
	comp, err := h.store.Compartments.Update(c.Request.Context(), tenancyOf(c), id, compartmentUpdatable(ifMatch, patch), patch)
	h.invalidateOnSuccess(c, err)
	return comp, err
}

// deleteCompartment marks an empty compartment that compartmentDeletable accepts DELETED.
func (h *Handlers) deleteCompartment(c *gin.Context, id, ifMatch string) error {
	err := h.store.Compartments.Delete(c.Request.Context(), tenancyOf(c), id, compartmentDeletable(ifMatch))
	h.invalidateOnSuccess(c, err)
	return err
}

// canInspectCompartment reports whether the caller may inspect compartments in compartmentID.
func canInspectCompartment(ctx context.Context, compartmentID string) bool {
	return iam.CanInspect(ctx, policy.PermCompartmentInspect, compartmentID)
}
