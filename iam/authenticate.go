package iam

import (
	"context"
	"strings"
	"sync"

	"github.com/ferry-mq/ferry/fault"
)

// TenancyLookup reports whether a tenancy exists (a token for a tenancy that does not exist is rejected).
type TenancyLookup func(ctx context.Context, tenancyID string) (bool, error)

// Callers identifies the caller of each request from its Authorization header: a valid bearer token of a
// tenancy that exists.
type Callers struct {
	auth   *Authenticator
	exists TenancyLookup
	known  sync.Map // tenancies are never deleted, so a positive answer is kept
}

// NewCallers identifies callers with auth, accepting tokens of the tenancies that exists finds.
func NewCallers(auth *Authenticator, exists TenancyLookup) *Callers {
	return &Callers{auth: auth, exists: exists}
}

// Identify returns the caller that the request's "Authorization: Bearer <token>" header (all its values) names,
// or a NotAuthenticated fault. Two Authorization headers are refused even when the first is valid: a proxy or a
// handler that reads the other one would act for someone else.
func (c *Callers) Identify(ctx context.Context, authorization []string) (*Principal, error) {
	if len(authorization) > 1 {
		return nil, fault.NotAuthenticated("the request must carry one Authorization header, not %d", len(authorization))
	}
	var header string
	if len(authorization) == 1 {
		header = authorization[0]
	}
	token, ok := bearerToken(header)
	if !ok {
		return nil, fault.NotAuthenticated("the Authorization header must carry a Bearer token")
	}
	p, err := c.auth.Authenticate(ctx, token)
	if err != nil {
		return nil, fault.NotAuthenticated("invalid token: %v", err)
	}
	if _, ok := c.known.Load(p.TenancyID); !ok {
		found, err := c.exists(ctx, p.TenancyID)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fault.NotAuthenticated("invalid token: unknown tenancy")
		}
		c.known.Store(p.TenancyID, true)
	}
	return p, nil
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" header. The scheme is case-insensitive
// (RFC 7235 section 2.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
