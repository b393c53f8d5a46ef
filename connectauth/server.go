package connectauth

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/rpcauth"
)

// Config says how a handler's calls are checked. Every procedure is named
// here, as public or with its scopes, or takes DefaultScopes; without
// DefaultScopes, a procedure named nowhere is refused to every caller, so
// that a procedure added later stays closed until someone decides who may
// call it.
type Config struct {
	// Validator checks each token: an *accesstoken.Validator (JWTs,
	// reference tokens, or both), as for an HTTP route. Required.
	Validator accesstoken.TokenValidator

	// Scopes maps a procedure, "/package.Service/Method", or a whole
	// service, "/package.Service/", to the scopes a call needs: any one of
	// them admits it. A procedure's own entry comes before its service's.
	// Each list holds at least one scope.
	Scopes map[string][]string

	// DefaultScopes are the scopes of a procedure that neither Scopes nor
	// Public names. Nil refuses such a procedure with
	// CodePermissionDenied, whatever the token (fail closed).
	DefaultScopes []string

	// Public are procedures or whole services served without a token: the
	// interceptor passes their calls untouched (no claims in the
	// context). Nil means none.
	Public []string
	// PublicHealth serves the gRPC health checking service
	// (grpc.health.v1.Health, connectrpc.com/grpchealth) without a token.
	// False checks it like any other service.
	PublicHealth bool
	// PublicReflection serves server reflection (grpc.reflection.v1 and
	// v1alpha, connectrpc.com/grpcreflect) without a token. It tells
	// anyone the service's whole API. False checks it like any other.
	PublicReflection bool

	// ForwardedCert, when set, is where a TLS-terminating proxy puts its
	// client's certificate, read by ClientCertificate from the proxies'
	// calls alone. Nil: a call's certificate is its TLS connection's.
	ForwardedCert *ForwardedCert

	// Logger logs every refused call at Info level: the procedure, the
	// code and the reason (a fixed code such as "expired"), never the
	// token. Nil logs nothing.
	Logger *slog.Logger
}

// Interceptor checks the calls of Connect handlers: give it to
// connect.WithInterceptors. It checks handler calls only (a client's
// calls pass untouched: see ClientInterceptor). Make one with New; it is
// safe for concurrent use.
type Interceptor struct {
	policy *rpcauth.Policy
	tokens rpcauth.Validator // tokens, boxed once
	certs  clientcert.Source // where ClientCertificate finds a call's certificate
}

var _ connect.Interceptor = (*Interceptor)(nil)

// New checks cfg and returns its interceptor. A setting that could never
// do what it says is an error: a name that is not a procedure or a
// service, a procedure without scopes, a scope that no token can carry or
// that differs from a known one only in case, a procedure both public and
// scoped, a ForwardedCert without its header or proxies.
func New(cfg Config) (*Interceptor, error) {
	if cfg.Validator == nil {
		return nil, errors.New("connectauth.Config.Validator is nil")
	}
	p, err := rpcauth.NewPolicy("connectauth.Config", rpcauth.Config{
		Scopes: cfg.Scopes, DefaultScopes: cfg.DefaultScopes,
		Public: cfg.Public, PublicHealth: cfg.PublicHealth, PublicReflection: cfg.PublicReflection,
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	certs, err := cfg.ForwardedCert.source()
	if err != nil {
		return nil, errors.New("connectauth.Config.ForwardedCert." + err.Error())
	}
	return &Interceptor{policy: p, tokens: tokens{v: cfg.Validator}, certs: certs}, nil
}

// WrapUnary checks a unary call and gives the handler a context with the
// token's claims (accesstoken.ClaimsFrom), or answers the refusal.
func (i *Interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, ref := i.policy.Admit(ctx, req.Spec().Procedure, req.Header().Values("Authorization"), i.tokens)
		if ref != nil {
			return nil, refusal(ref, req.Peer().Protocol)
		}
		return next(ctx, req)
	}
}

// WrapStreamingClient leaves a client's streams alone.
func (i *Interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler checks a streaming call before the handler runs,
// and gives the handler a context with the token's claims, or answers the
// refusal. The stream ends at the token's expiry (its "exp"): the
// handler's context ends then, a message sent or received after it is
// refused, and the call, whatever its handler returns, ends
// CodeUnauthenticated "invalid_token: expired".
func (i *Interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		procedure, protocol := conn.Spec().Procedure, conn.Peer().Protocol
		ctx, until, ref := i.policy.AdmitUntil(ctx, procedure, conn.RequestHeader().Values("Authorization"), i.tokens)
		if ref != nil {
			return refusal(ref, protocol)
		}
		if until.IsZero() { // a public procedure, or a token that never expires
			return next(ctx, conn)
		}
		ctx, cancel := context.WithDeadlineCause(ctx, until, errExpired)
		defer cancel()
		err := next(ctx, &expiringConn{StreamingHandlerConn: conn, until: until})
		if !time.Now().Before(until) {
			i.policy.Ended(ctx, procedure)
			return refusal(rpcauth.Expired(), protocol)
		}
		return err
	}
}

// errExpired is the cause of a stream's context ended at its token's
// expiry.
var errExpired = errors.New("connectauth: the token expired")

// expiringConn is a stream that refuses to send or receive a message past
// its token's expiry.
type expiringConn struct {
	connect.StreamingHandlerConn
	until time.Time
}

func (c *expiringConn) Send(m any) error {
	if err := c.expired(); err != nil {
		return err
	}
	return c.StreamingHandlerConn.Send(m)
}

// Receive refuses a message received after the expiry, and so one that
// arrived while it waited past it.
func (c *expiringConn) Receive(m any) error {
	if err := c.expired(); err != nil {
		return err
	}
	if err := c.StreamingHandlerConn.Receive(m); err != nil {
		return err
	}
	return c.expired()
}

// expired is the refusal of a message past the token's expiry; nil
// before it.
func (c *expiringConn) expired() error {
	if time.Now().Before(c.until) {
		return nil
	}
	return refusal(rpcauth.Expired(), c.Peer().Protocol)
}

// refusal is a refusal's error over protocol (connect.ProtocolConnect,
// ProtocolGRPC, ProtocolGRPCWeb): its code and message, its reason as a
// google.rpc.ErrorInfo detail (rpcauth.Refusal.Info), and, where it can
// go, its challenge and, as every HTTP refusal of the contract,
// Cache-Control: no-store (a Connect GET may be cached). Over the Connect
// protocol they are headers of the HTTP answer (of a unary call) or the
// metadata of the stream's end; over gRPC-Web, headers of a trailers-only
// answer or trailers in its body. Over gRPC they would be HTTP/2
// trailers, which Go's HTTP/2 server drops, logging each: the detail
// alone says why.
func refusal(r *rpcauth.Refusal, protocol string) error {
	code := connect.CodeUnauthenticated
	switch r.Kind {
	case rpcauth.BadRequest:
		code = connect.CodeInvalidArgument
	case rpcauth.InsufficientScope:
		code = connect.CodePermissionDenied
	}
	err := connect.NewError(code, errors.New(r.Message))
	reason, metadata := r.Info()
	if d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: reason, Domain: rpcauth.Domain, Metadata: metadata}); derr == nil {
		err.AddDetail(d)
	}
	if protocol != connect.ProtocolGRPC {
		err.Meta().Set("WWW-Authenticate", r.Challenge(realm))
		err.Meta().Set("Cache-Control", "no-store")
	}
	return err
}
