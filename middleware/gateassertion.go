package middleware

import (
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/assertion"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/internal/reason"
	"github.com/idsauth/idsauth/observe"
)

// GateAssertionConfig configures RequireGateAssertion. Issuer, Audience
// and Keys are required.
type GateAssertionConfig struct {
	// Issuer is the gate's "iss", as its configuration's assertion.issuer
	// says, such as "https://gate.example.com".
	Issuer string
	// Audience is this upstream's route as the gate names it in "aud":
	// the route's "name" in the gate's configuration.
	Audience string
	// Keys are the gate's public keys: accesstoken.NewJWKS of the gate's
	// /.well-known/jwks.json, or accesstoken.ParseJWKS of its content.
	Keys accesstoken.KeySource
	// Header is where the gate's proxy puts the assertion. Empty means
	// "X-Idsauth-Assertion".
	Header string
	// Leeway is the clock skew allowed on exp and iat. Zero means 5
	// seconds; a negative value means none.
	Leeway time.Duration
	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time
	// OnReject, Logger and Observer are told of every refusal, as
	// BearerConfig's are. Nil tells none.
	OnReject RejectFunc
	Logger   *slog.Logger
	Observer observe.Observer
}

// errGateAssertion: a request without a valid assertion of the gate's
// (code gate_assertion).
var errGateAssertion = reason.New("gate_assertion", "the gate's assertion is missing or invalid")

// RequireGateAssertion returns middleware that admits a request only with
// a valid assertion of the idsauth gate in front of the service (see
// docs/GATEWAY.md): a JWT in cfg.Header whose typ is the gate's own
// ("idsauth-gate+jwt", never an access token's), signed by one of
// cfg.Keys, with iss cfg.Issuer, aud cfg.Audience, and a lifetime of a
// minute at most, not expired. The assertion's claims (the token's sub,
// client_id and scope) go in the request context as a token's would
// (accesstoken.ClaimsFrom), so that a RequireScope after it checks them.
// Any other request, one that reached the service around the gate, gets
// 403 with a plain body and Cache-Control: no-store: an access token,
// even a valid one, is no assertion. It panics without Issuer, Audience
// or Keys.
//
//	h = middleware.RequireGateAssertion(middleware.GateAssertionConfig{Issuer: "https://gate.example.com", Audience: "orders", Keys: gateKeys})(h)
func RequireGateAssertion(cfg GateAssertionConfig) func(http.Handler) http.Handler {
	switch {
	case cfg.Issuer == "":
		panic("middleware: GateAssertionConfig.Issuer is required")
	case cfg.Audience == "":
		panic("middleware: GateAssertionConfig.Audience is required")
	case cfg.Keys == nil:
		panic("middleware: GateAssertionConfig.Keys is required")
	}
	header := http.CanonicalHeaderKey(cmp.Or(cfg.Header, "X-Idsauth-Assertion"))
	leeway := cmp.Or(cfg.Leeway, 5*time.Second)
	if leeway < 0 {
		leeway = 0
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	o := newResponder("", oauthwire.Realm, observe.Rejected, cfg.Observer, cfg.OnReject, cfg.Logger)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			values := r.Header[header]
			a := ""
			if len(values) == 1 {
				a = values[0]
			}
			payload, err := assertion.Verify(r.Context(), a, assertion.Check{
				Issuer: cfg.Issuer, Audience: cfg.Audience, Keys: cfg.Keys.VerificationKeys, Now: now(), Leeway: leeway,
			})
			var claims *accesstoken.Claims
			if err == nil {
				claims, err = accesstoken.NewClaims(payload)
			}
			if err != nil {
				o.reject(r, http.StatusForbidden, errGateAssertion)
				h := w.Header()
				h.Set("Cache-Control", "no-store")
				h.Set("Content-Type", "text/plain; charset=utf-8")
				h.Set("X-Content-Type-Options", "nosniff")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte("Forbidden: the request did not pass the gate\n"))
				return
			}
			next.ServeHTTP(w, withClaims(r, claims, o))
		})
	}
}
