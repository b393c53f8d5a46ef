package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/scope"
)

// TestTokensDropGivesANewToken: Tokens caches one token; Drop of it makes
// the next Token fetch a new one, while Drop of a token no longer cached
// (a stale caller's) leaves the cache be, so that two callers rejected
// with the same token make one token request between them.
func TestTokensDropGivesANewToken(t *testing.T) {
	w := newWorld(t, 0, nil)
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.ids.URL, Scopes: []string{scope.AdminWebAPI}}
	ctx := context.Background()
	toks := cfg.Tokens(ctx)

	first, err := toks.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := toks.Token(ctx); err != nil || again.AccessToken != first.AccessToken {
		t.Fatalf("a second Token: %v, %v; want the cached token", again, err)
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token requests for two Token calls, want 1", n)
	}

	toks.Drop(first.AccessToken)
	second, err := toks.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.AccessToken == first.AccessToken {
		t.Fatal("Token after Drop gave the dropped token")
	}
	if n := w.tokenCalls.Load(); n != 2 {
		t.Errorf("%d token requests after Drop, want 2", n)
	}

	toks.Drop(first.AccessToken) // a stale caller's drop
	if third, err := toks.Token(ctx); err != nil || third.AccessToken != second.AccessToken {
		t.Errorf("after dropping a token no longer cached: %v, %v; want the cached one kept", third, err)
	}
	if n := w.tokenCalls.Load(); n != 2 {
		t.Errorf("%d token requests after a stale Drop, want still 2", n)
	}
}

// TestTokensErrors: a refused token request is a *client.TokenError; a
// zero Tokens gives an error, not a panic.
func TestTokensErrors(t *testing.T) {
	w := newWorld(t, 0, nil)
	cfg := client.Config{ClientID: "reporting", ClientSecret: "wrong", BaseURL: w.ids.URL, Scopes: []string{scope.AdminWebAPI}}
	_, err := cfg.Tokens(context.Background()).Token(context.Background())
	var te *client.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" {
		t.Fatalf("Token with a wrong secret: %v, want a *TokenError invalid_client", err)
	}
	var zero client.Tokens
	if _, err := zero.Token(context.Background()); err == nil {
		t.Error("a zero Tokens gave a token")
	}
	zero.Drop("x")
}
