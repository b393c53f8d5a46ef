package grpcauth_test

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/grpcauth/grpcauthtest"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

const (
	unaryCall     = "/grpc.testing.TestService/UnaryCall"
	streamingCall = "/grpc.testing.TestService/StreamingOutputCall"
	duplexCall    = "/grpc.testing.TestService/FullDuplexCall"
	emptyCall     = "/grpc.testing.TestService/EmptyCall"
)

func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// unary, serverStream and duplex call the three kinds of method and
// return the error, for the contract checker.
func unary(c testgrpc.TestServiceClient) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		return err
	}
}

func serverStream(c testgrpc.TestServiceClient) func(context.Context) error {
	return func(ctx context.Context) error {
		s, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{}}})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
}

func duplex(c testgrpc.TestServiceClient) func(context.Context) error {
	return func(ctx context.Context) error {
		s, err := c.FullDuplexCall(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil {
			_, err = s.Recv() // the status, after io.EOF from Send
			return err
		}
		_, err = s.Recv()
		return err
	}
}

// TestContract runs the contract's cases against a unary, a
// server-streaming and a bidirectional method, with JWTs alone and with
// reference tokens too.
func TestContract(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for _, v := range []struct {
		name string
		v    accesstoken.TokenValidator
	}{
		{"JWTs", iss.Validator()},
		{"JWTs and reference tokens", iss.ValidatorWithReferences()},
	} {
		t.Run(v.name, func(t *testing.T) {
			auth := newAuth(t, grpcauth.Config{Validator: v.v, DefaultScopes: []string{scope.AdminWebAPI}})
			c := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...)))
			grpcauthtest.CheckMethod(t, iss, unaryCall, unary(c), scope.AdminWebAPI)
			grpcauthtest.CheckMethod(t, iss, streamingCall, serverStream(c), scope.AdminWebAPI)
			grpcauthtest.CheckMethod(t, iss, duplexCall, duplex(c), scope.AdminWebAPI)
		})
	}
}

// TestCheckMethodFindsAnOpenMethod: the checker is not a test that cannot
// fail: against a server without the interceptors, it reports every
// case that should have been refused.
func TestCheckMethodFindsAnOpenMethod(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	c := testgrpc.NewTestServiceClient(dial(t, serve(t)))
	var rec recorder
	grpcauthtest.CheckMethod(&rec, iss, unaryCall, unary(c), scope.AdminWebAPI)
	if len(rec.errors) < 10 {
		t.Fatalf("CheckMethod reported %d problems with a method that refuses everything alike, want one a refusal case:\n%s", len(rec.errors), strings.Join(rec.errors, "\n"))
	}
}

// recorder is an idsauthtest.TB that keeps what it is told.
type recorder struct{ errors []string }

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.errors = append(r.errors, format) }
func (r *recorder) Fatalf(format string, args ...any) { panic(format) }
func (r *recorder) Cleanup(f func())                  {}

// TestClaimsReachTheHandler: a unary handler and a streaming one read the
// token's claims with accesstoken.ClaimsFrom, the HTTP side's accessor.
func TestClaimsReachTheHandler(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, grpcauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{"/grpc.testing.TestService/": {scope.AdminWebAPI}}})
	c := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...)))
	ctx := withToken(context.Background(), iss.Token(t, scope.AdminWebAPI))

	resp, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil || resp.GetUsername() != iss.ClientID || resp.GetOauthScope() != scope.AdminWebAPI {
		t.Fatalf("UnaryCall: %v, %v; want the client ID %q and its scope", resp, err, iss.ClientID)
	}
	s, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		m, err := s.Recv()
		if err != nil || string(m.GetPayload().GetBody()) != iss.ClientID {
			t.Fatalf("stream message %d: %v, %v; want the client ID", i, m, err)
		}
	}
}

// TestMethodNamedNowhereIsRefused: without DefaultScopes, a method the
// configuration names nowhere is refused whatever the token (fail
// closed); with them, it takes them.
func TestMethodNamedNowhereIsRefused(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	tok := iss.Token(t, scope.AdminWebAPI, scope.ConnectWebAPI)
	ctx := withToken(context.Background(), tok)

	closed := newAuth(t, grpcauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{unaryCall: {scope.AdminWebAPI}}})
	c := testgrpc.NewTestServiceClient(dial(t, serve(t, closed.ServerOptions()...)))
	if _, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("the listed method: %v", err)
	}
	_, err := c.EmptyCall(ctx, &testgrpc.Empty{})
	if st := status.Convert(err); st.Code() != codes.PermissionDenied || st.Message() != "insufficient_scope: no scope grants this method" {
		t.Errorf("a method named nowhere: %v, want PermissionDenied \"insufficient_scope: no scope grants this method\"", err)
	}
	if _, err := c.EmptyCall(context.Background(), &testgrpc.Empty{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a method named nowhere, without a token: %v, want Unauthenticated", err)
	}

	open := newAuth(t, grpcauth.Config{Validator: iss.Validator(), Scopes: map[string][]string{unaryCall: {scope.AdminWebAPI}}, DefaultScopes: []string{scope.ConnectWebAPI}})
	c = testgrpc.NewTestServiceClient(dial(t, serve(t, open.ServerOptions()...)))
	if _, err := c.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
		t.Errorf("a method named nowhere, with DefaultScopes and a token that has them: %v", err)
	}
	adminOnly := withToken(context.Background(), iss.Token(t, scope.AdminWebAPI))
	_, err = c.EmptyCall(adminOnly, &testgrpc.Empty{})
	if st := status.Convert(err); st.Code() != codes.PermissionDenied || st.Message() != "insufficient_scope: pd_ConnectWebApi" {
		t.Errorf("DefaultScopes, a token without them: %v, want PermissionDenied naming pd_ConnectWebApi", err)
	}
}

