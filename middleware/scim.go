package middleware

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/secret"
)

// TenantStore gives the token hashes of a SCIM tenant. An unknown tenant
// has none. *Tenants is the implementation; a service with tenants in a
// database writes its own.
type TenantStore interface {
	TenantTokens(tenant string) []secret.Hash
}

// Tenants is a TenantStore held in memory. Its whole content is swapped
// at once by Replace, so a configuration reload never shows a reader half
// of it. It is safe for concurrent use; the zero value has no tenants.
type Tenants struct {
	m atomic.Pointer[map[string][]secret.Hash]
}

// NewTenants returns a store holding tenants, each with one or more token
// hashes (several while a token is being rotated).
func NewTenants(tenants map[string][]secret.Hash) *Tenants {
	t := &Tenants{}
	t.Replace(tenants)
	return t
}

// Replace swaps the whole content of the store for tenants.
func (t *Tenants) Replace(tenants map[string][]secret.Hash) {
	cp := make(map[string][]secret.Hash, len(tenants))
	for k, v := range tenants {
		cp[k] = append([]secret.Hash(nil), v...)
	}
	t.m.Store(&cp)
}

// TenantTokens returns the token hashes of tenant.
func (t *Tenants) TenantTokens(tenant string) []secret.Hash {
	m := t.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[tenant]
}

// ErrSCIMToken is the reject hook's reason for every SCIM 401: a missing or
// malformed Authorization header, a wrong token and an unknown tenant are
// one case on purpose, so that tenants cannot be probed.
var ErrSCIMToken = errors.New("the authorization header is invalid or missing")

// DefaultSCIMRealm is SCIMAuth's realm when none is configured.
const DefaultSCIMRealm = "scim"

// WithTenant sets how SCIMAuth finds the tenant of a request. The default
// is the ServeMux path value "tenant", as in the pattern
// "/webapi/scim-api/v1/{tenant}/scim/Users".
func WithTenant(fn func(*http.Request) string) Option {
	return func(o *options) { o.tenant = fn }
}

// WithIdentityTokens makes SCIMAuth also accept an identity-service access
// token that v validates and that holds one of scopes. It is off by
// default: the contract keeps SCIM apart from the identity service.
func WithIdentityTokens(v TokenValidator, scopes ...string) Option {
	return func(o *options) {
		o.idTokens = v
		o.idTokenNeed = scopes
	}
}

// SCIMAuth returns middleware that admits a SCIM request whose bearer token
// matches one of its tenant's token hashes (CONTRACT.md §4). Every refusal
// is the same 401 SCIM error with a Bearer challenge and
// Content-Type: application/scim+json, whether the token was missing,
// malformed or wrong, or the tenant unknown; each does the same hashing
// work, so neither the answer nor its time tells them apart.
func SCIMAuth(tenants TenantStore, opts ...Option) func(http.Handler) http.Handler {
	o := newOptions(DefaultSCIMRealm, opts)
	if o.tenant == nil {
		o.tenant = func(r *http.Request) string { return r.PathValue("tenant") }
	}
	verifier := secret.NewVerifier(0, 0)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := bearer.Token(r)
			hashes := tenants.TenantTokens(o.tenant(r))
			if err != nil {
				hashes = nil // the same work as a wrong token
			}
			if verifier.Verify(hashes, tok) && err == nil {
				next.ServeHTTP(w, r)
				return
			}
			if err == nil && o.idTokens != nil && strings.Count(tok, ".") == 2 {
				// A validator's (nil, nil) is a refusal, never a pass.
				if claims, verr := o.idTokens.Validate(r.Context(), tok); verr == nil && claims != nil {
					if claims.Scopes.HasAny(o.idTokenNeed...) {
						next.ServeHTTP(w, withState(r, claims, o))
						return
					}
					o.reject(r, http.StatusForbidden, ErrInsufficientScope)
					scimerr.Write(w, scimerr.Forbidden("the token does not grant SCIM access"))
					return
				}
			}
			o.reject(r, http.StatusUnauthorized, ErrSCIMToken)
			w.Header().Set("WWW-Authenticate", oauthwire.Challenge(o.realm, oauthwire.Error{}))
			scimerr.Write(w, scimerr.Unauthorized("The authorization header is invalid or missing"))
		})
	}
}
