package grpcauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/local"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// protected is a server that checks tokens of iss through v, and the
// client configuration of iss's registered client.
func protected(t *testing.T, iss *idsauthtest.Issuer, v *seen, opts ...grpc.ServerOption) (addr string, cfg *client.Config) {
	t.Helper()
	auth := newAuth(t, grpcauth.Config{Validator: v, DefaultScopes: []string{scope.AdminWebAPI}})
	addr = serve(t, append(auth.ServerOptions(), opts...)...)
	return addr, &client.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, BaseURL: iss.Server.URL, Scopes: []string{scope.AdminWebAPI}}
}

func newCredentials(t *testing.T, cfg grpcauth.ClientConfig) *grpcauth.Credentials {
	t.Helper()
	c, err := grpcauth.NewCredentials(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCredentialsSendTheClientsToken: calls carry the client's token,
// fetched once and cached; the handler sees the client's ID.
func TestCredentialsSendTheClientsToken(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	addr, cfg := protected(t, iss, v)
	creds := newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
	c := testgrpc.NewTestServiceClient(dial(t, addr, creds.DialOptions()...))
	for range 3 {
		resp, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		if err != nil || resp.GetUsername() != iss.ClientID {
			t.Fatalf("UnaryCall: %v, %v", resp, err)
		}
	}
	if err := serverStream(c)(context.Background()); err != nil {
		t.Fatalf("a server-streaming call: %v", err)
	}
	toks := v.all()
	if len(toks) != 4 || toks[0] != toks[3] {
		t.Errorf("the server saw %d tokens (%d distinct), want 4 calls with one cached token", len(toks), distinct(toks))
	}
}

func distinct(toks []string) int {
	set := map[string]bool{}
	for _, tok := range toks {
		set[tok] = true
	}
	return len(set)
}

// TestRejectedTokenIsRenewedOnce: a call whose token the server rejects
// with invalid_token is sent again, once, with a new token; the unary
// call and the server-streaming one alike.
func TestRejectedTokenIsRenewedOnce(t *testing.T) {
	for _, kind := range []string{"unary", "server-streaming"} {
		t.Run(kind, func(t *testing.T) {
			iss := idsauthtest.NewIssuer(t)
			v := &seen{next: iss.Validator(), reject: rejectFirst()}
			addr, cfg := protected(t, iss, v)
			creds := newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
			c := testgrpc.NewTestServiceClient(dial(t, addr, creds.DialOptions()...))
			call := unary(c)
			if kind != "unary" {
				call = serverStream(c)
			}
			if err := call(context.Background()); err != nil {
				t.Fatalf("the call: %v, want it to succeed on the retry", err)
			}
			toks := v.all()
			if len(toks) != 2 || toks[0] == toks[1] {
				t.Fatalf("the server saw %d calls with %d tokens, want 2 calls with 2 tokens", len(toks), distinct(toks))
			}
			if err := call(context.Background()); err != nil || len(v.all()) != 3 || v.all()[2] != toks[1] {
				t.Errorf("the next call: %v; want it sent once with the new token", err)
			}
		})
	}
}

// TestNeverTheSameTokenTwice: when the new token is rejected too, the call
// fails with the server's invalid_token after two attempts, each with its
// own token; a bidirectional stream that sent two messages is not
// retried, and nor is an answer without invalid_token.
func TestNeverTheSameTokenTwice(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator(), reject: func(string) bool { return true }}
	addr, cfg := protected(t, iss, v)
	creds := newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
	c := testgrpc.NewTestServiceClient(dial(t, addr, creds.DialOptions()...))
	err := unary(c)(context.Background())
	if st := status.Convert(err); st.Code() != codes.Unauthenticated || !strings.HasPrefix(st.Message(), "invalid_token: ") {
		t.Fatalf("every token rejected: %v, want the server's Unauthenticated invalid_token", err)
	}
	if toks := v.all(); len(toks) != 2 || toks[0] == toks[1] {
		t.Fatalf("the server saw %d calls with %d tokens, want 2 calls with 2 tokens", len(toks), distinct(toks))
	}

	s, err := c.FullDuplexCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	_, err = s.Recv()
	if status.Code(err) != codes.Unauthenticated || len(v.all()) != 3 {
		t.Errorf("a stream that sent two messages: %v after %d calls, want Unauthenticated after 3 (no retry)", err, len(v.all()))
	}

	// Another issuer's server answers every token with PermissionDenied:
	// not retried.
	iss2 := idsauthtest.NewIssuer(t)
	v2 := &seen{next: iss2.Validator()}
	auth := newAuth(t, grpcauth.Config{Validator: v2, DefaultScopes: []string{scope.ConnectWebAPI}})
	c2 := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...), newCredentials(t, grpcauth.ClientConfig{
		Tokens: &client.Config{ClientID: iss2.ClientID, ClientSecret: iss2.ClientSecret, BaseURL: iss2.Server.URL, Scopes: []string{scope.AdminWebAPI}}, InsecureLoopback: true}).DialOptions()...))
	if err := unary(c2)(context.Background()); status.Code(err) != codes.PermissionDenied || len(v2.all()) != 1 {
		t.Errorf("a token without the scope: %v after %d calls, want PermissionDenied after 1", err, len(v2.all()))
	}
}

