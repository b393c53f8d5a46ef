package grpcauth

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/rpcauth"
)

// Config says how a server's calls are checked. Every method the server
// serves is named here, as public or with its scopes, or takes
// DefaultScopes; without DefaultScopes, a method named nowhere is refused
// to every caller, so that a method added to the service later stays
// closed until someone decides who may call it.
type Config struct {
	// Validator checks each token: an *accesstoken.Validator (JWTs,
	// reference tokens, or both), as for an HTTP route. Required.
	Validator accesstoken.TokenValidator

	// Scopes maps a full method name, "/package.Service/Method", or a
	// whole service, "/package.Service/", to the scopes a call needs: any
	// one of them admits it. A method's own entry comes before its
	// service's. Each list holds at least one scope.
	Scopes map[string][]string

	// DefaultScopes are the scopes of a method that neither Scopes nor
	// Public names. Nil refuses such a method with
	// codes.PermissionDenied, whatever the token (fail closed).
	DefaultScopes []string

	// Public are full method names or whole services served without a
	// token: the interceptors pass their calls untouched (no claims in
	// the context). Nil means none.
	Public []string
	// PublicHealth serves the health checking service
	// (grpc.health.v1.Health) without a token, for load balancers and
	// orchestrators. False checks it like any other service.
	PublicHealth bool
	// PublicReflection serves server reflection (grpc.reflection.v1 and
	// v1alpha), which tools such as grpcurl use to learn the methods,
	// without a token. It tells anyone the service's whole API. False
	// checks it like any other service.
	PublicReflection bool

	// Logger logs every refused call at Info level: the method, the code
	// and the reason (a fixed code such as "expired"), never the token.
	// Nil logs nothing.
	Logger *slog.Logger
}

// Interceptor checks the calls of a gRPC server: Unary and Stream are
// its interceptors. Make one with New; it is safe for concurrent use.
type Interceptor struct {
	policy *rpcauth.Policy
	tokens rpcauth.Validator // tokens, boxed once
}

// New checks cfg and returns its interceptors. A setting that could never
// do what it says is an error: a name that is not a full method name or
// a service, a method without scopes, a scope that no token can carry or
// that differs from a known one only in case, a method both public and
// scoped.
func New(cfg Config) (*Interceptor, error) {
	if cfg.Validator == nil {
		return nil, errors.New("grpcauth.Config.Validator is nil")
	}
	p, err := rpcauth.NewPolicy("grpcauth.Config", rpcauth.Config{
		Scopes: cfg.Scopes, DefaultScopes: cfg.DefaultScopes,
		Public: cfg.Public, PublicHealth: cfg.PublicHealth, PublicReflection: cfg.PublicReflection,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Interceptor{policy: p, tokens: tokens{v: cfg.Validator, certs: clientcert.Connections()}}, nil
}

// ServerOptions are the options that install both interceptors, chained
// after any installed before them: grpc.NewServer(auth.ServerOptions()...).
func (i *Interceptor) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(i.Unary), grpc.ChainStreamInterceptor(i.Stream)}
}

// Unary is the grpc.UnaryServerInterceptor: it checks the call and gives
// the handler a context with the token's claims (accesstoken.ClaimsFrom),
// or answers the refusal.
func (i *Interceptor) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, ref := i.policy.Admit(ctx, info.FullMethod, metadata.ValueFromIncomingContext(ctx, "authorization"), i.tokens)
	if ref != nil {
		return nil, refusal(ref)
	}
	return handler(ctx, req)
}

// Stream is the grpc.StreamServerInterceptor: it checks the call before
// the handler runs, and gives the handler a stream whose Context carries
// the token's claims, or answers the refusal. The stream ends at the
// token's expiry (its "exp"): the stream's Context ends then, a message
// sent or received after it is refused, and the call, whatever its
// handler returns, ends Unauthenticated "invalid_token: expired".
func (i *Interceptor) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	next, until, ref := i.policy.AdmitUntil(ctx, info.FullMethod, metadata.ValueFromIncomingContext(ctx, "authorization"), i.tokens)
	if ref != nil {
		return refusal(ref)
	}
	if next == ctx { // a public method
		return handler(srv, ss)
	}
	s := &serverStream{ServerStream: ss, ctx: next, until: until}
	err := handler(srv, s)
	s.end()
	if expired := s.expired(); expired != nil {
		i.policy.Ended(next, info.FullMethod)
		return expired
	}
	return err
}

// serverStream is a stream whose Context carries the claims and ends at
// the token's expiry. The timer that ends it (four allocations) is set at
// the first call of Context, which a handler makes to wait on it: a
// stream whose handler never reads it pays for none, and its messages
// are refused after the expiry all the same.
type serverStream struct {
	grpc.ServerStream
	ctx   context.Context // the claims'
	until time.Time       // the token's expiry; zero: none

	once   sync.Once
	ending context.Context    // ctx, ended at until; nil until Context is called
	cancel context.CancelFunc // ending's
}

func (s *serverStream) Context() context.Context {
	if s.until.IsZero() {
		return s.ctx
	}
	s.once.Do(s.arm)
	if s.ending == nil { // called after the handler returned
		return s.ctx
	}
	return s.ending
}

func (s *serverStream) arm() {
	s.ending, s.cancel = context.WithDeadlineCause(s.ctx, s.until, errExpired)
}

// end stops the timer, if it was set, and sets none from now on.
func (s *serverStream) end() {
	s.once.Do(func() {})
	if s.cancel != nil {
		s.cancel()
	}
}

// expired is the refusal of a message past the token's expiry; nil
// before it, or without one.
func (s *serverStream) expired() error {
	if s.until.IsZero() || time.Now().Before(s.until) {
		return nil
	}
	return errExpired
}

// errExpired ends a stream at its token's expiry: its status, and the
// cause of its Context's end.
var errExpired = refusal(rpcauth.Expired())

func (s *serverStream) SendMsg(m any) error {
	if err := s.expired(); err != nil {
		return err
	}
	return s.ServerStream.SendMsg(m)
}

// RecvMsg refuses a message received after the expiry, and so one that
// arrived while it waited past it.
func (s *serverStream) RecvMsg(m any) error {
	if err := s.expired(); err != nil {
		return err
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.expired()
}

// refusal is a refusal's status: its code and message, and its reason
// as a google.rpc.ErrorInfo detail (rpcauth.Refusal.Info), where an HTTP
// route's answer has its challenge.
func refusal(r *rpcauth.Refusal) error {
	code := codes.Unauthenticated
	switch r.Kind {
	case rpcauth.BadRequest:
		code = codes.InvalidArgument
	case rpcauth.InsufficientScope:
		code = codes.PermissionDenied
	}
	st := status.New(code, r.Message)
	reason, metadata := r.Info()
	if detailed, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: rpcauth.Domain, Metadata: metadata}); err == nil {
		st = detailed
	}
	return st.Err()
}
