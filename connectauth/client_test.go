package connectauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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

// withTokens are the stubs of the service at base that send the tokens
// of cfg: the interceptor, and its HTTP client over h2c.
func withTokens(t *testing.T, base string, cfg connectauth.ClientConfig) clients {
	t.Helper()
	ic := newClientInterceptor(t, cfg)
	return newClientsVia(ic.HTTPClient(h2c()), base, connect.WithInterceptors(ic))
}

// TestClientInterceptorSendsTheClientsToken: calls of every kind carry the
// client's token, fetched once and cached.
func TestClientInterceptorSendsTheClientsToken(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	base, cfg := protected(t, iss, v)
	c := withTokens(t, base, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
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
			c := withTokens(t, base, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
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
	c := withTokens(t, base, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
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

// TestTokenOnlyToTheOrigins: a call to an origin (scheme, host and port)
// that is not one of the configuration's is refused without being sent,
// another host as plain HTTP to an https origin's host and port, and so
// is a call redirected to another origin; a call through another HTTP
// client than the interceptor's carries no token, and says so; a token
// request that fails is a *client.TokenError; an origin without
// transport security is refused at construction unless it is loopback
// and InsecureLoopback says so.
func TestTokenOnlyToTheOrigins(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := &seen{next: iss.Validator()}
	base, cfg := protected(t, iss, v)

	elsewhere := *cfg
	elsewhere.Origins = []string{"https://api.example.com"}
	secure := *cfg // the server's host and port, as an https origin: base is http
	secure.Origins = []string{"https://" + strings.TrimPrefix(base, "http://")}
	for name, cc := range map[string]connectauth.ClientConfig{
		"a host not among the origins":                         {Tokens: &elsewhere},
		"plain HTTP to an https origin's host and port":        {Tokens: &secure},
		"plain HTTP to an https origin's, InsecureLoopback on": {Tokens: &secure, InsecureLoopback: true},
	} {
		c := withTokens(t, base, cc)
		for _, call := range []func(context.Context) error{c.unary, c.serverStream, c.bidi} {
			if err := call(context.Background()); connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "no token sent") {
				t.Errorf("%s: %v, want the client's own refusal", name, err)
			}
		}
	}

	// A redirect to another origin: the redirected request is refused.
	var foreign atomic.Int32
	elsewhereURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreign.Add(1) }))
	redirecting := serve(t, http.RedirectHandler(elsewhereURL+sayProcedure, http.StatusFound))
	toRedirect := *cfg
	toRedirect.Origins = []string{redirecting}
	if err := withTokens(t, redirecting, connectauth.ClientConfig{Tokens: &toRedirect, InsecureLoopback: true}).unary(context.Background()); connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "no token sent") || foreign.Load() != 0 {
		t.Errorf("a redirect to another origin: %v, and %d requests there; want the client's own refusal, and none", err, foreign.Load())
	}

	ic := newClientInterceptor(t, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true})
	c := newClientsVia(h2c(), base, connect.WithInterceptors(ic))
	for _, call := range []func(context.Context) error{c.unary, c.serverStream, c.bidi} {
		if err := call(context.Background()); connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "HTTPClient") {
			t.Errorf("through another HTTP client: %v, want the client's own explanation", err)
		}
	}

	wrong := *cfg
	wrong.ClientSecret = "wrong"
	c = withTokens(t, base, connectauth.ClientConfig{Tokens: &wrong, InsecureLoopback: true})
	for _, call := range []func(context.Context) error{c.unary, c.serverStream} {
		var te *client.TokenError
		if err := call(context.Background()); !errors.As(err, &te) || te.Code != "invalid_client" {
			t.Errorf("a wrong secret: %v, want a *client.TokenError", err)
		}
	}
	if toks := v.all(); len(toks) != 0 {
		t.Errorf("the server saw %d calls with a token, want none", len(toks))
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

// TestRetryFollowsTheErrorInfo: whether a refused call is sent again
// with a new token is read from the refusal's ErrorInfo (domain idsauth,
// error invalid_token), never from its message: a handler whose message
// differs is retried, and a message that looks like ours without the
// detail, or another domain's detail, is not.
func TestRetryFollowsTheErrorInfo(t *testing.T) {
	idsauthInvalid := &errdetails.ErrorInfo{Reason: "INACTIVE", Domain: "idsauth", Metadata: map[string]string{"error": "invalid_token"}}
	refusal := func(code connect.Code, message string, info *errdetails.ErrorInfo) *connect.Error {
		err := connect.NewError(code, errors.New(message))
		if info != nil {
			d, derr := connect.NewErrorDetail(info)
			if derr != nil {
				t.Fatal(derr)
			}
			err.AddDetail(d)
		}
		return err
	}
	for _, tc := range []struct {
		name    string
		refusal *connect.Error
		calls   int
	}{
		{"idsauth's ErrorInfo, another message", refusal(connect.CodeUnauthenticated, "token rejected", idsauthInvalid), 2},
		{"our message without the ErrorInfo", refusal(connect.CodeUnauthenticated, "invalid_token: expired", nil), 1},
		{"another domain's ErrorInfo", refusal(connect.CodeUnauthenticated, "invalid_token: expired",
			&errdetails.ErrorInfo{Reason: "EXPIRED", Domain: "example.com", Metadata: map[string]string{"error": "invalid_token"}}), 1},
		{"idsauth's ErrorInfo, PermissionDenied", refusal(connect.CodePermissionDenied, "invalid_token: expired", idsauthInvalid), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iss := idsauthtest.NewIssuer(t)
			var mu sync.Mutex
			var toks []string
			refuseFirst := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
				return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
					mu.Lock()
					toks = append(toks, req.Header().Get("Authorization"))
					first := len(toks) == 1
					mu.Unlock()
					if first {
						return nil, tc.refusal
					}
					return next(ctx, req)
				}
			})
			base := serve(t, handlers(connect.WithInterceptors(refuseFirst)))
			cfg := &client.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, BaseURL: iss.Server.URL, Origins: []string{base}, Scopes: []string{scope.AdminWebAPI}}
			_ = withTokens(t, base, connectauth.ClientConfig{Tokens: cfg, InsecureLoopback: true}).unary(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if len(toks) != tc.calls || tc.calls == 2 && toks[0] == toks[1] {
				t.Errorf("the handler saw %d calls with %d tokens, want %d", len(toks), distinct(toks), tc.calls)
			}
		})
	}
}
