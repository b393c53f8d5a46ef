package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/scope"
)

// TestTokenSourceFeedsOAuth2Consumers: an oauth2.Transport on the
// TokenSource calls the API with the client's token; 32 concurrent Token
// calls share one token request, and a caller changing its copy changes
// nothing for the others.
func TestTokenSourceFeedsOAuth2Consumers(t *testing.T) {
	w := newWorld(t, 0, nil)
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.ids.URL, Scopes: []string{scope.AdminWebAPI}}
	ts := cfg.TokenSource(context.Background())

	var wg sync.WaitGroup
	toks := make([]*oauth2.Token, 32)
	errs := make([]error, 32)
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			toks[i], errs[i] = ts.Token()
		}()
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i].AccessToken != toks[0].AccessToken || toks[i].TokenType != "Bearer" || toks[i].Expiry.IsZero() {
			t.Fatalf("Token %d: %+v, %v", i, toks[i], errs[i])
		}
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Errorf("%d token requests for 32 concurrent Token calls, want 1", n)
	}
	toks[0].AccessToken = "changed by a caller"
	if again, err := ts.Token(); err != nil || again.AccessToken != toks[1].AccessToken {
		t.Errorf("after a caller changed its copy: %v, %v", again, err)
	}

	hc := oauth2.NewClient(context.Background(), ts)
	if status, body, err := get(t, hc, w.api.URL); err != nil || status != 200 || body != "ok " {
		t.Fatalf("the API through oauth2.Transport: %d %q %v", status, body, err)
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Errorf("%d token requests after the API call, want still 1 (cached)", n)
	}
}

// TestTokenSourceErrorsAreTyped: a refused token request is a
// *client.TokenError from Token, as from Client.
func TestTokenSourceErrorsAreTyped(t *testing.T) {
	w := newWorld(t, 0, nil)
	cfg := client.Config{ClientID: "reporting", ClientSecret: "wrong", BaseURL: w.ids.URL, Scopes: []string{scope.AdminWebAPI}}
	_, err := cfg.TokenSource(context.Background()).Token()
	var te *client.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" || te.StatusCode != 401 {
		t.Fatalf("Token with a wrong secret: %v, want a *TokenError invalid_client 401", err)
	}
}
