package grpcauth_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestCertificateBoundTokensOverGRPC: a token bound to a client
// certificate (RFC 8705) is accepted on a call over a TLS connection that
// presented that certificate, and refused as invalid_token with another
// certificate or none, as on an HTTP route.
func TestCertificateBoundTokensOverGRPC(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	serverCert, pool := selfSigned(t)
	auth := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	addr := serve(t, append(auth.ServerOptions(), grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequestClientCert})))...)
	mine, other := iss.ClientCertificate(t), iss.ClientCertificate(t)
	tok := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	call := func(cert *tls.Certificate, token string) error {
		cfg := &tls.Config{RootCAs: pool}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		_, err = testgrpc.NewTestServiceClient(conn).UnaryCall(ctx, &testgrpc.SimpleRequest{})
		return err
	}
	if err := call(&mine, tok); err != nil {
		t.Errorf("with its certificate: %v", err)
	}
	for name, c := range map[string]struct {
		cert *tls.Certificate
		want string
	}{
		"another certificate": {&other, "invalid_token: wrong_certificate"},
		"no certificate":      {nil, "invalid_token: bound_token"},
	} {
		if err := call(c.cert, tok); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want Unauthenticated %q", name, err, c.want)
		}
	}
	if err := call(&other, iss.Token(t, scope.AdminWebAPI)); err != nil {
		t.Errorf("a plain bearer token over a connection with a certificate: %v", err)
	}
}
