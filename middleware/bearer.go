package middleware

import (
	"errors"
	"net/http"
	"strings"

	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/oauthwire"
)

// Errors of the Authorization header's form, given to the reject hook.
var (
	// ErrNoToken: no Authorization header, another scheme, or "Bearer"
	// with nothing after it. Answered with a bare challenge.
	ErrNoToken = bearer.ErrMissing
	// ErrMultipleHeaders: more than one Authorization header (400).
	ErrMultipleHeaders = bearer.ErrMultipleHeaders
	// ErrSpaceInToken: a space inside the bearer token (400).
	ErrSpaceInToken = bearer.ErrSpaceInToken
	// ErrInsufficientScope: a valid token without the route's scope (403).
	ErrInsufficientScope = errors.New("token lacks the scope this API requires")
	// ErrNoClaims: a TokenValidator returned neither claims nor an error,
	// a bug in that validator. The request is refused (401 invalid_token,
	// described on the wire only as "token invalid"), never admitted.
	ErrNoClaims = errors.New("token validator returned no claims and no error")
)

// RequireBearer returns middleware that admits a request only with a valid
// bearer token in its Authorization header, and puts the token's claims in
// the request context (see ClaimsFrom). It answers CONTRACT.md §1:
//
//   - no token: 401 with a bare "Bearer realm=..." challenge, no JSON;
//   - two Authorization headers or a space in the token: 400
//     invalid_request;
//   - a token that fails validation: 401 invalid_token, in the challenge
//     and as a JSON body;
//
// each with Cache-Control: no-store. Tokens in the query or form are never
// read.
func RequireBearer(v TokenValidator, opts ...Option) func(http.Handler) http.Handler {
	o := newOptions(DefaultRealm, opts)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, err := bearer.Token(r)
			if err != nil {
				if errors.Is(err, bearer.ErrMissing) {
					o.challenge(w, r, err)
				} else {
					o.fail(w, r, http.StatusBadRequest, err, oauthwire.Error{Code: "invalid_request", Description: err.Error()})
				}
				return
			}
			claims, err := v.Validate(r.Context(), tok)
			if err == nil && claims == nil {
				err = ErrNoClaims // fail closed on a validator's bug
			}
			if err != nil {
				o.fail(w, r, http.StatusUnauthorized, err, oauthwire.Error{Code: "invalid_token", Description: describe(err)})
				return
			}
			next.ServeHTTP(w, withState(r, claims, o))
		})
	}
}

// RequireScope returns middleware that admits a request whose token, as
// validated by RequireBearer before it, holds at least one of scopes.
// Otherwise it answers 403 insufficient_scope naming the scopes (with no
// scopes given, every request gets that 403). Without
// RequireBearer in front it fails closed: every request gets a 401
// challenge.
func RequireScope(scopes ...string) func(http.Handler) http.Handler {
	need := strings.Join(scopes, " ")
	closed := newOptions(DefaultRealm, nil) // for requests RequireBearer never saw
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, ok := r.Context().Value(stateKey{}).(*state)
			if !ok || s.claims == nil {
				closed.challenge(w, r, ErrNoToken)
				return
			}
			if len(scopes) == 0 || !s.claims.Scopes.HasAny(scopes...) {
				s.opts.fail(w, r, http.StatusForbidden, ErrInsufficientScope, oauthwire.Error{
					Code:        "insufficient_scope",
					Description: ErrInsufficientScope.Error(),
					Scope:       need,
				})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// challenge answers a request that carried no token (RFC 6750 §3.1).
func (o *options) challenge(w http.ResponseWriter, r *http.Request, reason error) {
	o.reject(r, http.StatusUnauthorized, reason)
	h := w.Header()
	h.Set("WWW-Authenticate", oauthwire.Challenge(o.realm, oauthwire.Error{}))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte("Unauthorized\n"))
}

// fail answers with an error in the challenge and the JSON body.
func (o *options) fail(w http.ResponseWriter, r *http.Request, status int, reason error, e oauthwire.Error) {
	o.reject(r, status, reason)
	w.Header().Set("WWW-Authenticate", oauthwire.Challenge(o.realm, e))
	oauthwire.WriteJSON(w, status, e)
}
