// Package connectauthtest runs idsauth's contract against a protected
// Connect procedure, as idsauthtest.Issuer.CheckProtected does against an
// HTTP route: real tokens from an idsauthtest.Issuer, sent in the call's
// Authorization header, and each answer checked against the contract
// ([the contract] §1 and its Connect table).
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package connectauthtest

import (
	"context"
	"errors"
	"slices"

	"connectrpc.com/connect"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/rpccheck"
	"github.com/idsauth/idsauth/scope"
)

// CheckProcedure runs the contract's cases against a protected Connect
// procedure and reports with t.Errorf each case answered wrongly: a valid
// token with the scope gets past the interceptor (any answer but
// CodeUnauthenticated, CodePermissionDenied and CodeInvalidArgument
// "invalid_request"); no token, another scheme and "Bearer" alone get
// CodeUnauthenticated "no bearer token"; two Authorization headers and a
// space inside the token get CodeInvalidArgument "invalid_request: ...";
// a malformed, expired, not yet valid, tampered, unknown-key, unsigned,
// foreign-issuer, wrong-audience and key-bound token get
// CodeUnauthenticated "invalid_token: ..."; a token without the scope
// gets CodePermissionDenied "insufficient_scope: <need>"; and no message
// echoes any part of the token. Reference tokens are checked as
// CheckProtected checks them.
//
// The procedure's validator must trust iss (iss.Validator(), or
// iss.ValidatorWithReferences()). call
// makes one call of the procedure with ctx, by a client without
// connectauth's ClientInterceptor, and returns its error: the checker
// puts the Authorization headers in ctx (connect.NewClientContext). For
// a unary procedure, make the call; for a streaming one, open the stream,
// send what it needs, and receive until the first message or the error.
// procedure names it in the reports.
func CheckProcedure(t idsauthtest.TB, iss *idsauthtest.Issuer, procedure string, call func(ctx context.Context) error, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("connectauthtest: CheckProcedure needs the scopes the procedure requires")
	}
	problems := rpccheck.Run(func(authz ...string) rpccheck.Answer {
		ctx, info := connect.NewClientContext(context.Background())
		for _, a := range authz {
			info.RequestHeader().Add("Authorization", a)
		}
		err := call(ctx)
		if err == nil {
			return rpccheck.Answer{Code: "ok"}
		}
		var ce *connect.Error
		if !errors.As(err, &ce) {
			return rpccheck.Answer{Code: "unknown", Message: err.Error()}
		}
		return rpccheck.Answer{Code: ce.Code().String(), Message: ce.Message()}
	}, tokens(t, iss, need), need)
	for _, p := range problems {
		t.Errorf("CheckProcedure %s: %s", procedure, p)
	}
}

// tokens mints the checker's tokens for need.
func tokens(t idsauthtest.TB, iss *idsauthtest.Issuer, need []string) rpccheck.Tokens {
	return rpccheck.Tokens{
		Good:                iss.Token(t, need...),
		WrongScope:          iss.Token(t, otherScope(need)),
		Expired:             iss.ExpiredToken(t, need...),
		NotYetValid:         iss.NotYetValidToken(t, need...),
		Tampered:            iss.TamperedToken(t, need...),
		UnknownKey:          iss.UnknownKeyToken(t, need...),
		AlgNone:             iss.AlgNoneToken(t, need...),
		WrongIssuer:         iss.WrongIssuerToken(t, need...),
		WrongAudience:       iss.WrongAudienceToken(t, need...),
		Bound:               iss.BoundToken(t, need...),
		Reference:           iss.ReferenceToken(t, need...),
		RevokedReference:    iss.RevokedReferenceToken(t, need...),
		ReferenceWrongScope: iss.ReferenceToken(t, otherScope(need)),
	}
}

// otherScope is a scope of the product's that need does not hold.
func otherScope(need []string) string {
	for _, s := range scope.All() {
		if !slices.Contains(need, s) {
			return s
		}
	}
	return "idsauthtest_other_scope"
}
