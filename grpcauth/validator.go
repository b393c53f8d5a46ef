package grpcauth

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// tokens adapts the token-checking package to the shared decision
// (internal/rpcauth): the one file of this module, with the Config's
// Validator field, that names it.
type tokens struct {
	v     middleware.TokenValidator
	certs clientcert.Source // the connections' certificates
}

func (t tokens) Validate(ctx context.Context, token string) (context.Context, scope.Set, error) {
	ctx, scopes, _, err := t.ValidateExpiring(ctx, token)
	return ctx, scopes, err
}

// ValidateExpiring is Validate, and the token's expiry, at which a
// stream admitted with it ends.
func (t tokens) ValidateExpiring(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	cert := t.peerCertificate(ctx)
	if cert != "" {
		ctx = accesstoken.Presentation{CertThumbprint: cert}.NewContext(ctx)
	}
	claims, err := t.v.Validate(ctx, token)
	if err == nil && claims == nil {
		err = errNoClaims // fail closed on a validator's bug
	}
	if err == nil && cert != "" && claims.X5T != "" {
		// A certificate must be the token's whatever the validator (one
		// of your own may read no presentation), as on an HTTP route.
		err = accesstoken.Presentation{CertThumbprint: cert}.Check(claims)
	}
	if err != nil {
		return ctx, nil, time.Time{}, err
	}
	return middleware.ContextWithClaims(ctx, claims), claims.Scopes, claims.ExpiresAt, nil
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

// peerCertificate returns the thumbprint of the client certificate of
// the call's TLS connection (RFC 8705 §3), computed once per connection,
// or "" when it presented none: a certificate-bound token (cnf
// "x5t#S256") is then accepted with that certificate alone. A token bound
// to a DPoP key stays the validator's to refuse (it refuses one unless
// accesstoken.Config.AllowBoundTokens): a gRPC call carries no DPoP proof.
func (t tokens) peerCertificate(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return ""
	}
	return t.certs.Of(info.State.PeerCertificates[0])
}
