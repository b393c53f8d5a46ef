package grpcauth

import (
	"context"
	"errors"
	"net/url"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/rpcauth"
)

// ClientConfig says where a gRPC client's tokens come from and where they
// may go.
type ClientConfig struct {
	// Tokens is the client's registration at the identity service and
	// what it asks for: ClientID, ClientSecret or Key, BaseURL or
	// TokenURL, Scopes, and the other settings of a token request. Its
	// Origins are not used (the token goes to the connection the
	// credentials are given to), and DPoPKey must be nil: a gRPC call
	// carries no DPoP proof. Required.
	Tokens *client.Config

	// InsecureLoopback lets the token go over a connection without
	// transport security (insecure.NewCredentials) when the call's target
	// is this machine: "localhost" or a loopback address (127.0.0.0/8,
	// ::1), as the target's authority names it; or over
	// local.NewCredentials, which itself refuses any other peer. For
	// tests, and a sidecar on the same host. False, the default, sends a
	// token only over a connection with privacy and integrity (TLS, ALTS).
	InsecureLoopback bool
}

// Credentials sends a client's tokens with every call of a gRPC client
// connection, as credentials.PerRPCCredentials, and, through its
// interceptors, retries a call once with a new token when the server
// answers codes.Unauthenticated with the ErrorInfo of an invalid token
// (domain "idsauth", error "invalid_token": a rotated key, a revoked
// token, skewed clocks): the token sent is dropped from the cache, and a
// new one is used only if it differs, never the same token twice. A
// stream is retried only while nothing has been received and at most one
// message sent (a server-streaming call), since the messages after that
// cannot be replayed; the second refusal comes back as it is.
//
// Install both halves with DialOptions. Credentials is safe for
// concurrent use; make one with NewCredentials.
type Credentials struct {
	tokens           *client.Tokens
	insecureLoopback bool
}

// NewCredentials returns the credentials of cfg. ctx supplies values (not
// cancellation) to token requests; each call's own context bounds how
// long it waits for one.
func NewCredentials(ctx context.Context, cfg ClientConfig) (*Credentials, error) {
	switch {
	case cfg.Tokens == nil:
		return nil, errors.New("grpcauth.ClientConfig.Tokens is nil")
	case cfg.Tokens.DPoPKey != nil:
		return nil, errors.New("grpcauth.ClientConfig.Tokens.DPoPKey is set: a gRPC call carries no DPoP proof, and a DPoP-bound token works only with one")
	}
	return &Credentials{tokens: cfg.Tokens.Tokens(ctx), insecureLoopback: cfg.InsecureLoopback}, nil
}

// DialOptions install the credentials and both retrying interceptors:
// grpc.NewClient(target, append(creds.DialOptions(), grpc.WithTransportCredentials(tlsCreds))...).
func (c *Credentials) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithPerRPCCredentials(c),
		grpc.WithChainUnaryInterceptor(c.Unary),
		grpc.WithChainStreamInterceptor(c.Stream),
	}
}

// errInsecure is what a call gets when its connection could carry the
// token in the clear. It is the client's own refusal: no token was sent.
var errInsecure = status.Error(codes.Unauthenticated, "grpcauth: no token sent: the connection has no transport security, and its target is not a loopback address allowed by ClientConfig.InsecureLoopback")

// GetRequestMetadata returns the call's "authorization" metadata: the
// token the interceptors chose for this attempt, or the cached one. It
// refuses a connection without transport security unless
// InsecureLoopback allows its target.
func (c *Credentials) GetRequestMetadata(ctx context.Context, uri ...string) (map[string]string, error) {
	if err := c.checkTransport(ctx, uri); err != nil {
		return nil, err
	}
	tok, ok := attemptToken(ctx)
	if !ok {
		t, err := c.tokens.Token(ctx)
		if err != nil {
			return nil, err
		}
		tok = t.AccessToken
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

// RequireTransportSecurity tells grpc-go to refuse a connection without
// transport security, unless InsecureLoopback is set: then
// GetRequestMetadata checks the target itself.
func (c *Credentials) RequireTransportSecurity() bool { return !c.insecureLoopback }

func (c *Credentials) checkTransport(ctx context.Context, uri []string) error {
	ri, ok := credentials.RequestInfoFromContext(ctx)
	if !ok {
		return errInsecure // not called by grpc-go's transport: nothing says the connection is safe
	}
	if credentials.CheckSecurityLevel(ri.AuthInfo, credentials.PrivacyAndIntegrity) == nil {
		return nil
	}
	if !c.insecureLoopback {
		return errInsecure
	}
	if ri.AuthInfo != nil && ri.AuthInfo.AuthType() == "local" {
		return nil // local.NewCredentials connects to a local peer only
	}
	// The audience grpc-go passes is "https://" + the target's authority
	// + the service's path, whatever the transport.
	if len(uri) > 0 {
		if u, err := url.Parse(uri[0]); err == nil && rpcauth.Loopback(u.Host) {
			return nil
		}
	}
	return errInsecure
}

// invalidToken reports whether err is a server's invalid_token answer:
// Unauthenticated, with the ErrorInfo that says so.
func invalidToken(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unauthenticated {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && rpcauth.IsInvalidToken(info.GetDomain(), info.GetMetadata()) {
			return true
		}
	}
	return false
}

// Unary is the grpc.UnaryClientInterceptor that retries once on
// invalid_token. A token request that fails is the call's error as it
// is: a *client.TokenError, for errors.As.
func (c *Credentials) Unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	tok, err := c.tokens.Token(ctx)
	if err != nil {
		return err
	}
	err = invoker(withAttempt(ctx, tok.AccessToken), method, req, reply, cc, opts...)
	if !invalidToken(err) {
		return err
	}
	fresh, ok := c.renew(ctx, tok.AccessToken)
	if !ok {
		return err
	}
	return invoker(withAttempt(ctx, fresh), method, req, reply, cc, opts...)
}

// renew drops the rejected token and returns a new one, if there is one
// that differs.
func (c *Credentials) renew(ctx context.Context, rejected string) (string, bool) {
	c.tokens.Drop(rejected)
	fresh, err := c.tokens.Token(ctx)
	if err != nil || fresh.AccessToken == rejected {
		return "", false
	}
	return fresh.AccessToken, true
}

type attemptKey struct{}

// withAttempt returns ctx carrying the token of one attempt of a call,
// from the interceptor to GetRequestMetadata.
func withAttempt(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, attemptKey{}, token)
}

func attemptToken(ctx context.Context) (string, bool) {
	token, ok := ctx.Value(attemptKey{}).(string)
	return token, ok
}