// TestHealthAndReflectionArePublicOnlyWhenSaid: PublicHealth and
// PublicReflection open those services to calls without a token; without
// them, they are checked like any other.
func TestHealthAndReflectionArePublicOnlyWhenSaid(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	check := func(conn grpc.ClientConnInterface) (healthErr, reflectionErr error) {
		ctx := context.Background()
		_, healthErr = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		s, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			return healthErr, err
		}
		if err := s.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
			_, err = s.Recv()
			return healthErr, err
		}
		_, reflectionErr = s.Recv()
		return healthErr, reflectionErr
	}
	open := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}, PublicHealth: true, PublicReflection: true})
	if h, r := check(dial(t, serve(t, open.ServerOptions()...))); h != nil || r != nil {
		t.Errorf("public health and reflection without a token: %v, %v", h, r)
	}
	closed := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	if h, r := check(dial(t, serve(t, closed.ServerOptions()...))); status.Code(h) != codes.Unauthenticated || status.Code(r) != codes.Unauthenticated {
		t.Errorf("health and reflection not made public, without a token: %v, %v; want Unauthenticated", h, r)
	}
}

// TestRefusalsAreLogged: a refused call is logged with its method, code
// and reason, and never with the token.
func TestRefusalsAreLogged(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	var buf bytes.Buffer
	auth := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	c := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...)))
	expired := iss.ExpiredToken(t, scope.AdminWebAPI)
	if _, err := c.UnaryCall(withToken(context.Background(), expired), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("an expired token: %v", err)
	}
	line := buf.String()
	for _, want := range []string{"method=" + unaryCall, "code=unauthenticated", "reason=expired"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	sig := expired[strings.LastIndexByte(expired, '.')+1:]
	if strings.Contains(line, sig[:16]) || strings.Contains(line, expired[:16]) {
		t.Errorf("log %q holds part of the token", line)
	}
}

// TestRefusalsCarryErrorInfo: a refusal's status carries its reason as
// a google.rpc.ErrorInfo detail, where an HTTP answer has its challenge,
// for unary and streaming calls alike.
func TestRefusalsCarryErrorInfo(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	c := testgrpc.NewTestServiceClient(dial(t, serve(t, auth.ServerOptions()...)))
	for _, r := range []struct {
		name, token, reason string
		metadata            map[string]string
	}{
		{"no token", "", "NO_TOKEN", nil},
		{"an expired token", iss.ExpiredToken(t, scope.AdminWebAPI), "EXPIRED", map[string]string{"error": "invalid_token", "error_description": "expired"}},
		{"a token without the scope", iss.Token(t, scope.ConnectWebAPI), "INSUFFICIENT_SCOPE", map[string]string{"error": "insufficient_scope", "scope": scope.AdminWebAPI}},
	} {
		ctx := context.Background()
		if r.token != "" {
			ctx = withToken(ctx, r.token)
		}
		for kind, call := range map[string]func(context.Context) error{"unary": unary(c), "server-streaming": serverStream(c), "bidirectional": duplex(c)} {
			var infos []*errdetails.ErrorInfo
			st := status.Convert(call(ctx))
			for _, d := range st.Details() {
				if ei, ok := d.(*errdetails.ErrorInfo); ok {
					infos = append(infos, ei)
				}
			}
			if len(infos) != 1 || infos[0].GetReason() != r.reason || infos[0].GetDomain() != "idsauth" || !maps.Equal(infos[0].GetMetadata(), r.metadata) {
				t.Errorf("%s, %s: %v with %v, want one ErrorInfo %s in idsauth with %v", r.name, kind, st.Code(), st.Details(), r.reason, r.metadata)
			}
		}
	}
}

// TestNewRefusesBadConfig: no validator, or a policy that could not do
// what it says, is an error at construction.
func TestNewRefusesBadConfig(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for name, cfg := range map[string]grpcauth.Config{
		"no validator":           {DefaultScopes: []string{scope.AdminWebAPI}},
		"not a method name":      {Validator: iss.Validator(), Scopes: map[string][]string{"UnaryCall": {scope.AdminWebAPI}}},
		"a scope misspelt":       {Validator: iss.Validator(), DefaultScopes: []string{"pd_adminwebapi"}},
		"a method without scope": {Validator: iss.Validator(), Scopes: map[string][]string{unaryCall: nil}},
	} {
		if _, err := grpcauth.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "grpcauth.Config.") {
			t.Errorf("%s: %v, want an error naming the grpcauth.Config field", name, err)
		}
	}
}
