package connectauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/origin"
	"github.com/idsauth/idsauth/internal/rpcauth"
)

// ClientConfig says where a Connect client's tokens come from and where
// they may go.
type ClientConfig struct {
	// Tokens is the client's registration at the identity service and
	// what it asks for: ClientID, ClientSecret or Key, BaseURL or
	// TokenURL, Scopes. Its Origins, or else the origin of its BaseURL,
	// are the only origins that get the token, each "https://host[:port]";
	// DPoPKey must be nil (a Connect call carries no DPoP proof).
	// Required.
	Tokens *client.Config

	// InsecureLoopback allows an origin "http://host[:port]" whose host is
	// "localhost" or a loopback address (127.0.0.0/8, ::1): for tests and
	// a sidecar on the same host. False, the default, allows https
	// origins only.
	InsecureLoopback bool
}

// ClientInterceptor adds a client's token to the calls of a Connect
// client, unary and streaming, and retries a call once with a new token
// when the handler answers CodeUnauthenticated with the ErrorInfo of an
// invalid token (domain "idsauth", error "invalid_token": a rotated key,
// a revoked token, skewed clocks): the token sent is dropped from
// the cache, and a new one is used only if it differs, never the same
// token twice. A stream is retried only while nothing has been received
// and at most one message sent, since the messages after that cannot be
// replayed; the second refusal comes back as it is.
//
// The token goes onto the wire only through the HTTP client HTTPClient
// returns, which sees each request's URL: a request whose origin
// (scheme, host and port) is not one of the configuration's is refused
// without being sent, so that an https origin never gets its token over
// plain HTTP. A call made through another HTTP client carries no token.
// Make one with NewClientInterceptor; it is safe for concurrent use.
//
//	tokens, err := connectauth.NewClientInterceptor(ctx, connectauth.ClientConfig{Tokens: cfg})
//	c := connect.NewClient[Req, Resp](tokens.HTTPClient(http.DefaultClient), url, connect.WithInterceptors(tokens))
type ClientInterceptor struct {
	tokens  *client.Tokens
	origins map[string]bool // "scheme://host:port" (internal/origin)
}

var _ connect.Interceptor = (*ClientInterceptor)(nil)

// NewClientInterceptor returns the interceptor of cfg. ctx supplies values
// (not cancellation) to token requests; each call's own context bounds
// how long it waits for one.
func NewClientInterceptor(ctx context.Context, cfg ClientConfig) (*ClientInterceptor, error) {
	switch {
	case cfg.Tokens == nil:
		return nil, errors.New("connectauth.ClientConfig.Tokens is nil")
	case cfg.Tokens.DPoPKey != nil:
		return nil, errors.New("connectauth.ClientConfig.Tokens.DPoPKey is set: a Connect call carries no DPoP proof, and a DPoP-bound token works only with one")
	}
	list := cfg.Tokens.Origins
	if len(list) == 0 && cfg.Tokens.BaseURL != "" {
		list = []string{cfg.Tokens.BaseURL}
	}
	if len(list) == 0 {
		return nil, errors.New("connectauth.ClientConfig.Tokens: neither Origins nor BaseURL says where the token may go")
	}
	origins := map[string]bool{}
	for _, o := range list {
		u, err := url.Parse(o)
		switch {
		case err != nil || u.Host == "":
			return nil, fmt.Errorf("connectauth.ClientConfig.Tokens: the origin %q is not a URL with a host", o)
		case strings.EqualFold(u.Scheme, "https"),
			strings.EqualFold(u.Scheme, "http") && cfg.InsecureLoopback && rpcauth.Loopback(u.Host):
			origins[origin.Of(u)] = true
		default:
			return nil, fmt.Errorf("connectauth.ClientConfig.Tokens: the origin %q has no transport security; only https, or http to a loopback host with InsecureLoopback", o)
		}
	}
	return &ClientInterceptor{tokens: cfg.Tokens.Tokens(ctx), origins: origins}, nil
}

