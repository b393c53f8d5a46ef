package client

import (
	"context"
	"net/http"

	"golang.org/x/oauth2"
)

// TokenSource returns an oauth2.TokenSource of the client's tokens, for
// whatever takes one: gRPC's per-RPC credentials (oauth.TokenSource), an
// oauth2.Transport, or a call of your own. It keeps the Client's rules
// but the retry, which belongs to a transport that can see the answer:
// a token is cached and renewed RenewBefore its expiry, concurrent calls
// share one token request, a refused request is an *TokenError remembered
// for its Retry-After (bounded) so that callers do not storm the endpoint,
// and with Key every request carries a new assertion. Unlike Client, it
// sends the token wherever its user sends it: the origin check is the
// user's. With DPoPKey, its tokens are bound to the key (TokenType
// "DPoP") and work only with a proof for each call, which an
// oauth2.Transport or gRPC's credentials do not send: use Client.
//
// ctx bounds how long Token waits for a token request (each request has
// its own FetchTimeout either way), and its oauth2.HTTPClient value, if
// any, is ignored: the token requests go through HTTPClient.
func (c *Config) TokenSource(ctx context.Context) oauth2.TokenSource {
	base := c.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	return &tokenSource{ctx: ctx, tokens: c.newTokens(ctx, base)}
}

type tokenSource struct {
	ctx    context.Context
	tokens *tokens
}

// Token returns the cached token, or a new one.
func (s *tokenSource) Token() (*oauth2.Token, error) {
	tok, err := s.tokens.current(s.ctx)
	if err != nil {
		return nil, err
	}
	// A copy: the caller may change it, and the cache keeps its own.
	cp := *tok
	return &cp, nil
}
