package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/secret"
)

// DefaultSCIMRealm is SCIMAuth's realm when none is configured.
const DefaultSCIMRealm = "scim"

// MaxSCIMTokenLength bounds a SCIM tenant token: a longer bearer value is
// refused (or, with SCIMConfig.IdentityTokens, only validated as an
// access token) without being hashed or remembered.
const MaxSCIMTokenLength = 1024

// SCIMConfig holds the settings of SCIMAuthWithConfig. The zero value is
// SCIMAuth's.
type SCIMConfig struct {
	// Realm is the realm of the WWW-Authenticate challenge. Empty means
	// DefaultSCIMRealm.
	Realm string

	// OnReject is called on every rejected request. Nil calls nothing.
	OnReject RejectFunc

	// Logger logs every rejection at Info level: method, path (without
	// the query), status and reason. Nil logs nothing.
	Logger *slog.Logger

	// Observer gets an observe.SCIMAuthenticated or observe.SCIMRefused
	// event for every request, naming the tenant only when it is
	// registered. Nil sends none.
	Observer observe.Observer

	// Tenant finds the tenant of a request. Nil means the ServeMux path
	// value "tenant", as in the pattern
	// "/webapi/scim-api/v1/{tenant}/scim/Users".
	Tenant func(*http.Request) string

	// IdentityTokens, when set, makes SCIMAuth also accept an identity-
	// service token it validates that holds one of IdentityTokenScopes.
	// Nil accepts tenant tokens only, as the contract says.
	IdentityTokens accesstoken.TokenValidator

	// IdentityTokenScopes are the scopes, one of which an identity-service
	// token needs. SCIMAuthWithConfig panics on these without
	// IdentityTokens, or IdentityTokens without these.
	IdentityTokenScopes []string

	// Limits bound failed authentications, a tenant for a subject (429
	// past a budget). The zero value takes the defaults: SCIMAuth always
	// limits. See docs/RESOURCE-SERVER.md, SCIM.
	Limits limit.Config

	// Store keeps the budgets: one shared by the replicas (redisstore's,
	// not the issuer's) keeps one budget. Nil means a limit.Memory of
	// Limits.MemoryBytes of SCIMAuth's own.
	Store limit.Store

	// Verifier checks tokens against their hashes (secret.Verifier); share
	// one with other SCIMAuths and the issuer to bound their bcrypt work
	// together. Nil means one of SCIMAuth's own, with the defaults.
	Verifier *secret.Verifier
}

// scimGuard is SCIMAuth's failure limiter, verifier and address reader.
type scimGuard struct {
	tenant   func(*http.Request) string
	limiter  limit.Store
	budget   limit.Budget
	verifier *secret.Verifier
	addrs    clientip.Resolver
}

func newSCIMGuard(cfg SCIMConfig, tenants TenantStore, tenantOf func(*http.Request) string) *scimGuard {
	l := cfg.Limits
	for _, p := range l.NAT64Prefixes {
		if err := clientip.CheckNAT64(p); err != nil {
			panic("middleware: SCIMConfig.Limits.NAT64Prefixes: " + err.Error())
		}
	}
	if err := clientip.CheckHeader(l.TrustedProxyHeader); err != nil {
		panic("middleware: SCIMConfig.Limits.TrustedProxyHeader: " + err.Error())
	}
	g := &scimGuard{
		tenant:   tenantOf,
		limiter:  cfg.Store,
		budget:   l.Budget(),
		verifier: cfg.Verifier,
		addrs:    clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: l.TrustedProxies, NAT64: l.NAT64Prefixes},
	}
	if g.limiter == nil {
		g.limiter = &limit.Memory{MaxBytes: max(0, l.MemoryBytes)}
	}
	if g.verifier == nil {
		g.verifier = secret.NewVerifier(secret.VerifierConfig{})
	}
	if t, ok := tenants.(*Tenants); ok {
		t.attach(g.verifier)
	}
	return g
}

// SCIMAuth returns middleware that admits a SCIM request whose bearer token
// matches one of its tenant's token hashes (CONTRACT.md §4). Every refusal
// is the same 401 SCIM error with a Bearer challenge and
// Content-Type: application/scim+json, whether the token was missing,
// malformed or wrong, or the tenant unknown; a wrong token and an unknown
// tenant do the same work and take the same time (see secret.Verifier).
// Failed attempts are limited (see SCIMConfig.Limits): past a budget the answer
// is a 429 SCIM error with Retry-After. The realm is DefaultSCIMRealm,
// the tenant is the path value "tenant" and nothing is logged; see
// SCIMAuthWithConfig for the settings.
func SCIMAuth(tenants TenantStore) func(http.Handler) http.Handler {
	return SCIMAuthWithConfig(tenants, SCIMConfig{})
}

