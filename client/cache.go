package client

import (
	"context"
	"errors"
	"net/http"

	"golang.org/x/oauth2"
)

// Tokens is the client's token cache, for a caller that sends the token
// itself and sees the answer, as Client's transport does: gRPC's
// per-call credentials, a Connect interceptor. It keeps the rules of
// TokenSource (cached, renewed RenewBefore its expiry, one token request
// for concurrent callers, a refusal remembered for its Retry-After) and
// adds Drop, the half of Client's retry that a cache must do: on an
// invalid_token answer, drop the token sent, take a new one from Token,
// and, if it differs, retry once.
//
// Make one with Config.Tokens; a zero Tokens gives only an error.
type Tokens struct {
	t *tokens
}

// Tokens returns the client's token cache. ctx supplies values (not
// cancellation) to token requests, as for Client; each call of Token
// waits no longer than its own context allows. Like TokenSource, it sends
// the token wherever its user sends it: the origin and transport checks
// are the user's.
func (c *Config) Tokens(ctx context.Context) *Tokens {
	base := c.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	return &Tokens{t: c.newTokens(ctx, base)}
}

// Token returns the cached token while it is not about to expire, or a
// new one, waiting for the token request no longer than ctx allows. A
// refused request is a *TokenError. The token is a copy: changing it
// changes nothing in the cache.
func (s *Tokens) Token(ctx context.Context) (*oauth2.Token, error) {
	if s == nil || s.t == nil {
		return nil, errors.New("client: a Tokens not made by Config.Tokens")
	}
	tok, err := s.t.current(ctx)
	if err != nil {
		return nil, err
	}
	cp := *tok
	return &cp, nil
}

// Drop forgets accessToken, if it is still the cached token, so that the
// next Token fetches a new one: call it when the service rejected
// accessToken as invalid_token. A token renewed meanwhile is kept.
func (s *Tokens) Drop(accessToken string) {
	if s == nil || s.t == nil {
		return
	}
	s.t.drop(accessToken)
}
