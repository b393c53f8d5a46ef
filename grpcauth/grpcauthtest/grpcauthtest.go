// Package grpcauthtest runs idsauth's contract against a protected gRPC
// method, as idsauthtest.Issuer.CheckProtected does against an HTTP
// route: real tokens from an idsauthtest.Issuer, sent in the call's
// "authorization" metadata, and each answer checked against the contract
// ([the contract] §1 and its gRPC table).
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package grpcauthtest

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/rpccheck"
	"github.com/idsauth/idsauth/scope"
)

// CheckMethod runs the contract's cases against a protected gRPC method
// and reports with t.Errorf each case answered wrongly: a valid token
// with the scope gets past the interceptor (any answer but
// Unauthenticated, PermissionDenied and InvalidArgument "invalid_request");
// no token, another scheme and "Bearer" alone get Unauthenticated "no
// bearer token"; two authorization values and a space inside the token
// get InvalidArgument "invalid_request: ..."; a malformed, expired, not
// yet valid, tampered, unknown-key, unsigned, foreign-issuer,
// wrong-audience and key-bound token get Unauthenticated "invalid_token:
// ..."; a token without the scope gets PermissionDenied
// "insufficient_scope: <need>"; and no message echoes any part of the
// token. Reference tokens are checked as CheckProtected checks them.
//
// The method's validator must trust iss (iss.Validator(), or
// iss.ValidatorWithReferences()). call
// makes one call of the method with ctx, on a connection without per-call
// credentials, and returns its error: for a unary method, the call; for a
// streaming one, open the stream, send what the method needs, and receive
// until the first message or the error (the interceptor refuses before
// the handler runs, so the refusal is the first thing received). method
// names the method in the reports.
func CheckMethod(t idsauthtest.TB, iss *idsauthtest.Issuer, method string, call func(ctx context.Context) error, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("grpcauthtest: CheckMethod needs the scopes the method requires")
	}
	problems := rpccheck.Run(func(authz ...string) rpccheck.Answer {
		md := metadata.MD{}
		for _, a := range authz {
			md.Append("authorization", a)
		}
		err := call(metadata.NewOutgoingContext(context.Background(), md))
		st := status.Convert(err)
		return rpccheck.Answer{Code: codeName(st.Code()), Message: st.Message()}
	}, tokens(t, iss, need), need)
	for _, p := range problems {
		t.Errorf("CheckMethod %s: %s", method, p)
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

// codeName is a code by the names the two protocols share.
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "ok"
	case codes.Unauthenticated:
		return "unauthenticated"
	case codes.PermissionDenied:
		return "permission_denied"
	case codes.InvalidArgument:
		return "invalid_argument"
	}
	return strings.ToLower(c.String())
}