// SCIMAuthWithConfig is SCIMAuth with the settings of cfg.
func SCIMAuthWithConfig(tenants TenantStore, cfg SCIMConfig) func(http.Handler) http.Handler {
	o := newResponder(cfg.Realm, DefaultSCIMRealm, observe.SCIMRefused, cfg.Observer, cfg.OnReject, cfg.Logger)
	tenantOf := cfg.Tenant
	if tenantOf == nil {
		tenantOf = func(r *http.Request) string { return r.PathValue("tenant") }
	}
	idTokens := cfg.IdentityTokens
	idScopes := append([]string(nil), cfg.IdentityTokenScopes...)
	switch {
	case idTokens != nil:
		checkScopes("SCIMAuthWithConfig: IdentityTokenScopes", idScopes)
	case len(idScopes) > 0:
		panic("middleware: SCIMAuthWithConfig: IdentityTokenScopes without IdentityTokens")
	}
	g := newSCIMGuard(cfg, tenants, tenantOf)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := bearer.Token(r)
			if err == nil && idTokens != nil && strings.Count(tok, ".") == 2 {
				if claims, verr := accesstoken.Decide(r.Context(), idTokens, tok, accesstoken.Presentation{}); verr == nil {
					if claims.Scopes.HasAny(idScopes...) {
						send(r.Context(), o.obs, observe.Event{Kind: observe.SCIMAuthenticated, Tenant: o.registered(tenants, tenantOf(r))})
						next.ServeHTTP(w, withClaims(r, claims, o))
						return
					}
					o.rejectWith(r, errInsufficientScope, observe.Event{Status: http.StatusForbidden, Tenant: o.registered(tenants, tenantOf(r))})
					scimerr.Write(w, scimerr.Forbidden("the token does not grant SCIM access"))
					return
				}
			}
			var known string // the tenant, if its hashes were checked and it has some
			if err == nil && len(tok) <= MaxSCIMTokenLength {
				var res checkResult
				switch res, known = g.check(w, r, o, tenants, tok); res {
				case checkPassed:
					send(r.Context(), o.obs, observe.Event{Kind: observe.SCIMAuthenticated, Tenant: known})
					next.ServeHTTP(w, r)
					return
				case checkAnswered:
					return
				}
			}
			o.rejectWith(r, errSCIMToken, observe.Event{Status: http.StatusUnauthorized, Tenant: known})
			w.Header().Set("WWW-Authenticate", oauthwire.Challenge(o.realm, oauthwire.Error{}))
			scimerr.Write(w, scimerr.Unauthorized("The authorization header is invalid or missing"))
		})
	}
}

type checkResult int

const (
	checkFailed   checkResult = iota // answer 401
	checkPassed                      // serve the request
	checkAnswered                    // an answer was written
)

// check verifies tok against the tenant's hashes under the failure limits.
// It also returns the tenant if it is registered (has hashes), or "".
func (g *scimGuard) check(w http.ResponseWriter, r *http.Request, o *responder, tenants TenantStore, tok string) (checkResult, string) {
	tenant := g.tenant(r)
	res, err := g.limiter.Reserve(r.Context(), limit.Request{Subject: tenant, Address: g.addrs.Addr(r), Budget: g.budget, Now: time.Now()})
	if err != nil {
		var no *limit.Refusal
		if errors.As(err, &no) {
			o.rejectWith(r, errSCIMTooManyFailures, observe.Event{Status: http.StatusTooManyRequests, Tenant: o.registered(tenants, tenant), Limit: scimLimit(no.Limit)})
			w.Header().Set("Retry-After", strconv.Itoa(no.RetryAfterSeconds()))
			scimerr.Write(w, scimerr.New(http.StatusTooManyRequests, "Too many failed attempts; try again later"))
			return checkAnswered, ""
		}
		o.reject(r, http.StatusServiceUnavailable, err)
		w.Header().Set("Retry-After", "1") // limit.ErrUnavailable
		scimerr.Write(w, scimerr.New(http.StatusServiceUnavailable, "Failed attempts cannot be checked now; try again shortly"))
		return checkAnswered, ""
	}
	hashes := tenants.TenantTokens(tenant)
	if len(hashes) == 0 {
		tenant = ""
	}
	if g.verifier.Verify(r.Context(), hashes, tok) {
		res.Succeeded()
		return checkPassed, tenant
	}
	res.Failed()
	return checkFailed, tenant
}
