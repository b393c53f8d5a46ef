package benchmarks

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/golang-jwt/jwt/v5"
	grpcmwauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/scope"
)

// The gRPC and Connect interceptors are called as grpc-go and connect call
// them, with what they pass: a context holding the incoming metadata (or
// a request with its header), the method's info, and a handler that does
// nothing. The HTTP rows are BenchmarkMiddleware's bare and warm ones,
// for the budget: grpcauth over a bare interceptor may add at most what
// RequireBearer+RequireScope add over a bare handler, plus 0.2 µs.

const benchMethod = "/grpc.testing.TestService/UnaryCall"

var (
	unaryInfo  = &grpc.UnaryServerInfo{FullMethod: benchMethod}
	streamInfo = &grpc.StreamServerInfo{FullMethod: benchMethod}
	okReply    = &struct{}{}
)

func nopHandler(ctx context.Context, req any) (any, error) { return okReply, nil }
func nopStream(srv any, ss grpc.ServerStream) error        { return nil }

// ctxStream reads its stream's context, as a handler that waits on it
// does: grpcauth then sets the timer that ends it at the token's expiry.
func ctxStream(srv any, ss grpc.ServerStream) error { _ = ss.Context(); return nil }

func bareUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	return h(ctx, req)
}

func bareStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, ss)
}

// serverStream is the ServerStream a stream interceptor gets: here only
// its Context is read.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

func incoming(token string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+token, "content-type", "application/grpc", "user-agent", "grpc-go/1.84.0"))
}

func runUnary(b *testing.B, i grpc.UnaryServerInterceptor, token string) {
	ctx := incoming(token)
	if _, err := i(ctx, nil, unaryInfo, nopHandler); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = i(ctx, nil, unaryInfo, nopHandler)
	}
}

func runStream(b *testing.B, i grpc.StreamServerInterceptor, token string) {
	runStreamHandler(b, i, token, nopStream)
}

func runStreamHandler(b *testing.B, i grpc.StreamServerInterceptor, token string, h grpc.StreamHandler) {
	ss := &serverStream{ctx: incoming(token)}
	if err := i(nil, ss, streamInfo, h); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = i(nil, ss, streamInfo, h)
	}
}

func runConnect(b *testing.B, i connect.Interceptor, token string) {
	f := i.WrapUnary(func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) { return nil, nil })
	req := connect.NewRequest(wrapperspb.String("hi"))
	req.Header().Set("Authorization", "Bearer "+token)
	req.Header().Set("Content-Type", "application/proto")
	ctx := context.Background()
	if _, err := f(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = f(ctx, req)
	}
}

// bareConnect passes every call through.
type bareConnect struct{}

