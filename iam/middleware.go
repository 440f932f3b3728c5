package iam

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ferry-mq/ferry/services/apierror"
)

// TenancyLookup reports whether a tenancy exists (a token for a tenancy that does not exist is rejected).
type TenancyLookup func(ctx context.Context, tenancyID string) (bool, error)

// Middleware authenticates every request except the public paths and puts the Principal in the request context.
func (a *Authenticator) Middleware(exists TenancyLookup, public func(path string) bool) gin.HandlerFunc {
	known := &sync.Map{} // tenancies are never deleted, so a positive answer can be kept
	return func(c *gin.Context) {
		if c.FullPath() == "" || public(c.Request.URL.Path) { // unknown routes answer 404 without a token
			c.Next()
			return
		}
		token, ok := bearerToken(c.GetHeader("Authorization"))
		if !ok {
			apierror.Write(c, apierror.NotAuthenticated("the Authorization header must carry a Bearer token"))
			return
		}
		p, err := a.Authenticate(c.Request.Context(), token)
		if err != nil {
			apierror.Write(c, apierror.NotAuthenticated("invalid token: %v", err))
			return
		}
		if _, ok := known.Load(p.TenancyID); !ok {
			found, err := exists(c.Request.Context(), p.TenancyID)
			if err != nil {
				apierror.Write(c, err)
				return
			}
			if !found {
				apierror.Write(c, apierror.NotAuthenticated("invalid token: unknown tenancy"))
				return
			}
			known.Store(p.TenancyID, time.Now())
		}
		c.Request = c.Request.WithContext(WithPrincipal(c.Request.Context(), p))
		c.Next()
	}
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
