package client_test

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/justinas/alice"
	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// world is an identity service and an Admin API on loopback, with the
// number of token requests and API calls counted.
type world struct {
	ids, api   *httptest.Server
	iss        *issuer.Issuer
	tokenCalls atomic.Int64
	apiCalls   atomic.Int64
	cfg        *issuer.Config
}

func newWorld(t *testing.T, lifetime int, validator func(iss *issuer.Issuer) accesstoken.Config) *world {
	t.Helper()
	w := &world{}
	mux := http.NewServeMux()
	w.ids = httptest.NewServer(mux)
	t.Cleanup(w.ids.Close)
	w.cfg = &issuer.Config{
		Issuer: w.ids.URL + "/ids",
		Keys:   []issuer.KeyConfig{{Key: newKey(t)}},
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()},
			Scopes: []string{scope.AdminWebAPI}, AccessTokenLifetime: time.Duration(lifetime) * time.Second,
		}},
	}
	iss, err := issuer.New(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.iss = iss
	mux.Handle("/ids/", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/connect/token") {
			w.tokenCalls.Add(1)
		}
		iss.ServeHTTP(rw, r)
	}))
	vc := accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss}
	if validator != nil {
		vc = validator(iss)
	}
	v, err := accesstoken.New(context.Background(), vc)
	if err != nil {
		t.Fatal(err)
	}
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.apiCalls.Add(1)
			next.ServeHTTP(rw, r)
		})
	}
	w.api = httptest.NewServer(alice.New(count, middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(
		func(rw http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(rw, "ok %s", b)
		}))
	t.Cleanup(w.api.Close)
	return w
}

func newKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	return k.Private
}

func (w *world) client(mod ...func(*client.Config)) *http.Client {
	// The identity service and the API listen on two origins here: the
	// API's is the one the token is for.
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.ids.URL, Origins: []string{w.api.URL}, Scopes: []string{scope.AdminWebAPI}}
	for _, m := range mod {
		m(&cfg)
	}
	return cfg.Client(context.Background())
}

