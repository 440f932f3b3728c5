package controlplane

import (
	"errors"
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

func toPolicy(p persistence.Policy) api.Policy {
	return api.Policy{
		Id: p.ID, CompartmentId: p.CompartmentID, Name: p.Name, Description: p.Description, Statements: p.Statements,
		LifecycleState: api.LifecycleState(p.LifecycleState), FreeformTags: p.FreeformTags,
		TimeCreated: p.TimeCreated, TimeUpdated: p.TimeUpdated,
	}
}

// checkStatements parses the statements (an error names the statement index and column) and checks that they
// grant nothing outside compartmentID, the compartment the policy is attached to.
func (h *Handlers) checkStatements(c *gin.Context, compartmentID string, statements []string) error {
	parsed, err := policy.ParseStatements(statements)
	if err != nil {
		var perr *policy.Error
		if errors.As(err, &perr) {
			return fault.InvalidParameter("statements[%d]: column %d: %s", perr.Statement, perr.Column, perr.Message)
		}
		return fault.InvalidParameter("statements: %v", err)
	}
	if h.Access == nil {
		return nil
	}
	return h.Access.CheckScope(c.Request.Context(), tenancyOf(c), compartmentID, parsed)
}

// CreatePolicy creates a policy after parsing every statement.
func (h *Handlers) CreatePolicy(c *gin.Context, _ api.CreatePolicyParams) {
	var body api.CreatePolicyDetails
	if !bind(c, &body) {
		return
	}
	if err := h.checkStatements(c, body.CompartmentId, body.Statements); err != nil {
		apierror.Write(c, err)
		return
	}
	p, err := h.store.Policies.Create(c.Request.Context(), persistence.Policy{
		TenancyID: tenancyOf(c), ID: h.ocids.New(tenancy.TypePolicy), CompartmentID: body.CompartmentId, Name: body.Name,
		Description: httpapi.Deref(body.Description), Statements: body.Statements, FreeformTags: tagsOf(body.FreeformTags),
	})
	h.invalidateOnSuccess(c, err)
	respond(c, p, err, toPolicy)
}

// GetPolicy returns one policy.
func (h *Handlers) GetPolicy(c *gin.Context, id api.PolicyIdPath, _ api.GetPolicyParams) {
	p, err := h.store.Policies.Get(c.Request.Context(), tenancyOf(c), id)
	respond(c, p, err, toPolicy)
}

// ListPolicies lists a compartment's policies.
func (h *Handlers) ListPolicies(c *gin.Context, params api.ListPoliciesParams) {
	if !h.compartmentExists(c, params.CompartmentId) {
		return
	}
	byName := params.SortBy != nil && *params.SortBy == api.ListPoliciesParamsSortByName
	list, next, err := h.store.Policies.List(c.Request.Context(), tenancyOf(c), params.CompartmentId, httpapi.Deref(params.Name),
		string(httpapi.Deref(params.LifecycleState)), page(params.Limit, params.Page, byName, params.SortOrder))
	respondList(c, list, next, err, all(toPolicy), func(items []api.Policy) any { return api.PolicyCollection{Items: items} })
}

// UpdatePolicy changes a policy; new statements are parsed first.
func (h *Handlers) UpdatePolicy(c *gin.Context, id api.PolicyIdPath, params api.UpdatePolicyParams) {
	var body api.UpdatePolicyDetails
	if !bind(c, &body) {
		return
	}
	var statements []string
	if body.Statements != nil {
		statements = *body.Statements
		cur, err := h.store.Policies.Get(c.Request.Context(), tenancyOf(c), id)
		if err == nil {
			err = h.checkStatements(c, cur.CompartmentID, statements)
		}
		if err != nil {
			apierror.Write(c, err)
			return
		}
	}
	p, err := h.store.Policies.Update(c.Request.Context(), tenancyOf(c), id, policyChangeable(httpapi.Deref(params.IfMatch)), persistence.PolicyPatch{
		Name: body.Name, Description: body.Description, Statements: statements, FreeformTags: tagsOf(body.FreeformTags),
	})
	h.invalidateOnSuccess(c, err)
	respond(c, p, err, toPolicy)
}

// DeletePolicy deletes a policy.
func (h *Handlers) DeletePolicy(c *gin.Context, id api.PolicyIdPath, params api.DeletePolicyParams) {
	err := h.store.Policies.Delete(c.Request.Context(), tenancyOf(c), id, policyChangeable(httpapi.Deref(params.IfMatch)))
	h.invalidateOnSuccess(c, err)
	respondNoContent(c, err)
}

// Authorize is the policy simulator.
func (h *Handlers) Authorize(c *gin.Context, _ api.AuthorizeParams) {
	var body api.AuthorizeDetails
	if !bind(c, &body) {
		return
	}
	if h.Access == nil {
		apierror.Write(c, fault.Unavailable(1, "authorization is not configured"))
		return
	}
	d, err := h.Access.Simulate(c.Request.Context(), tenancyOf(c), body.Subject, httpapi.Deref(body.Groups), string(body.Permission), iam.Target{
		CompartmentID: httpapi.Deref(body.CompartmentId), QueueID: httpapi.Deref(body.QueueId), ConsumerGroupID: httpapi.Deref(body.ConsumerGroupId),
	})
	if err != nil {
		apierror.Write(c, err)
		return
	}
	out := api.AuthorizeResult{Allowed: d.Allowed}
	out.MatchedStatements = make([]struct {
		PolicyId  api.Ocid `json:"policyId"`
		Statement string   `json:"statement"`
	}, len(d.Matched))
	for i, m := range d.Matched {
		out.MatchedStatements[i].PolicyId, out.MatchedStatements[i].Statement = m.PolicyID, m.Statement
	}
	c.JSON(http.StatusOK, out)
}

// invalidate makes this node reload the tenancy's decisions at once (other nodes follow the NOTIFY).
func (h *Handlers) invalidate(tenancyID string) {
	if h.Access != nil {
		h.Access.Invalidate(tenancyID)
	}
}

// invalidateOnSuccess invalidates the caller's tenancy after a change that succeeded (err nil).
func (h *Handlers) invalidateOnSuccess(c *gin.Context, err error) {
	if err == nil {
		h.invalidate(tenancyOf(c))
	}
}
