package middleware

import (
	"context"
	"net/http"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/oauthwire"
)

type responderKey struct{}

// withClaims returns r with the claims of the token RequireBearer (or
// SCIMAuth, for an identity-service token) admitted, for
// accesstoken.ClaimsFrom, and o, the responder of the RequireScope after
// it.
func withClaims(r *http.Request, c *accesstoken.Claims, o *responder) *http.Request {
	ctx := accesstoken.ContextWithClaims(r.Context(), c)
	return r.WithContext(context.WithValue(ctx, responderKey{}, o))
}

// defaultResponder answers for claims put in a context by
// accesstoken.ContextWithClaims.
var defaultResponder = &responder{realm: oauthwire.Realm, scheme: "Bearer"}

// claimsFrom returns the claims in ctx, if any, and the responder that
// answers for them.
func claimsFrom(ctx context.Context) (*accesstoken.Claims, *responder, bool) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return nil, nil, false
	}
	o, ok := ctx.Value(responderKey{}).(*responder)
	if !ok {
		o = defaultResponder
	}
	return c, o, true
}
