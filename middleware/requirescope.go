package middleware

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/scope"
)

// RequireScope returns middleware that admits a request whose token, as
// validated by the RequireBearer before it, holds at least one of scopes.
// Otherwise it answers 403 insufficient_scope naming the scopes
// ([RFC 6750] §3.1).
//
// RequireScope has no settings of its own: it answers with the realm,
// reject hook and logger of the RequireBearer (or SCIMAuth) in front of
// it, which it finds in the request context. Without one in front it
// fails closed: every request gets a 401 challenge with the realm "idsauth",
// and, since no configured logger can reach it, the first such refusal
// is logged at Error level to slog.Default, saying why.
//
// It panics, as a misconfiguration, when given no scopes, an empty or
// whitespace-holding name (which no token can carry), or a name that
// differs from a known scope only in case, such as "pd_AdminWebAPI":
// scope names are case-sensitive and it would never match.
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
func RequireScope(scopes ...string) func(http.Handler) http.Handler {
	checkScopes("RequireScope", scopes)
	scopes = append([]string(nil), scopes...)
	need := strings.Join(scopes, " ")
	closed := &responder{realm: oauthwire.Realm} // for requests RequireBearer never saw
	var warned atomic.Bool
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			claims, resp, ok := claimsFrom(r.Context())
			if !ok {
				if !warned.Swap(true) {
					slog.Default().LogAttrs(r.Context(), slog.LevelError,
						"idsauth: RequireScope refused a request that no RequireBearer validated; put RequireBearer in front of it",
						slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("scope", need))
				}
				closed.challenge(w, r, errNoToken)
				return
			}
			if !claims.Scopes.HasAny(scopes...) {
				resp.fail(w, r, http.StatusForbidden, errInsufficientScope, oauthwire.Error{
					Code:        "insufficient_scope",
					Description: describe(errInsufficientScope),
					Scope:       need,
				})
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// RequireFamily is RequireScope with the scope that grants the API
// family f (see scope.Family.Required): scope.Admin needs
// pd_AdminWebApi, scope.Connect and scope.ConnectSession need
// pd_ConnectWebApi. It panics for a family that no scope grants
// (scope.SCIM, which SCIMAuth guards, or an unknown one).
func RequireFamily(f scope.Family) func(http.Handler) http.Handler {
	s, ok := f.Required()
	if !ok {
		panic(fmt.Sprintf("middleware: RequireFamily: no scope grants %v", f))
	}
	return RequireScope(s)
}

// checkScopes panics if scopes cannot be what a route means to require.
func checkScopes(who string, scopes []string) {
	if len(scopes) == 0 {
		panic("middleware: " + who + " expects at least one scope")
	}
	for _, s := range scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			panic(fmt.Sprintf("middleware: %s: %q is not a scope name", who, s))
		}
		for _, known := range scope.All() {
			if s != known && strings.EqualFold(s, known) {
				panic(fmt.Sprintf("middleware: %s: %q differs from the scope %q only in case, and scope names are case-sensitive", who, s, known))
			}
		}
	}
}
