// Package rpccheck is the contract checker of a protected gRPC method or
// Connect procedure (CONTRACT.md §1, its gRPC and Connect table), shared
// by the two modules' test kits (grpcauthtest, connectauthtest): the
// cases, and what each answer must be. The kits mint the tokens with
// idsauthtest and make the calls; this package imports neither.
package rpccheck

import (
	"fmt"
	"strings"

	"github.com/idsauth/idsauth/internal/rpcauth"
	"github.com/idsauth/idsauth/internal/tokenecho"
)

// Answer is what a call got back: its status code, by the names the two
// protocols share ("ok", "unauthenticated", "permission_denied",
// "invalid_argument", ...), and its message.
type Answer struct {
	Code    string
	Message string
}

// Tokens are the tokens of the cases, minted by the issuer the method's
// validator trusts. Good and WrongScope are valid; the others fail
// validation. The reference tokens are the issuer's, for the method's
// scopes, revoked, and for another scope.
type Tokens struct {
	Good, WrongScope                                                                       string
	Expired, NotYetValid, Tampered, UnknownKey, AlgNone, WrongIssuer, WrongAudience, Bound string
	Reference, RevokedReference, ReferenceWrongScope                                       string
}

// Run runs the cases: call makes one call of the method with the given
// authorization values (none, one or two) and returns its answer. Run
// returns the problems, each "case: what was wrong".
func Run(call func(authz ...string) Answer, tok Tokens, need []string) []string {
	var out []string
	report := func(name string, format string, args ...any) {
		out = append(out, name+": "+fmt.Sprintf(format, args...))
	}
	passes := func(name string, a Answer) {
		if refused(a) {
			report(name, "%s %q: the interceptor refused a valid token", a.Code, a.Message)
		}
	}
	want := func(code, message string) func(string, Answer) {
		return func(name string, a Answer) {
			if a.Code != code || a.Message != message {
				report(name, "%s %q, want %s %q", a.Code, a.Message, code, message)
			}
		}
	}
	wantPrefix := func(code, prefix string) func(string, Answer) {
		return func(name string, a Answer) {
			if a.Code != code || !strings.HasPrefix(a.Message, prefix) {
				report(name, "%s %q, want %s with a message starting %q", a.Code, a.Message, code, prefix)
			}
		}
	}
	noToken := want("unauthenticated", rpcauth.NoTokenMessage)
	invalid := wantPrefix("unauthenticated", rpcauth.InvalidTokenPrefix)
	badRequest := wantPrefix("invalid_argument", "invalid_request: ")
	lacksScope := want("permission_denied", "insufficient_scope: "+strings.Join(need, " "))

	bearer := func(t string) []string { return []string{"Bearer " + t} }
	type row struct {
		name  string
		authz []string
		token string // what must not be echoed
		check func(string, Answer)
	}
	rows := []row{
		{"a valid token with the scope", bearer(tok.Good), tok.Good, passes},
		{"no token", nil, "", noToken},
		{"another scheme (Basic)", []string{"Basic dGVzdDp0ZXN0"}, "", noToken},
		{"Bearer with nothing after it", []string{"Bearer"}, "", noToken},
		{"two authorization values", []string{"Bearer " + tok.Good, "Bearer " + tok.Good}, tok.Good, badRequest},
		{"a space inside the token", []string{"Bearer " + tok.Good[:10] + " " + tok.Good[10:]}, tok.Good, badRequest},
		{"a malformed token", bearer("not.a-jwt.at-all"), "", invalid},
		{"an expired token", bearer(tok.Expired), "", invalid},
		{"a token not yet valid", bearer(tok.NotYetValid), "", invalid},
		{"a tampered token", bearer(tok.Tampered), "", invalid},
		{"a token signed by an unknown key", bearer(tok.UnknownKey), "", invalid},
		{"an unsigned token (alg none)", bearer(tok.AlgNone), "", invalid},
		{"a token of another issuer", bearer(tok.WrongIssuer), "", invalid},
		{"a token for another audience", bearer(tok.WrongAudience), "", invalid},
		{"a token bound to a key (cnf)", bearer(tok.Bound), "", invalid},
		{"a token without the method's scope", bearer(tok.WrongScope), tok.WrongScope, lacksScope},
	}
	// Reference tokens: a method that takes them gets their cases; one
	// that does not must refuse them as invalid.
	if probe := call(bearer(tok.Reference)...); probe.Code == "unauthenticated" {
		rows = append(rows, row{"a reference token, where JWTs alone are taken", bearer(tok.Reference), tok.Reference, invalid})
	} else {
		rows = append(rows,
			row{"a valid reference token with the scope", bearer(tok.Reference), tok.Reference, passes},
			row{"a revoked reference token", bearer(tok.RevokedReference), "", invalid},
			row{"a reference token without the method's scope", bearer(tok.ReferenceWrongScope), tok.ReferenceWrongScope, lacksScope})
	}
	for _, r := range rows {
		a := call(r.authz...)
		r.check(r.name, a)
		token := r.token
		if token == "" && len(r.authz) == 1 {
			token = strings.TrimPrefix(r.authz[0], "Bearer ")
		}
		if part := tokenecho.Find(a.Message, token); part != "" && refused(a) {
			report(r.name, "the message %q echoes the token's %s", a.Message, part)
		}
	}
	return out
}

// refused reports whether a is one of the interceptor's refusals (a
// handler's own InvalidArgument does not start with invalid_request).
func refused(a Answer) bool {
	switch a.Code {
	case "unauthenticated", "permission_denied":
		return true
	case "invalid_argument":
		return strings.HasPrefix(a.Message, "invalid_request: ")
	}
	return false
}
