// Package iam authenticates callers (JWT bearer tokens) and decides what they may do.
package iam

import "context"

// Principal is the authenticated caller of a request.
type Principal struct {
	Subject   string   // the token's sub claim
	TenancyID string   // the tenancy the token belongs to; every request is confined to it
	Groups    []string // the token's groups claim
}

type principalKey struct{}

// WithPrincipal returns a context that carries p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller that the authentication middleware put in ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