// TestTokenRequestErrorsAreTyped: a refused token request is the call's
// error, a *client.TokenError, and no call is sent.
func TestTokenRequestErrorsAreTyped(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	addr, cfg := protected(t, iss, v)
	cfg.ClientSecret = "wrong"
	c := testgrpc.NewTestServiceClient(dial(t, addr, newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true}).DialOptions()...))
	for _, call := range []func(context.Context) error{unary(c), serverStream(c)} {
		var te *client.TokenError
		if err := call(context.Background()); !errors.As(err, &te) || te.Code != "invalid_client" {
			t.Errorf("a wrong secret: %v, want a *client.TokenError invalid_client", err)
		}
	}
	if n := len(v.all()); n != 0 {
		t.Errorf("the server saw %d calls, want none", n)
	}
}

// TestNoTokenWithoutTransportSecurity: a token goes over a connection
// without TLS only to a loopback target, and only when the caller says
// so; over TLS it goes anywhere.
func TestNoTokenWithoutTransportSecurity(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	cert, pool := selfSigned(t)
	addr, cfg := protected(t, iss, v)
	tlsAddr, _ := protected(t, iss, v, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	ctx := context.Background()

	// Without InsecureLoopback, grpc-go itself refuses the credentials on
	// an insecure connection.
	strict := newCredentials(t, grpcauth.ClientConfig{Tokens: cfg})
	if conn, err := grpc.NewClient("passthrough:///"+addr, append(strict.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...); err == nil {
		err = unary(testgrpc.NewTestServiceClient(conn))(ctx)
		conn.Close()
		if err == nil {
			t.Error("a token over an insecure connection without InsecureLoopback: the call went through")
		}
	}
	// With it, a target that names another host is refused all the same.
	loose := newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
	c := testgrpc.NewTestServiceClient(dial(t, addr, append(loose.DialOptions(), grpc.WithAuthority("api.example.com:443"))...))
	if err := unary(c)(ctx); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "no token sent") {
		t.Errorf("InsecureLoopback, a target named api.example.com: %v, want the client's own refusal", err)
	}
	// local.NewCredentials checks the peer itself.
	c = testgrpc.NewTestServiceClient(dial(t, addr, append(loose.DialOptions(), grpc.WithTransportCredentials(local.NewCredentials()), grpc.WithAuthority("api.example.com:443"))...))
	if err := unary(c)(ctx); err != nil {
		t.Errorf("InsecureLoopback over local credentials: %v", err)
	}
	if n := len(v.all()); n != 1 {
		t.Errorf("the servers saw %d calls, want only the one over local credentials", n)
	}
	// TLS: no InsecureLoopback needed.
	c = testgrpc.NewTestServiceClient(dial(t, tlsAddr, append(strict.DialOptions(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))...))
	if resp, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil || resp.GetUsername() != iss.ClientID {
		t.Errorf("over TLS: %v, %v", resp, err)
	}
}

// TestNewCredentialsRefusesBadConfig: no client configuration, or one with
// a DPoP key (a gRPC call carries no proof), is an error.
func TestNewCredentialsRefusesBadConfig(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]grpcauth.ClientConfig{
		"no Tokens": {},
		"a DPoPKey": {Tokens: &client.Config{ClientID: "x", DPoPKey: key}},
	} {
		if _, err := grpcauth.NewCredentials(context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "grpcauth.ClientConfig.") {
			t.Errorf("%s: %v, want an error naming the field", name, err)
		}
	}
}

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// TestRetryFollowsTheErrorInfo: whether a refused call is sent again
// with a new token is read from the refusal's ErrorInfo (domain idsauth,
// error invalid_token), never from its message: a server whose message
// differs is retried, and a message that looks like ours without the
// detail, or another domain's detail, is not.
func TestRetryFollowsTheErrorInfo(t *testing.T) {
	idsauthInvalid := &errdetails.ErrorInfo{Reason: "INACTIVE", Domain: "idsauth", Metadata: map[string]string{"error": "invalid_token"}}
	for _, tc := range []struct {
		name    string
		refusal *status.Status
		calls   int
	}{
		{"idsauth's ErrorInfo, another message", withInfo(t, status.New(codes.Unauthenticated, "token rejected"), idsauthInvalid), 2},
		{"our message without the ErrorInfo", status.New(codes.Unauthenticated, "invalid_token: expired"), 1},
		{"another domain's ErrorInfo", withInfo(t, status.New(codes.Unauthenticated, "invalid_token: expired"),
			&errdetails.ErrorInfo{Reason: "EXPIRED", Domain: "example.com", Metadata: map[string]string{"error": "invalid_token"}}), 1},
		{"idsauth's ErrorInfo, PermissionDenied", withInfo(t, status.New(codes.PermissionDenied, "invalid_token: expired"), idsauthInvalid), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss := idsauthtest.NewIssuer(t)
			var mu sync.Mutex
			var toks []string
			refuseFirst := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				toks = append(toks, strings.Join(metadata.ValueFromIncomingContext(ctx, "authorization"), ","))
				if len(toks) == 1 {
					return nil, tc.refusal.Err()
				}
				return h(ctx, req)
			}
			addr := serve(t, grpc.ChainUnaryInterceptor(refuseFirst))
			cfg := &client.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, BaseURL: iss.Server.URL, Scopes: []string{scope.AdminWebAPI}}
			c := testgrpc.NewTestServiceClient(dial(t, addr, newCredentials(t, grpcauth.ClientConfig{Tokens: cfg, InsecureLoopback: true}).DialOptions()...))
			_ = unary(c)(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if len(toks) != tc.calls || tc.calls == 2 && toks[0] == toks[1] {
				t.Errorf("the server saw %d calls with %d tokens, want %d", len(toks), distinct(toks), tc.calls)
			}
		})
	}
}

func withInfo(t *testing.T, st *status.Status, info *errdetails.ErrorInfo) *status.Status {
	t.Helper()
	st, err := st.WithDetails(info)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
