package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/scope"
)

// TestTokenRequestFollowsNoRedirect: a token endpoint that answers 307 or
// 308 to another origin gets an error naming the redirect, and the other
// origin receives nothing: neither a secret (Basic or in the body) nor an
// assertion it could redeem once at the real issuer.
func TestTokenRequestFollowsNoRedirect(t *testing.T) {
	var mu sync.Mutex
	var stolen []string
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		stolen = append(stolen, r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"x","token_type":"Bearer","expires_in":3600}`)
	}))
	defer thief.Close()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, thief.URL+"/connect/token", status)
		}))
		for _, c := range []struct {
			name string
			cfg  client.Config
		}{
			{"secret in Basic", client.Config{ClientID: "reporting", ClientSecret: "s3cret"}},
			{"secret in the body", client.Config{ClientID: "reporting", ClientSecret: "s3cret", AuthStyle: oauth2.AuthStyleInParams}},
			{"assertion", client.Config{ClientID: "reporting", Key: newKey(t)}},
		} {
			cfg := c.cfg
			cfg.TokenURL, cfg.Scopes = redirector.URL+"/ids/connect/token", []string{scope.AdminWebAPI}
			_, err := cfg.TokenSource(context.Background()).Token()
			var te *client.TokenError
			if !errors.As(err, &te) || !errors.Is(err, client.ErrTokenRedirect) {
				t.Errorf("%d, %s: %v, want a *TokenError wrapping ErrTokenRedirect", status, c.name, err)
			} else if msg := err.Error(); !strings.Contains(msg, thief.URL) || strings.Contains(msg, "s3cret") {
				t.Errorf("%d, %s: the error %q should name the origin redirected to, and no secret", status, c.name, msg)
			}
		}
		redirector.Close()
	}
	if len(stolen) > 0 {
		t.Errorf("the other origin received %d token requests: %q", len(stolen), stolen)
	}

	// The caller's own client is not changed: its other requests follow
	// redirects as they did.
	mine := &http.Client{}
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: thief.URL, HTTPClient: mine}
	cfg.TokenSource(context.Background()).Token()
	cfg.Client(context.Background())
	if mine.CheckRedirect != nil {
		t.Error("the caller's HTTPClient had its CheckRedirect changed")
	}
}

// TestRetryAfterIsBounded: a 429 with Retry-After: 315360000 (ten years)
// holds token requests back for MaxRetryAfter, not ten years; the
// TokenError says the bound. (Counted in token requests, on the client's
// own clock: see retryafter_internal_test.go for the clock.)
func TestRetryAfterIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "315360000")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":"slow_down"}`)
	}))
	defer srv.Close()
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: srv.URL, Scopes: []string{scope.AdminWebAPI}}
	_, err := cfg.TokenSource(context.Background()).Token()
	var te *client.TokenError
	if !errors.As(err, &te) || te.RetryAfter != client.MaxRetryAfter {
		t.Fatalf("Token: %v; RetryAfter %v, want MaxRetryAfter %v", err, te.RetryAfter, client.MaxRetryAfter)
	}
}

// TestExtraTokenRequestParameters: EndpointParams reach the token
// endpoint beside the request's own (with a secret and with a key), and
// one that would replace a parameter of the request is refused, naming
// it, without a request.
func TestExtraTokenRequestParameters(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		forms = append(forms, r.PostForm)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
	}))
	defer srv.Close()
	for _, cfg := range []client.Config{
		{ClientID: "reporting", ClientSecret: "s3cret"},
		{ClientID: "reporting", Key: newKey(t), Resources: []string{"https://api.example"}},
	} {
		cfg.TokenURL, cfg.Scopes = srv.URL, []string{scope.AdminWebAPI}
		cfg.EndpointParams = url.Values{"audience": {"https://api.example"}}
		if _, err := cfg.TokenSource(context.Background()).Token(); err != nil {
			t.Fatal(err)
		}
	}
	if len(forms) != 2 {
		t.Fatalf("%d token requests, want 2", len(forms))
	}
	for i, f := range forms {
		if f.Get("audience") != "https://api.example" || f.Get("grant_type") != "client_credentials" || f.Get("scope") != scope.AdminWebAPI {
			t.Errorf("request %d: form %v", i, f)
		}
	}
	if f := forms[1]; f.Get("client_assertion") == "" || f.Get("resource") != "https://api.example" {
		t.Errorf("the keyed request lost its assertion or resource: %v", f)
	}

	for _, name := range []string{"grant_type", "scope", "client_secret", "Client_Secret", "client_assertion", "client_assertion_type", "resource", "client_id"} {
		cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: srv.URL,
			EndpointParams: url.Values{name: {"x"}}}
		_, err := cfg.TokenSource(context.Background()).Token()
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("EndpointParams %q: %v, want an error naming it", name, err)
		}
	}
	if len(forms) != 2 {
		t.Errorf("%d token requests after the refused parameters, want still 2", len(forms))
	}
}
