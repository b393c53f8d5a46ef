package connectauth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/connectauth/connectauthtest"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestContract runs the contract's cases against a unary, a
// server-streaming and a bidirectional procedure, over the Connect, gRPC
// and gRPC-Web protocols, with JWTs alone and with reference tokens too.
func TestContract(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for _, v := range []struct {
		name string
		v    accesstoken.TokenValidator
	}{
		{"JWTs", iss.Validator()},
		{"JWTs and reference tokens", iss.ValidatorWithReferences()},
	} {
		auth := newAuth(t, connectauth.Config{Validator: v.v, DefaultScopes: []string{scope.AdminWebAPI}})
		base := serve(t, handlers(connect.WithInterceptors(auth)))
		for _, p := range []struct {
			name string
			opts []connect.ClientOption
		}{{"connect", nil}, {"grpc", []connect.ClientOption{connect.WithGRPC()}}, {"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}}} {
			t.Run(v.name+"/"+p.name, func(t *testing.T) {
				c := newClients(base, p.opts...)
				connectauthtest.CheckProcedure(t, iss, sayProcedure, c.unary, scope.AdminWebAPI)
				connectauthtest.CheckProcedure(t, iss, countProcedure, c.serverStream, scope.AdminWebAPI)
				connectauthtest.CheckProcedure(t, iss, chatProcedure, c.bidi, scope.AdminWebAPI)
			})
		}
	}
}

// TestCheckProcedureFindsAnOpenProcedure: against handlers without the
// interceptor, the checker reports every case that should be refused.
func TestCheckProcedureFindsAnOpenProcedure(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	c := newClients(serve(t, handlers()))
	var rec recorder
	connectauthtest.CheckProcedure(&rec, iss, sayProcedure, c.unary, scope.AdminWebAPI)
	if len(rec.errors) < 10 {
		t.Fatalf("CheckProcedure reported %d problems with a procedure open to all, want one a refusal case", len(rec.errors))
	}
}

type recorder struct{ errors []string }

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.errors = append(r.errors, format) }
func (r *recorder) Fatalf(format string, args ...any) { panic(format) }
func (r *recorder) Cleanup(f func())                  {}

// TestRefusalsAreHTTPAnswers: over the Connect protocol a refusal is the
// contract's HTTP answer: 401 with a bare challenge for no token, 401
// invalid_token, 403 insufficient_scope naming the scope, each with
// Cache-Control: no-store; so that a plain HTTP client (client.Config's)
// reads it as it reads an HTTP route's.
func TestRefusalsAreHTTPAnswers(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	base := serve(t, handlers(connect.WithInterceptors(auth)))
	for _, c := range []struct {
		authz  string
		status int
		want   string
	}{
		{"", 401, `Bearer realm="idsauth"`},
		{"Bearer " + iss.ExpiredToken(t, scope.AdminWebAPI), 401, `Bearer realm="idsauth", error="invalid_token", error_description="expired"`},
		{"Bearer " + iss.Token(t, scope.ConnectWebAPI), 403, `Bearer realm="idsauth", error="insufficient_scope", scope="pd_AdminWebApi"`},
	} {
		req, _ := http.NewRequest(http.MethodPost, base+sayProcedure, strings.NewReader(`"hi"`))
		req.Header.Set("Content-Type", "application/json")
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("WWW-Authenticate") != c.want || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%.20q: %d, WWW-Authenticate %q, Cache-Control %q; want %d, %q, no-store", c.authz, resp.StatusCode,
				resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Cache-Control"), c.status, c.want)
		}
	}
}