func get(t *testing.T, c *http.Client, url string) (int, string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestNormalCall(t *testing.T) {
	w := newWorld(t, 0, nil)
	c := w.client()
	for range 3 {
		if status, body, err := get(t, c, w.api.URL); err != nil || status != 200 || body != "ok " {
			t.Fatalf("got %d %q %v", status, body, err)
		}
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token requests for 3 calls, want 1 (cached)", n)
	}
}

func TestRejectedTokenIsRenewedOnce(t *testing.T) {
	w := newWorld(t, 0, nil)
	c := w.client()
	if status, _, err := get(t, c, w.api.URL); err != nil || status != 200 {
		t.Fatalf("first call: %d %v", status, err)
	}
	// Rotate the signing key and drop the old one: the cached token is now
	// rejected with invalid_token, long before it expires.
	w.cfg.Keys = []issuer.KeyConfig{{Key: newKey(t)}}
	if err := w.iss.Reload(w.cfg); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Post(w.api.URL, "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok payload" {
		t.Fatalf("got %d %q: the body must be replayed", resp.StatusCode, b)
	}
	if n := w.tokenCalls.Load(); n != 2 {
		t.Fatalf("%d token requests in all, want 2", n)
	}
	if n := w.apiCalls.Load(); n != 3 {
		t.Fatalf("%d API calls, want 3 (one rejected, one retried)", n)
	}
}

func TestEveryTokenRejectedGivesTypedErrorAfterOneRetry(t *testing.T) {
	w := newWorld(t, 0, func(iss *issuer.Issuer) accesstoken.Config {
		return accesstoken.Config{Issuer: "https://another.example/ids", Audience: []string{iss.URL() + "/resources"}, Keys: iss}
	})
	c := w.client()
	_, _, err := get(t, c, w.api.URL)
	var ite *client.InvalidTokenError
	if !errors.As(err, &ite) {
		t.Fatalf("err = %v, want *client.InvalidTokenError", err)
	}
	if ite.Code != "invalid_token" || ite.Description != "token issuer not accepted" || ite.Response.StatusCode != 401 {
		t.Fatalf("error = %+v", ite)
	}
	if b, _ := io.ReadAll(ite.Response.Body); !strings.Contains(string(b), `"invalid_token"`) {
		t.Fatalf("response body not readable: %q", b)
	}
	if w.apiCalls.Load() != 2 || w.tokenCalls.Load() != 2 {
		t.Fatalf("%d API calls, %d token requests; want 2 and 2", w.apiCalls.Load(), w.tokenCalls.Load())
	}
}

// onceReader is a body that cannot be replayed: http.NewRequest sets no
// GetBody for it.
type onceReader struct{ r io.Reader }

func (o *onceReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestNonReplayableBodyIsNotRetried(t *testing.T) {
	w := newWorld(t, 0, func(iss *issuer.Issuer) accesstoken.Config {
		return accesstoken.Config{Issuer: "https://another.example/ids", Audience: []string{iss.URL() + "/resources"}, Keys: iss}
	})
	c := w.client()
	req, _ := http.NewRequest(http.MethodPost, w.api.URL, &onceReader{strings.NewReader("stream")})
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || w.apiCalls.Load() != 1 || w.tokenCalls.Load() != 1 {
		t.Fatalf("status %d, %d API calls, %d token requests; want 401, 1, 1", resp.StatusCode, w.apiCalls.Load(), w.tokenCalls.Load())
	}
}

func TestOtherAnswersPassUntouched(t *testing.T) {
	w := newWorld(t, 0, nil)
	// One server answers for every case (the case is in the path), so that
	// its origin can be the one the token is for.
	var current atomic.Pointer[func(http.ResponseWriter)]
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { (*current.Load())(rw) }))
	defer srv.Close()
	c := w.client(func(cfg *client.Config) { cfg.Origins = []string{srv.URL} })
	cases := []struct {
		name   string
		status int
		header string
		body   string
	}{
		{"401 with only a challenge", 401, `Bearer realm="x"`, "Unauthorized"},
		{"401 with another error", 401, `Bearer realm="x", error="invalid_request"`, `{"error":"invalid_request"}`},
		{"403", 403, `Bearer realm="x", error="insufficient_scope"`, `{"error":"insufficient_scope"}`},
		{"500", 500, "", "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int64
			answer := func(rw http.ResponseWriter) {
				hits.Add(1)
				if tc.header != "" {
					rw.Header().Set("WWW-Authenticate", tc.header)
				}
				rw.WriteHeader(tc.status)
				fmt.Fprint(rw, tc.body)
			}
			current.Store(&answer)
			status, body, err := get(t, c, srv.URL)
			if err != nil || status != tc.status || body != tc.body || hits.Load() != 1 {
				t.Fatalf("got %d %q %v after %d calls", status, body, err, hits.Load())
			}
		})
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
}

func TestConcurrentCallsOnAnExpiredTokenMakeOneTokenRequest(t *testing.T) {
	w := newWorld(t, 1, nil) // tokens live one second
	c := w.client(func(cfg *client.Config) { cfg.RenewBefore = time.Millisecond })
	if status, _, err := get(t, c, w.api.URL); err != nil || status != 200 {
		t.Fatalf("first call: %d %v", status, err)
	}
	time.Sleep(1100 * time.Millisecond) // the cached token expires
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(w.api.URL)
			if err != nil {
				failed.Add(1)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed", failed.Load())
	}
	if n := w.tokenCalls.Load(); n != 2 {
		t.Fatalf("%d token requests in all, want 2 (one at start, one for the 100 calls)", n)
	}
}

func TestCancelledContextEndsTheWait(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	defer close(release) // before Close, which waits for the handler
	cfg := client.Config{ClientID: "a", ClientSecret: "b", TokenURL: hang.URL, Origins: []string{"http://127.0.0.1:1"}}
	c := cfg.Client(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/never", nil)
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

func TestTokenEndpointErrorsAreTyped(t *testing.T) {
	w := newWorld(t, 0, nil)
	t.Run("wrong secret", func(t *testing.T) {
		c := w.client(func(cfg *client.Config) { cfg.ClientSecret = "wrong"; cfg.AuthStyle = oauth2.AuthStyleInParams })
		_, _, err := get(t, c, w.api.URL)
		var te *client.TokenError
		if !errors.As(err, &te) || te.Code != "invalid_client" || te.StatusCode != 401 {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), "wrong") {
			t.Fatal("the error echoes the secret")
		}
		// A failure is remembered briefly: no storm of token requests.
		before := w.tokenCalls.Load()
		for range 10 {
			_, _, _ = get(t, c, w.api.URL)
		}
		if n := w.tokenCalls.Load() - before; n != 0 {
			t.Fatalf("%d token requests right after a failure, want 0", n)
		}
	})
	t.Run("scope not allowed", func(t *testing.T) {
		c := w.client(func(cfg *client.Config) { cfg.Scopes = []string{scope.ConnectWebAPI} })
		_, _, err := get(t, c, w.api.URL)
		var te *client.TokenError
		if !errors.As(err, &te) || te.Code != "invalid_scope" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("slow_down carries Retry-After", func(t *testing.T) {
		w.cfg.Limits = limit.Config{FailedAttemptsPerSubject: 1, FailedAttemptsPerAddress: 1000, FailureWindow: 10 * time.Minute}
		w.cfg.Clients = append(w.cfg.Clients, issuer.ClientConfig{ClientID: "locked", SecretHashes: []string{secret.HashSHA256("x").String()}, Scopes: []string{scope.AdminWebAPI}})
		if err := w.iss.Reload(w.cfg); err != nil {
			t.Fatal(err)
		}
		bad := w.client(func(cfg *client.Config) {
			cfg.ClientID = "locked"
			cfg.ClientSecret = "y"
			cfg.AuthStyle = oauth2.AuthStyleInParams
		})
		_, _, _ = get(t, bad, w.api.URL)
		locked := w.client(func(cfg *client.Config) {
			cfg.ClientID = "locked"
			cfg.ClientSecret = "x"
			cfg.AuthStyle = oauth2.AuthStyleInParams
		})
		_, _, err := get(t, locked, w.api.URL)
		var te *client.TokenError
		if !errors.As(err, &te) || te.Code != "slow_down" || te.StatusCode != 429 || te.RetryAfter < time.Second {
			t.Fatalf("err = %#v", err)
		}
	})
}

// TestTokenOnlyToTheServiceOrigin: the token goes to the configured origin
// and nowhere else, neither on a redirect nor on a direct call.
func TestTokenOnlyToTheServiceOrigin(t *testing.T) {
	w := newWorld(t, 0, nil)
	var elsewhere atomic.Int64
	var leaked atomic.Value
	leaked.Store("")
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if a := r.Header.Get("Authorization"); a != "" {
			leaked.Store(a)
		}
		fmt.Fprint(rw, "evil")
	}))
	defer evil.Close()
	var sawToken atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			sawToken.Add(1)
		}
		switch r.URL.Path {
		case "/away":
			http.Redirect(rw, r, evil.URL+"/landing", http.StatusFound)
		case "/here":
			http.Redirect(rw, r, "/landing", http.StatusFound)
		default:
			fmt.Fprint(rw, "api")
		}
	}))
	defer api.Close()
	c := w.client(func(cfg *client.Config) { cfg.Origins = []string{api.URL} })

	if status, body, err := get(t, c, api.URL+"/here"); err != nil || status != 200 || body != "api" || sawToken.Load() != 2 {
		t.Fatalf("same-origin redirect: %d %q %v, token seen %d times, want 2", status, body, err, sawToken.Load())
	}
	if status, body, err := get(t, c, api.URL+"/away"); err != nil || status != 200 || body != "evil" {
		t.Fatalf("redirect away: %d %q %v", status, body, err)
	}
	if sawToken.Load() != 3 || elsewhere.Load() != 1 {
		t.Fatalf("token seen %d times at the API (want 3), %d calls elsewhere (want 1)", sawToken.Load(), elsewhere.Load())
	}
	if status, body, err := get(t, c, evil.URL+"/direct"); err != nil || status != 200 || body != "evil" {
		t.Fatalf("direct call: %d %q %v", status, body, err)
	}
	if elsewhere.Load() != 2 {
		t.Fatalf("%d calls elsewhere, want 2", elsewhere.Load())
	}
	if a := leaked.Load().(string); a != "" {
		t.Fatalf("another origin received Authorization: %.12s...", a)
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}

	t.Run("the default origin is BaseURL's", func(t *testing.T) {
		cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.ids.URL, Scopes: []string{scope.AdminWebAPI}}
		hc := cfg.Client(context.Background())
		before := w.tokenCalls.Load()
		if _, _, err := get(t, hc, evil.URL); err != nil {
			t.Fatal(err)
		}
		if w.tokenCalls.Load() != before || leaked.Load().(string) != "" {
			t.Fatal("a token was fetched or sent for another origin")
		}
		// The identity service's own origin is BaseURL's: a call there
		// carries the token (the JWKS does not mind).
		if status, _, err := get(t, hc, w.ids.URL+"/ids/.well-known/openid-configuration"); err != nil || status != 200 || w.tokenCalls.Load() != before+1 {
			t.Fatalf("%d %v, %d token requests", status, err, w.tokenCalls.Load()-before)
		}
	})
	t.Run("origins compare scheme, host and port", func(t *testing.T) {
		u := strings.Replace(api.URL, "http://", "HTTP://", 1)
		hc := w.client(func(cfg *client.Config) { cfg.Origins = []string{u + "/ignored/path"} })
		before := sawToken.Load()
		if _, _, err := get(t, hc, api.URL); err != nil || sawToken.Load() != before+1 {
			t.Fatalf("%v: the token was not sent to its own origin", err)
		}
		other := w.client(func(cfg *client.Config) {
			cfg.Origins = []string{strings.Replace(api.URL, "127.0.0.1", "localhost", 1)}
		})
		if _, _, err := get(t, other, api.URL); err != nil || sawToken.Load() != before+1 {
			t.Fatalf("%v: the token went to another host name", err)
		}
	})
}

// A wrong secret costs one token request, not two: the client does not
// use x/oauth2's auto-detection, which retries in the body, and which the
// issuer's failure limit would count twice.
func TestWrongSecretIsSentOnce(t *testing.T) {
	w := newWorld(t, 0, nil)
	c := w.client(func(cfg *client.Config) { cfg.ClientSecret = "wrong" })
	if _, _, err := get(t, c, w.api.URL); err == nil {
		t.Fatal("a wrong secret got through")
	}
	if n := w.tokenCalls.Load(); n != 1 {
		t.Fatalf("%d token requests for one wrong secret, want 1", n)
	}
}