// HTTPClient returns a copy of base (nil: http.DefaultClient) that sends
// the interceptor's token with the requests of its calls whose origin
// (scheme, host and port) is one of the configuration's, and refuses the
// others, CodeUnauthenticated "no token sent", without sending them.
// Requests of no call of the interceptor go as they are. Give it to
// connect.NewClient with the interceptor.
func (c *ClientInterceptor) HTTPClient(base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	out := *base
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out.Transport = &transport{base: rt, origins: c.origins}
	return &out
}

// attempt is the token of one attempt of a call, from the interceptor to
// the transport in the request's context; seen says whether the
// transport saw it.
type attempt struct {
	token string
	seen  atomic.Bool
}

type attemptKey struct{}

func withAttempt(ctx context.Context, token string) (context.Context, *attempt) {
	a := &attempt{token: token}
	return context.WithValue(ctx, attemptKey{}, a), a
}

// transport is the http.RoundTripper of HTTPClient's clients.
type transport struct {
	base    http.RoundTripper
	origins map[string]bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	a, ok := req.Context().Value(attemptKey{}).(*attempt)
	if !ok {
		return t.base.RoundTrip(req)
	}
	a.seen.Store(true)
	if !t.origins[origin.Of(req.URL)] {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errNotOrigin
	}
	r := *req
	r.Header = req.Header.Clone()
	r.Header.Set("Authorization", "Bearer "+a.token)
	return t.base.RoundTrip(&r)
}

var (
	errNotOrigin = connect.NewError(connect.CodeUnauthenticated, errors.New("connectauth: no token sent: the call's origin (scheme, host and port) is not an origin of ClientConfig.Tokens"))
	errNotSent   = connect.NewError(connect.CodeUnauthenticated, errors.New("connectauth: no token sent: give connect.NewClient the ClientInterceptor's HTTPClient"))
)

// unsent is the call's error, or errNotSent when the call was refused
// CodeUnauthenticated without its token ever reaching the interceptor's
// transport: another HTTP client sent it, without the token.
func unsent(a *attempt, err error) error {
	if connect.CodeOf(err) == connect.CodeUnauthenticated && !a.seen.Load() {
		return errNotSent
	}
	return err
}

// invalidToken reports whether err is a handler's invalid_token answer:
// CodeUnauthenticated, with the ErrorInfo that says so.
func invalidToken(err error) bool {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnauthenticated {
		return false
	}
	for _, d := range ce.Details() {
		v, err := d.Value()
		if info, ok := v.(*errdetails.ErrorInfo); err == nil && ok && rpcauth.IsInvalidToken(info.GetDomain(), info.GetMetadata()) {
			return true
		}
	}
	return false
}

// renew drops the rejected token and returns a new one, if there is one
// that differs.
func (c *ClientInterceptor) renew(ctx context.Context, rejected string) (string, bool) {
	c.tokens.Drop(rejected)
	fresh, err := c.tokens.Token(ctx)
	if err != nil || fresh.AccessToken == rejected {
		return "", false
	}
	return fresh.AccessToken, true
}

// WrapUnary sends a client's unary call with the token, and once more
// with a new one on invalid_token. A token request that fails is the
// call's error as it is: a *client.TokenError, for errors.As.
func (c *ClientInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient {
			return next(ctx, req)
		}
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return nil, err
		}
		actx, a := withAttempt(ctx, tok.AccessToken)
		resp, err := next(actx, req)
		if err = unsent(a, err); !invalidToken(err) {
			return resp, err
		}
		fresh, ok := c.renew(ctx, tok.AccessToken)
		if !ok {
			return resp, err
		}
		actx, a = withAttempt(ctx, fresh)
		resp, err = next(actx, req)
		return resp, unsent(a, err)
	}
}

// WrapStreamingHandler leaves handlers alone.
func (c *ClientInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
