package mcpauth

import (
	"context"
	"hash/maphash"
	"net/http"
	"strconv"
	"strings"
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
// Scopes; Expiration; the claims themselves, for Claims).
//
// The request go-sdk gets carries, in place of the token, "Bearer" and
// a reference to the claims the Guard accepted (a DPoP request too,
// whose proof the Guard has checked): go-sdk's handlers and the tools
// never see the caller's token, which the MCP specification forbids a
// server to pass on, and go-sdk does not scan it again. The TokenInfo
// of a token seen again is the one made before, shared between its
// requests, as its claims are: treat both as read-only.
func (g *Guard) GoSDK(next http.Handler) http.Handler {
	infos := &tokenInfos{seed: maphash.MakeSeed()}
	inner := auth.RequireBearerToken(infos.decided, &auth.RequireBearerTokenOptions{
		AllowMissingExpiration: true, // a reference token's introspection may give none
		ClockSkew:              decidedSkew,
	})(next)
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := accesstoken.ClaimsFrom(r.Context())
		if !ok {
			http.Error(w, "mcpauth: no claims", http.StatusInternalServerError) // not reached behind the Guard
			return
		}
		// The Guard admitted one Authorization value, its scheme, one or
		// more spaces, and the token (net/http keys it canonically).
		var tok string
		if v := r.Header["Authorization"]; len(v) == 1 {
			_, tok, _ = strings.Cut(v[0], " ")
		}
		e := infos.entry(strings.TrimLeft(tok, " "), c)
		h := make(http.Header, len(r.Header))
		for k, v := range r.Header {
			h[k] = v
		}
		h["Authorization"] = e.authz
		r2 := *r
		r2.Header = h
		inner.ServeHTTP(w, &r2)
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

// tokenInfoEntry is a slot's: the claims, their TokenInfo, and the
// Authorization value go-sdk gets, which names the slot.
type tokenInfoEntry struct {
	claims *accesstoken.Claims
	info   *auth.TokenInfo
	authz  []string
}

// slotPrefix begins the stand-in token go-sdk gets: the slot follows.
const slotPrefix = "idsauth-"

// entry returns the entry of token's slot for claims c, made anew when
// the slot holds another's.
func (t *tokenInfos) entry(token string, c *accesstoken.Claims) *tokenInfoEntry {
	i := maphash.String(t.seed, token) % infoSlots
	if e := t.slots[i].Load(); e != nil && e.claims == c {
		return e
	}
	e := newEntry(c, []string{"Bearer " + slotPrefix + strconv.FormatUint(i, 10)})
	t.slots[i].Store(e)
	return e
}

func newEntry(c *accesstoken.Claims, authz []string) *tokenInfoEntry {
	user := c.ClientID
	if user == "" {
		user = c.Subject
	}
	return &tokenInfoEntry{claims: c, authz: authz, info: &auth.TokenInfo{
		Scopes:     c.Scopes, // shared, as the claims are: read-only
		Expiration: c.ExpiresAt,
		UserID:     user,
		Extra:      map[string]any{claimsKey: c},
	}}
}

// decided is go-sdk's TokenVerifier of a request the Guard admitted: the
// TokenInfo of its claims, from the request's context, which the slot
// its stand-in token names holds unless another token took it since.
// Without claims (the handler mounted without the Guard) it refuses.
func (t *tokenInfos) decided(ctx context.Context, standIn string, _ *http.Request) (*auth.TokenInfo, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	if s, ok := strings.CutPrefix(standIn, slotPrefix); ok {
		if i, err := strconv.ParseUint(s, 10, 32); err == nil && i < infoSlots {
			if e := t.slots[i].Load(); e != nil && e.claims == c {
				return e.info, nil
			}
		}
	}
	return newEntry(c, nil).info, nil
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