func (bareConnect) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }
func (bareConnect) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}
func (bareConnect) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func newValidator(b *testing.B, s *setup) *accesstoken.Validator {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	keys, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{URL: s.jwks.JWKSURL()})
	if err != nil {
		b.Fatal(err)
	}
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: s.jwks.Issuer(), Audience: []string{s.jwks.Issuer() + "/resources"}, Keys: keys})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func grpcAuth(b *testing.B, s *setup) *grpcauth.Interceptor {
	a, err := grpcauth.New(grpcauth.Config{Validator: newValidator(b, s), DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func connectAuth(b *testing.B, s *setup) *connectauth.Interceptor {
	a, err := connectauth.New(connectauth.Config{Validator: newValidator(b, s), DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// grpcMiddlewareJWT is the peer: go-grpc-middleware v2's auth interceptor
// with golang-jwt checking signature, exp, iss and aud, and the scope, as
// its documentation shows (no cache: every call verifies the signature).
func grpcMiddlewareJWT(s *setup) grpc.UnaryServerInterceptor {
	pub := s.key.Public()
	parser := jwt.NewParser(jwt.WithValidMethods([]string{s.key.Alg}), jwt.WithIssuer(s.jwks.Issuer()),
		jwt.WithAudience(s.jwks.Issuer()+"/resources"), jwt.WithExpirationRequired(), jwt.WithLeeway(30*time.Second))
	type claimsKey struct{}
	return grpcmwauth.UnaryServerInterceptor(func(ctx context.Context) (context.Context, error) {
		raw, err := grpcmwauth.AuthFromMD(ctx, "bearer")
		if err != nil {
			return nil, err
		}
		claims := jwt.MapClaims{}
		if _, err := parser.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return pub, nil }); err != nil {
			return nil, status.Error(codes.Unauthenticated, "invalid token")
		}
		sc, _ := claims["scope"].(string)
		if !strings.Contains(" "+sc+" ", " "+scope.AdminWebAPI+" ") {
			return nil, status.Error(codes.PermissionDenied, "insufficient scope")
		}
		return context.WithValue(ctx, claimsKey{}, claims), nil
	})
}

// BenchmarkGRPC calls each interceptor once per iteration with the same
// token (ES256), beside the HTTP middleware's bare and warm rows.
func BenchmarkGRPC(b *testing.B) {
	s := newSetup(b, "ES256")
	b.Run("http-bare", func(b *testing.B) { run(b, bare, s.token) })
	b.Run("http-idsauth-warm", func(b *testing.B) { run(b, idsauth(b, s, 0), s.token) })
	b.Run("grpc-bare-unary", func(b *testing.B) { runUnary(b, bareUnary, s.token) })
	b.Run("grpcauth-unary-warm", func(b *testing.B) { runUnary(b, grpcAuth(b, s).Unary, s.token) })
	b.Run("grpc-bare-stream", func(b *testing.B) { runStream(b, bareStream, s.token) })
	b.Run("grpcauth-stream-warm", func(b *testing.B) { runStream(b, grpcAuth(b, s).Stream, s.token) })
	b.Run("grpc-bare-stream-context", func(b *testing.B) { runStreamHandler(b, bareStream, s.token, ctxStream) })
	b.Run("grpcauth-stream-context-warm", func(b *testing.B) { runStreamHandler(b, grpcAuth(b, s).Stream, s.token, ctxStream) })
	b.Run("connect-bare", func(b *testing.B) { runConnect(b, bareConnect{}, s.token) })
	b.Run("connectauth-warm", func(b *testing.B) { runConnect(b, connectAuth(b, s), s.token) })
	b.Run("go-grpc-middleware-auth+golang-jwt", func(b *testing.B) { runUnary(b, grpcMiddlewareJWT(s), s.token) })
}

// TestGRPCAllocationBudget counts what the interceptors add, in
// allocations, against what RequireBearer+RequireScope add to a bare
// handler: the unary interceptor and Connect's at most as many, the
// stream interceptor one more (the stream that carries the claims).
func TestGRPCAllocationBudget(t *testing.T) {
	res := map[string]testing.BenchmarkResult{}
	for name, f := range map[string]func(*testing.B, *setup){
		"http-bare":    func(b *testing.B, s *setup) { run(b, bare, s.token) },
		"http-warm":    func(b *testing.B, s *setup) { run(b, idsauth(b, s, 0), s.token) },
		"grpc-unary":   func(b *testing.B, s *setup) { runUnary(b, bareUnary, s.token) },
		"grpcauth":     func(b *testing.B, s *setup) { runUnary(b, grpcAuth(b, s).Unary, s.token) },
		"grpc-stream":  func(b *testing.B, s *setup) { runStream(b, bareStream, s.token) },
		"grpcauth-str": func(b *testing.B, s *setup) { runStream(b, grpcAuth(b, s).Stream, s.token) },
		"connect":      func(b *testing.B, s *setup) { runConnect(b, bareConnect{}, s.token) },
		"connectauth":  func(b *testing.B, s *setup) { runConnect(b, connectAuth(b, s), s.token) },
	} {
		res[name] = measured(t, func(b *testing.B) { f(b, newSetup(b, "ES256")) })
	}
	allocs := func(n string) int64 { return res[n].AllocsPerOp() }
	budget := allocs("http-warm") - allocs("http-bare")
	t.Logf("added allocations: HTTP warm %d, grpcauth unary %d, stream %d, connectauth %d", budget,
		allocs("grpcauth")-allocs("grpc-unary"), allocs("grpcauth-str")-allocs("grpc-stream"), allocs("connectauth")-allocs("connect"))
	if got := allocs("grpcauth") - allocs("grpc-unary"); got > budget {
		t.Errorf("grpcauth's unary interceptor adds %d allocations, the HTTP warm path %d", got, budget)
	}
	if got := allocs("grpcauth-str") - allocs("grpc-stream"); got > budget+1 {
		t.Errorf("grpcauth's stream interceptor adds %d allocations, want at most %d", got, budget+1)
	}
	if got := allocs("connectauth") - allocs("connect"); got > budget {
		t.Errorf("connectauth's interceptor adds %d allocations, the HTTP warm path %d", got, budget)
	}
}

var _ http.Handler = bare
