// Package controlplane serves the control plane of DESIGN sections 3–4: compartments, queues and work requests.
// Handlers are thin: bind the validated request, call the store, convert to the API shape, write.
package controlplane

import (
	"cmp"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/iam"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
	"github.com/ferry-mq/ferry/services/apierror"
	"github.com/ferry-mq/ferry/services/httpapi"
	"github.com/ferry-mq/ferry/tenancy"
)

// Handlers implements the control-plane operations of api.ServerInterface.
type Handlers struct {
	// Access decides requests (the policy simulator uses it; nil without IAM).
	Access *iam.Access

	store     *persistence.Store
	ocids     tenancy.OCIDs
	publicURL string
	wake      func() // nudges the work request executor after a work request is created
	// configChanged drops this node's cached settings and consumer groups of a queue (see OnQueueConfigChanged).
	configChanged func(queueID string)
}

// New builds the control-plane handlers. publicURL is the data plane's base URL (a queue's messagesEndpoint).
func New(store *persistence.Store, ocids tenancy.OCIDs, publicURL string, wakeWorkers func()) *Handlers {
	if wakeWorkers == nil {
		wakeWorkers = func() {}
	}
	return &Handlers{store: store, ocids: ocids, publicURL: publicURL, wake: wakeWorkers}
}

// tenancyOf is the caller's tenancy: every query is confined to it.
func tenancyOf(c *gin.Context) string {
	if p := iam.PrincipalFrom(c.Request.Context()); p != nil {
		return p.TenancyID
	}
	return ""
}

// bind decodes the (already validated) JSON body; a body that still fails to decode is a 400.
func bind(c *gin.Context, dst any) bool {
	if err := c.ShouldBindJSON(dst); err != nil {
		apierror.Write(c, fault.InvalidParameter("body: %v", err))
		return false
	}
	return true
}

func page(limit *int, token *string, byName bool, order *api.SortOrder) persistence.Page {
	p := persistence.Page{Limit: cmp.Or(httpapi.Deref(limit), persistence.ListLimitDefault), SortByName: byName, Token: httpapi.Deref(token)}
	// OCI defaults: newest first by time, alphabetical by name.
	p.Descending = !byName
	if order != nil {
		p.Descending = *order == api.SortOrderDESC
	}
	return p
}

// respond answers 200 with the resource r in its API shape and its etag, or the error.
func respond[R interface{ Etag() string }, B any](c *gin.Context, r R, err error, toAPI func(R) B) {
	if err != nil {
		apierror.Write(c, err)
		return
	}
	c.Header("etag", r.Etag())
	c.JSON(http.StatusOK, toAPI(r))
}

// respondList answers one page of a list (the items that toAPI keeps, in their API shape, wrapped into the
// collection) with its opc-next-page token, or the error.
func respondList[R, B any](c *gin.Context, list []R, next string, err error, toAPI func(R) (B, bool), collection func([]B) any) {
	if err != nil {
		apierror.Write(c, err)
		return
	}
	items := make([]B, 0, len(list))
	for _, r := range list {
		if item, keep := toAPI(r); keep {
			items = append(items, item)
		}
	}
	if next != "" {
		c.Header("opc-next-page", next)
	}
	c.JSON(http.StatusOK, collection(items))
}

// all keeps every item of a list.
func all[R, B any](toAPI func(R) B) func(R) (B, bool) {
	return func(r R) (B, bool) { return toAPI(r), true }
}

// respondNoContent answers 204, or the error.
func respondNoContent(c *gin.Context, err error) {
	if err != nil {
		apierror.Write(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// compartmentExists answers 404 (and reports false) unless compartmentID is a compartment of the caller's
// tenancy: a list of an unknown compartment is an error, not an empty page.
func (h *Handlers) compartmentExists(c *gin.Context, compartmentID string) bool {
	if _, err := h.store.Compartments.Get(c.Request.Context(), tenancyOf(c), compartmentID); err != nil {
		apierror.Write(c, err)
		return false
	}
	return true
}

func ptrIfSet(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

func tagsOf(p *api.FreeformTags) map[string]string {
	if p == nil {
		return nil
	}
	if *p == nil {
		return map[string]string{}
	}
	return *p
}
