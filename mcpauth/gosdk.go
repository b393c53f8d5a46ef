package mcpauth

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/idsauth/idsauth/accesstoken"
)

// GoSDK returns next, the HTTP handler of a github.com/modelcontextprotocol/go-sdk
// server (mcp.NewStreamableHTTPHandler), protected as Handler protects
// one, with go-sdk's own auth.RequireBearerToken inside: only it sets
// the auth.TokenInfo that go-sdk's session check (a session's calls
// come from the user who opened it) and a tool's req.Extra.TokenInfo
// read. Its verifier decides nothing: it returns the claims the Guard
// has accepted (UserID the client ID, or the subject without one;
// Scopes; Expiration; the claims themselves, for Claims). A request
// whose DPoP proof the Guard verified reaches it as Bearer.
func (g *Guard) GoSDK(next http.Handler) http.Handler {
	inner := auth.RequireBearerToken(decided, &auth.RequireBearerTokenOptions{
		AllowMissingExpiration: true, // a reference token's introspection may give none
		ClockSkew:              decidedSkew,
	})(next)
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); len(h) > 5 && (h[:5] == "DPoP " || h[:5] == "dpop ") {
			r2 := *r
			r2.Header = r.Header.Clone()
			r2.Header.Set("Authorization", "Bearer "+h[5:])
			r = &r2
		}
		inner.ServeHTTP(w, r)
	}))
}

// decidedSkew makes go-sdk's expiry check a formality: accesstoken has
// decided the expiry, with its leeway, and a second check without it
// would refuse, in plain text, a token the contract admits.
const decidedSkew = 100 * 365 * 24 * time.Hour

// claimsKey is the key of the claims in a TokenInfo's Extra.
const claimsKey = "idsauth.claims"

// decided is go-sdk's TokenVerifier of a request the Guard admitted:
// its claims, from the request's context. Without them (the handler
// mounted without the Guard in front) it refuses.
func decided(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	user := c.ClientID
	if user == "" {
		user = c.Subject
	}
	return &auth.TokenInfo{
		Scopes:     c.Scopes, // shared, as the claims are: read-only
		Expiration: c.ExpiresAt,
		UserID:     user,
		Extra:      map[string]any{claimsKey: c},
	}, nil
}

// Claims returns the claims of the token of a go-sdk request the Guard
// admitted: Claims(req.Extra.TokenInfo) in a tool's handler.
func Claims(ti *auth.TokenInfo) (*accesstoken.Claims, bool) {
	if ti == nil {
		return nil, false
	}
	c, ok := ti.Extra[claimsKey].(*accesstoken.Claims)
	return c, ok
}