// TestClaimsReachTheHandler: unary and streaming handlers read the
// token's claims with accesstoken.ClaimsFrom, the HTTP side's accessor.
func TestClaimsReachTheHandler(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{"/idsauth.test.v1.EchoService/": {scope.AdminWebAPI}}})
	c := newClients(serve(t, handlers(connect.WithInterceptors(auth))))
	ctx, info := connect.NewClientContext(context.Background())
	info.RequestHeader().Set("Authorization", "Bearer "+iss.Token(t, scope.AdminWebAPI))

	resp, err := c.say.CallUnary(ctx, connect.NewRequest(wrapperspb.String("hi")))
	if err != nil || resp.Msg.GetValue() != iss.ClientID+" "+scope.AdminWebAPI {
		t.Fatalf("Say: %v, %v; want the client ID and its scope", resp, err)
	}
	s, err := c.count.CallServerStream(ctx, connect.NewRequest(wrapperspb.Int32(2)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s.Receive() {
		if s.Msg().GetValue() != iss.ClientID {
			t.Errorf("stream message %q, want the client ID", s.Msg().GetValue())
		}
		n++
	}
	if s.Err() != nil || n != 2 {
		t.Errorf("Count: %d messages, %v", n, s.Err())
	}
}

// TestProcedureNamedNowhereIsRefused: without DefaultScopes, a procedure
// the configuration names nowhere is refused whatever the token; Public
// serves one without a token.
func TestProcedureNamedNowhereIsRefused(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	ctx, info := connect.NewClientContext(context.Background())
	info.RequestHeader().Set("Authorization", "Bearer "+iss.Token(t, scope.AdminWebAPI, scope.ConnectWebAPI))

	closed := newAuth(t, connectauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{sayProcedure: {scope.AdminWebAPI}}})
	c := newClients(serve(t, handlers(connect.WithInterceptors(closed))))
	if err := c.unary(ctx); err != nil {
		t.Fatalf("the listed procedure: %v", err)
	}
	_, err := c.other.CallUnary(ctx, connect.NewRequest(wrapperspb.String("hi")))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodePermissionDenied || ce.Message() != "insufficient_scope: no scope grants this method" {
		t.Errorf("a procedure named nowhere: %v, want PermissionDenied", err)
	}

	public := newAuth(t, connectauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{sayProcedure: {scope.AdminWebAPI}}, Public: []string{otherProcedure}})
	c = newClients(serve(t, handlers(connect.WithInterceptors(public))))
	if _, err := c.other.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("hi"))); err != nil {
		t.Errorf("a public procedure without a token: %v", err)
	}
	if err := c.unary(context.Background()); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("a scoped procedure without a token: %v, want Unauthenticated", err)
	}
}

// TestRefusalsAreLogged: a refused call is logged with its procedure,
// code and reason, and never with the token.
func TestRefusalsAreLogged(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	var buf bytes.Buffer
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	c := newClients(serve(t, handlers(connect.WithInterceptors(auth))))
	tampered := iss.TamperedToken(t, scope.AdminWebAPI)
	ctx, info := connect.NewClientContext(context.Background())
	info.RequestHeader().Set("Authorization", "Bearer "+tampered)
	if err := c.unary(ctx); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("a tampered token: %v", err)
	}
	line := buf.String()
	for _, want := range []string{"method=" + sayProcedure, "code=unauthenticated", "reason=signature"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, tampered[:16]) || strings.Contains(line, tampered[len(tampered)-16:]) {
		t.Errorf("log %q holds part of the token", line)
	}
}

// TestNewRefusesBadConfig: no validator, or a policy that could not do
// what it says, is an error at construction.
func TestNewRefusesBadConfig(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for name, cfg := range map[string]connectauth.Config{
		"no validator":     {DefaultScopes: []string{scope.AdminWebAPI}},
		"not a procedure":  {Validator: iss.Validator(), Scopes: map[string][]string{"Say": {scope.AdminWebAPI}}},
		"a scope misspelt": {Validator: iss.Validator(), DefaultScopes: []string{"PD_ADMINWEBAPI"}},
		"a public scoped":  {Validator: iss.Validator(), Public: []string{sayProcedure}, Scopes: map[string][]string{sayProcedure: {scope.AdminWebAPI}}},
	} {
		if _, err := connectauth.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "connectauth.Config.") {
			t.Errorf("%s: %v, want an error naming the connectauth.Config field", name, err)
		}
	}
}
