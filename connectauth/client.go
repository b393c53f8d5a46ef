package connectauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/rpcauth"
)

// ClientConfig says where a Connect client's tokens come from and where
// they may go.
type ClientConfig struct {
	// Tokens is the client's registration at the identity service and
	// what it asks for: ClientID, ClientSecret or Key, BaseURL or
	// TokenURL, Scopes. Its Origins, or else the origin of its BaseURL,
	// are the only hosts that get the token, each "https://host[:port]";
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
// when the handler answers CodeUnauthenticated "invalid_token" (a rotated
// key, a revoked token, skewed clocks): the token sent is dropped from
// the cache, and a new one is used only if it differs, never the same
// token twice. A stream is retried only while nothing has been received
// and at most one message sent, since the messages after that cannot be
// replayed; the second refusal comes back as it is.
//
// A call to a host that is not one of the origins is refused without
// sending it. The interceptor sees the host and port a call goes to
// (connect.Peer), not its scheme: give connect.NewClient the same https
// URL as the origins. Make one with NewClientInterceptor; it is safe for
// concurrent use.
type ClientInterceptor struct {
	tokens *client.Tokens
	hosts  map[string]bool // "host:port", and "host" for a default port
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
	origins := cfg.Tokens.Origins
	if len(origins) == 0 && cfg.Tokens.BaseURL != "" {
		origins = []string{cfg.Tokens.BaseURL}
	}
	if len(origins) == 0 {
		return nil, errors.New("connectauth.ClientConfig.Tokens: neither Origins nor BaseURL says where the token may go")
	}
	hosts := map[string]bool{}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("connectauth.ClientConfig.Tokens: the origin %q is not a URL with a host", o)
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		switch {
		case strings.EqualFold(u.Scheme, "https"):
			if port == "" || port == "443" {
				hosts[host] = true
				port = "443"
			}
		case strings.EqualFold(u.Scheme, "http") && cfg.InsecureLoopback && rpcauth.Loopback(host):
			if port == "" || port == "80" {
				hosts[host] = true
				port = "80"
			}
		default:
			return nil, fmt.Errorf("connectauth.ClientConfig.Tokens: the origin %q has no transport security; only https, or http to a loopback host with InsecureLoopback", o)
		}
		hosts[net.JoinHostPort(host, port)] = true
	}
	return &ClientInterceptor{tokens: cfg.Tokens.Tokens(ctx), hosts: hosts}, nil
}

// allowed returns the error of a call to addr that must not get the token.
func (c *ClientInterceptor) allowed(addr string) error {
	if c.hosts[strings.ToLower(addr)] {
		return nil
	}
	return connect.NewError(connect.CodeUnauthenticated, errors.New("connectauth: no token sent: the call's host is not an origin of ClientConfig.Tokens"))
}

// invalidToken reports whether err is a handler's invalid_token answer.
func invalidToken(err error) bool {
	var ce *connect.Error
	return errors.As(err, &ce) && ce.Code() == connect.CodeUnauthenticated && rpcauth.IsInvalidToken(ce.Message())
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
		if err := c.allowed(req.Peer().Addr); err != nil {
			return nil, err
		}
		tok, err := c.tokens.Token(ctx)
		if err != nil {
			return nil, err
		}
		req.Header().Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := next(ctx, req)
		if !invalidToken(err) {
			return resp, err
		}
		fresh, ok := c.renew(ctx, tok.AccessToken)
		if !ok {
			return resp, err
		}
		req.Header().Set("Authorization", "Bearer "+fresh)
		return next(ctx, req)
	}
}

// WrapStreamingHandler leaves handlers alone.
func (c *ClientInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
