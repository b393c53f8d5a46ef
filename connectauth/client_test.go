package connectauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// protected serves the test service checked through v, and returns its
// URL and a client configuration of iss's registered client for it.
func protected(t *testing.T, iss *idsauthtest.Issuer, v *seen) (string, *client.Config) {
	t.Helper()
	auth := newAuth(t, connectauth.Config{Validator: v, DefaultScopes: []string{scope.AdminWebAPI}})
	base := serve(t, handlers(connect.WithInterceptors(auth)))
	return base, &client.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, BaseURL: iss.Server.URL, Origins: []string{base}, Scopes: []string{scope.AdminWebAPI}}
}

func newClientInterceptor(t *testing.T, cfg connectauth.ClientConfig) *connectauth.ClientInterceptor {
	t.Helper()
	ic, err := connectauth.NewClientInterceptor(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ic
}

// TestClientInterceptorSendsTheClientsToken: calls of every kind carry the
// client's token, fetched once and cached.
func TestClientInterceptorSendsTheClientsToken(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	base, cfg := protected(t, iss, v)
	c := newClients(base, connect.WithInterceptors(newClientInterceptor(t, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})))
	ctx := context.Background()
	for _, call := range []func(context.Context) error{c.unary, c.unary, c.serverStream, c.bidi} {
		if err := call(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if toks := v.all(); len(toks) != 4 || distinct(toks) != 1 {
		t.Errorf("the server saw %d calls with %d tokens, want 4 with one", len(toks), distinct(toks))
	}
}

// TestRejectedTokenIsRenewedOnce: a call whose token the handler rejects
// with invalid_token is sent again, once, with a new token: unary,
// server-streaming and bidirectional with one message.
func TestRejectedTokenIsRenewedOnce(t *testing.T) {
	for _, kind := range []string{"unary", "server-streaming", "bidirectional"} {
		t.Run(kind, func(t *testing.T) {
			iss := idsauthtest.NewIssuer(t)
			v := &seen{next: iss.Validator(), reject: rejectFirst()}
			base, cfg := protected(t, iss, v)
			c := newClients(base, connect.WithInterceptors(newClientInterceptor(t, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})))
			call := map[string]func(context.Context) error{"unary": c.unary, "server-streaming": c.serverStream, "bidirectional": c.bidi}[kind]
			if err := call(context.Background()); err != nil {
				t.Fatalf("the call: %v, want it to succeed on the retry", err)
			}
			if toks := v.all(); len(toks) != 2 || toks[0] == toks[1] {
				t.Fatalf("the server saw %d calls with %d tokens, want 2 with 2", len(toks), distinct(toks))
			}
		})
	}
}

// TestNeverTheSameTokenTwice: when the new token is rejected too, the call
// fails with the handler's invalid_token after two attempts, each with
// its own token; a bidirectional stream that sent two messages is not
// retried.
func TestNeverTheSameTokenTwice(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator(), reject: func(string) bool { return true }}
	base, cfg := protected(t, iss, v)
	c := newClients(base, connect.WithInterceptors(newClientInterceptor(t, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})))
	err := c.unary(context.Background())
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnauthenticated || !strings.HasPrefix(ce.Message(), "invalid_token: ") {
		t.Fatalf("every token rejected: %v, want the handler's invalid_token", err)
	}
	if toks := v.all(); len(toks) != 2 || toks[0] == toks[1] {
		t.Fatalf("the server saw %d calls with %d tokens, want 2 with 2", len(toks), distinct(toks))
	}

	s := c.chat.CallBidiStream(context.Background())
	for range 2 {
		if err := s.Send(wrapperspb.String("hi")); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
	_ = s.CloseRequest()
	if _, err := s.Receive(); connect.CodeOf(err) != connect.CodeUnauthenticated || len(v.all()) != 3 {
		t.Errorf("a stream that sent two messages: %v after %d calls, want Unauthenticated after 3 (no retry)", err, len(v.all()))
	}
	_ = s.CloseResponse()
}

// TestTokenOnlyToTheOrigins: a call to a host that is not one of the
// origins is refused without being sent; a token request that fails is
// a *client.TokenError; an origin without transport security is refused
// at construction unless it is loopback and InsecureLoopback says so.
func TestTokenOnlyToTheOrigins(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	base, cfg := protected(t, iss, v)

	elsewhere := *cfg
	elsewhere.Origins = []string{"https://api.example.com"}
	c := newClients(base, connect.WithInterceptors(newClientInterceptor(t, connectauth.ClientConfig{Tokens: &elsewhere})))
	for _, call := range []func(context.Context) error{c.unary, c.serverStream} {
		if err := call(context.Background()); connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "no token sent") {
			t.Errorf("a call to a host not among the origins: %v, want the client's own refusal", err)
		}
	}

	wrong := *cfg
	wrong.ClientSecret = "wrong"
	c = newClients(base, connect.WithInterceptors(newClientInterceptor(t, connectauth.ClientConfig{Tokens: &wrong, InsecureLoopback: true})))
	for _, call := range []func(context.Context) error{c.unary, c.serverStream} {
		var te *client.TokenError
		if err := call(context.Background()); !errors.As(err, &te) || te.Code != "invalid_client" {
			t.Errorf("a wrong secret: %v, want a *client.TokenError", err)
		}
	}
	if n := len(v.all()); n != 0 {
		t.Errorf("the server saw %d calls, want none", n)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, cc := range map[string]connectauth.ClientConfig{
		"no Tokens":                         {},
		"a DPoPKey":                         {Tokens: &client.Config{BaseURL: "https://api.example.com", DPoPKey: key}},
		"no origin":                         {Tokens: &client.Config{TokenURL: "https://ids.example.com/token"}},
		"loopback http without the setting": {Tokens: cfg},
		"http elsewhere":                    {Tokens: &client.Config{BaseURL: "http://api.example.com"}, InsecureLoopback: true},
	} {
		if _, err := connectauth.NewClientInterceptor(context.Background(), cc); err == nil || !strings.HasPrefix(err.Error(), "connectauth.ClientConfig.") {
			t.Errorf("%s: %v, want an error naming the field", name, err)
		}
	}
}
