package mcpauth

import (
	"context"
	"hash/maphash"
	"net/http"
	"sync/atomic"
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
//
// The TokenInfo of a token seen again is the one made before, shared
// between its requests, as its claims are: treat both as read-only.
func (g *Guard) GoSDK(next http.Handler) http.Handler {
	infos := &tokenInfos{seed: maphash.MakeSeed()}
	inner := auth.RequireBearerToken(infos.decided, &auth.RequireBearerTokenOptions{
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

// infoSlots bounds the TokenInfos remembered: a few hundred KiB.
const infoSlots = 1024

// tokenInfos remembers the TokenInfo made of recent claims, so that a
// token seen again, whose claims the validator's cache returns (the same
// *Claims), costs no new TokenInfo: a slot per hash of the token, each
// holding the claims it was made of; a slot another token takes is
// simply made again.
type tokenInfos struct {
	seed  maphash.Seed
	slots [infoSlots]atomic.Pointer[tokenInfoEntry]
}

type tokenInfoEntry struct {
	claims *accesstoken.Claims
	info   *auth.TokenInfo
}

// decided is go-sdk's TokenVerifier of a request the Guard admitted:
// its claims, from the request's context. Without them (the handler
// mounted without the Guard in front) it refuses.
func (t *tokenInfos) decided(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	slot := &t.slots[maphash.String(t.seed, token)%infoSlots]
	if e := slot.Load(); e != nil && e.claims == c {
		return e.info, nil
	}
	user := c.ClientID
	if user == "" {
		user = c.Subject
	}
	info := &auth.TokenInfo{
		Scopes:     c.Scopes, // shared, as the claims are: read-only
		Expiration: c.ExpiresAt,
		UserID:     user,
		Extra:      map[string]any{claimsKey: c},
	}
	slot.Store(&tokenInfoEntry{claims: c, info: info})
	return info, nil
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
