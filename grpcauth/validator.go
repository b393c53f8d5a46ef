package grpcauth

import (
	"context"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/scope"
)

// tokens is accesstoken's decision as internal/rpcauth takes it: a
// call's token, presented with its connection's certificate, in; the
// claims in the handler's context, out.
type tokens struct {
	v     accesstoken.TokenValidator
	certs clientcert.Source // the connections' certificates
}

func (t tokens) Validate(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	p := accesstoken.Presentation{CertThumbprint: t.peerCertificate(ctx)}
	c, err := accesstoken.Decide(ctx, t.v, token, p)
	if err != nil {
		return ctx, nil, time.Time{}, err
	}
	return accesstoken.ContextWithClaims(ctx, c), c.Scopes, c.ExpiresAt, nil
}

func (tokens) Reason(err error) string { return accesstoken.ReasonCode(err) }

// peerCertificate returns the thumbprint of the client certificate of
// the call's TLS connection (RFC 8705 §3), computed once per connection,
// or "" when it presented none: a certificate-bound token (cnf
// "x5t#S256") is then accepted with that certificate alone. A gRPC call
// carries no DPoP proof, so a token bound to a DPoP key stays refused
// (unless accesstoken.Config.AllowBoundTokens).
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
