package grpcauth

import (
	"context"
	"errors"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// tokens adapts the token-checking package to the shared decision
// (internal/rpcauth): the one file of this module, with the Config's
// Validator field, that names it.
type tokens struct{ v middleware.TokenValidator }

func (t tokens) Validate(ctx context.Context, token string) (context.Context, scope.Set, error) {
	claims, err := t.v.Validate(ctx, token)
	if err == nil && claims == nil {
		err = errNoClaims // fail closed on a validator's bug
	}
	if err == nil {
		err = bound(ctx, claims)
	}
	if err != nil {
		return ctx, nil, err
	}
	return middleware.ContextWithClaims(ctx, claims), claims.Scopes, nil
}

func (tokens) Reason(err error) string {
	if errors.Is(err, errNoClaims) {
		return "no_claims" // as middleware.ReasonCode names it on an HTTP route
	}
	return middleware.ReasonCode(err)
}

// errNoClaims: the Validator returned neither claims nor an error, a bug
// in that validator; the call is refused, never admitted.
var errNoClaims = errors.New("token validator returned no claims and no error")

// bound is where a token bound to a key meets the call. A token with a
// cnf claim is the validator's to refuse today (it refuses one unless
// accesstoken.Config.AllowBoundTokens), as on an HTTP route without DPoP: a
// gRPC call carries no DPoP proof. Certificate-bound tokens (RFC 8705,
// cnf "x5t#S256") are checked here once the token-checking package reads
// that claim: the thumbprint of the call's peer certificate,
// peer.FromContext(ctx).AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0],
// compared in constant time.
func bound(ctx context.Context, c *accesstoken.Claims) error {
	_, _ = ctx, c
	return nil
}
