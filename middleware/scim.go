package middleware

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/limiter"
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
//
// SCIMAuth primes its Verifier with a Tenants' hashes (see
// secret.Verifier.Prime), at start and on every Replace, so that the
// failure floor covers the costliest tenant from the first request.
type Tenants struct {
	m atomic.Pointer[map[string][]secret.Hash]

	mu        sync.Mutex // serializes Replace and attach
	verifiers []*secret.Verifier
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
	subjects := make([][]secret.Hash, 0, len(tenants))
	for k, v := range tenants {
		cp[k] = append([]secret.Hash(nil), v...)
		subjects = append(subjects, cp[k])
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, v := range t.verifiers {
		v.Prime(subjects...)
	}
	t.m.Store(&cp)
}

// attach primes v with the tenants' hashes now and on every Replace.
func (t *Tenants) attach(v *secret.Verifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.m.Load(); m != nil {
		for _, hashes := range *m {
			v.Prime(hashes)
		}
	}
	t.verifiers = append(t.verifiers, v)
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

// ErrSCIMTooManyFailures is the reject hook's reason for a SCIM 429: the
// address failed too often.
var ErrSCIMTooManyFailures = errors.New("too many failed attempts")

// DefaultSCIMRealm is SCIMAuth's realm when none is configured.
const DefaultSCIMRealm = "scim"

// MaxSCIMTokenLength bounds a SCIM tenant token: a longer bearer value is
// refused (or, with WithIdentityTokens, only validated as an access
// token) without being hashed or remembered.
const MaxSCIMTokenLength = 1024

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

// SCIMLimits bound failed SCIM authentications, as issuer.Limits bound
// the token endpoint's, with a tenant in place of a client. Zero values
// take the defaults; SCIMAuth always limits.
//
// A token reserves one failure from the budgets of its address and its
// tenant before it is checked; the right token gives it back. An address
// is answered 429 once it has failed FailedAttemptsPerAddress times in the
// window, or once it has failed for a tenant whose FailedAttemptsPerTenant
// are spent. Someone else's guesses never lock the tenant's provisioning
// client out of an address that gave the right token within 24 hours, nor,
// while the limiter has room, out of one that has not failed. An attacker
// with N addresses (IPv4 addresses or IPv6 /64s) can check at most
// FailedAttemptsPerTenant tokens per tenant per window plus one per
// address the limiter can remember, and N × FailedAttemptsPerAddress in
// all.
type SCIMLimits struct {
	// FailedAttemptsPerTenant: failures per tenant per window, from all
	// addresses together. Zero means 10.
	FailedAttemptsPerTenant int
	// FailedAttemptsPerAddress: failures per address per window, for any
	// tenants. Zero means 100.
	FailedAttemptsPerAddress int
	// FailureWindow over which the budgets refill evenly. Zero means one
	// minute.
	FailureWindow time.Duration
	// LimiterMaxBytes is the limiter's memory, allocated once: 16 bytes
	// per remembered tenant, address or pair. Zero means 1 MiB.
	LimiterMaxBytes int
	// Verifier checks tokens against their hashes: equal work for an
	// unknown tenant and a wrong token, a failure floor, and a bound on
	// concurrent bcrypt checks (see secret.Verifier). Nil means one of
	// SCIMAuth's own with the default settings. A *Tenants store primes
	// it with its hashes at start and on Replace; with a TenantStore of
	// your own it learns each bcrypt cost the first time it sees one
	// (call Prime at start to cover that first time too). Give several
	// SCIMAuth middlewares one Verifier to bound their bcrypt work
	// together.
	Verifier *secret.Verifier
	// TrustedProxyHeader and TrustedProxies say where the client address
	// is read, as in issuer.Limits: empty means RemoteAddr. Addresses are
	// keyed without their port, and IPv6 by its /64. SCIMAuth panics on
	// "Forwarded" (RFC 7239), whose form it does not read.
	TrustedProxyHeader string
	TrustedProxies     []netip.Prefix
}

// WithSCIMLimits sets SCIMAuth's failure limits.
func WithSCIMLimits(l SCIMLimits) Option {
	return func(o *options) { o.scimLimits = l }
}

// scimGuard is SCIMAuth's failure limiter, verifier and address reader.
type scimGuard struct {
	limiter  *limiter.Limiter
	verifier *secret.Verifier
	addrs    clientip.Resolver
}

func newSCIMGuard(l SCIMLimits, tenants TenantStore) *scimGuard {
	if err := clientip.CheckHeader(l.TrustedProxyHeader); err != nil {
		panic("middleware: SCIMLimits.TrustedProxyHeader: " + err.Error())
	}
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	window := l.FailureWindow
	if window <= 0 {
		window = time.Minute
	}
	g := &scimGuard{
		limiter: limiter.New(limiter.Config{
			PerSubject: def(l.FailedAttemptsPerTenant, 10),
			PerAddress: def(l.FailedAttemptsPerAddress, 100),
			Window:     window,
			MaxBytes:   def(l.LimiterMaxBytes, 1<<20),
		}),
		verifier: l.Verifier,
		addrs:    clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: l.TrustedProxies},
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
// Failed attempts are limited (see SCIMLimits): past a budget the answer
// is a 429 SCIM error with Retry-After.
func SCIMAuth(tenants TenantStore, opts ...Option) func(http.Handler) http.Handler {
	o := newOptions(DefaultSCIMRealm, opts)
	if o.tenant == nil {
		o.tenant = func(r *http.Request) string { return r.PathValue("tenant") }
	}
	g := newSCIMGuard(o.scimLimits, tenants)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := bearer.Token(r)
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
			if err == nil && len(tok) <= MaxSCIMTokenLength {
				switch g.check(w, r, o, tenants, tok) {
				case checkPassed:
					next.ServeHTTP(w, r)
					return
				case checkAnswered:
					return
				}
			}
			o.reject(r, http.StatusUnauthorized, ErrSCIMToken)
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
func (g *scimGuard) check(w http.ResponseWriter, r *http.Request, o *options, tenants TenantStore, tok string) checkResult {
	tenant := o.tenant(r)
	res, no := g.limiter.Reserve(tenant, g.addrs.Addr(r), time.Now())
	if res == nil {
		o.reject(r, http.StatusTooManyRequests, ErrSCIMTooManyFailures)
		w.Header().Set("Retry-After", strconv.Itoa(no.RetryAfterSeconds()))
		scimerr.Write(w, scimerr.New(http.StatusTooManyRequests, "Too many failed attempts; try again later"))
		return checkAnswered
	}
	if g.verifier.Verify(r.Context(), tenants.TenantTokens(tenant), tok) {
		res.Succeeded()
		return checkPassed
	}
	res.Failed()
	return checkFailed
}
