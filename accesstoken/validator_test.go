package accesstoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/eventtest"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
)

func newValidator(t *testing.T, cfg accesstoken.Config) *accesstoken.Validator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if len(cfg.Audience) == 0 && !cfg.AnyAudience {
		cfg.Audience = []string{cfg.Issuer + "/resources"} // what jwktest.Claims puts in aud
	}
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidatorClaims(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer()})
	claims := jwktest.With(jwktest.Claims(jwks.Issuer(), "pd_AdminWebApi pd_ConnectWebApi", time.Hour), "tenant", "acme")
	c, err := v.Validate(context.Background(), jwktest.Sign(t, k, nil, claims), accesstoken.Presentation{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != jwks.Issuer() || c.Subject != "test-client" || c.ClientID != "test-client" || c.ID != "test-jti" {
		t.Errorf("claims = %+v", c)
	}
	if len(c.Audience) != 1 || c.Audience[0] != jwks.Issuer()+"/resources" {
		t.Errorf("aud = %v", c.Audience)
	}
	if !c.Scopes.Has(scope.AdminWebAPI) || !c.Scopes.Has(scope.ConnectWebAPI) || len(c.Scopes) != 2 {
		t.Errorf("scopes = %v", c.Scopes)
	}
	if c.ExpiresAt.Unix() != claims["exp"].(int64) || c.IssuedAt.Unix() != claims["iat"].(int64) || c.NotBefore.Unix() != claims["nbf"].(int64) {
		t.Errorf("times = %v %v %v", c.IssuedAt, c.NotBefore, c.ExpiresAt)
	}
	var custom struct {
		Tenant string `json:"tenant"`
	}
	if err := c.Decode(&custom); err != nil || custom.Tenant != "acme" {
		t.Errorf("Decode = %+v, %v", custom, err)
	}
}

func TestValidatorLeewayBoundary(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	claims := jwktest.With(jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour), "exp", exp.Unix(), "nbf", exp.Add(-time.Hour).Unix(), "iat", exp.Add(-time.Hour).Unix())
	tok := jwktest.Sign(t, k, nil, claims)
	cases := []struct {
		name string
		now  time.Time
		want error
	}{
		{"29s after exp is within the default leeway", exp.Add(29 * time.Second), nil},
		{"31s after exp is expired", exp.Add(31 * time.Second), accesstoken.ErrExpired},
		{"29s before nbf is within the leeway", exp.Add(-time.Hour - 29*time.Second), nil},
		{"31s before nbf is not valid yet", exp.Add(-time.Hour - 31*time.Second), accesstoken.ErrNotYetValid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := c.now
			v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Now: func() time.Time { return now }})
			if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("no leeway", func(t *testing.T) {
		now := exp.Add(time.Second)
		v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Leeway: -1, Now: func() time.Time { return now }})
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrExpired) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestValidatorKeyRotation(t *testing.T) {
	old := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, old)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})})
	claims := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, old, nil, claims), accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
	next := jwktest.NewKey(t, "ES256")
	jwks.SetKeys(old, next)
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, next, nil, claims), accesstoken.Presentation{}); err != nil {
		t.Fatalf("a kid published after start is accepted after a refresh: %v", err)
	}
}

func TestValidatorUnknownKIDRefreshIsRateLimited(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1)})})
	before := jwks.Hits()
	claims := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	for range 20 {
		_, err := v.Validate(context.Background(), jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, claims), accesstoken.Presentation{})
		if !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Fatalf("err = %v", err)
		}
	}
	if n := jwks.Hits() - before; n != 1 {
		t.Fatalf("20 unknown kids caused %d JWKS fetches, want 1", n)
	}
}

func TestValidatorJWKSDownAfterStart(t *testing.T) {
	k := jwktest.NewKey(t, "RS256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{Issuer: jwks.Issuer(), RefreshInterval: 10 * time.Millisecond})})
	jwks.SetDown(true)
	hits := jwks.Hits()
	for jwks.Hits() < hits+3 { // let refreshes fail a few times
		time.Sleep(5 * time.Millisecond)
	}
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("cached keys must keep validating: %v", err)
	}
	jwks.SetDown(false)
	jwks.SetBody([]byte(`{"keys": garbage`))
	hits = jwks.Hits()
	for jwks.Hits() < hits+3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("a garbage JWKS must not drop the keys: %v", err)
	}
	jwks.SetBody([]byte(`{"keys":[` + strings.Repeat(" ", 2<<20) + `]}`))
	hits = jwks.Hits()
	for jwks.Hits() < hits+3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("an oversized JWKS must be refused and the keys kept: %v", err)
	}
}

func TestValidatorJWKSUnreachableAtStart(t *testing.T) {
	k := jwktest.NewKey(t, "EdDSA")
	jwks := jwktest.NewJWKS(t, k)
	jwks.SetDown(true)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrKeysUnavailable) {
		t.Fatalf("err = %v, want ErrKeysUnavailable", err)
	}
	jwks.SetDown(false)
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("must recover without restart: %v", err)
	}
}

func TestValidatorDiscovery(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	t.Run("issuer mismatch is refused", func(t *testing.T) {
		_, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: jwks.Issuer() + "/", AnyAudience: true})
		if err == nil || !strings.Contains(err.Error(), "names issuer") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unreachable discovery is an error", func(t *testing.T) {
		_, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: jwks.Issuer() + "/nowhere", AnyAudience: true})
		if err == nil {
			t.Fatal("no error")
		}
	})
}

func TestValidatorConfigRefusesUnsafeAlgorithms(t *testing.T) {
	for _, alg := range []string{"none", "HS256", "hs512", "XX1"} {
		_, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: "https://x/ids", AnyAudience: true, Algorithms: []string{alg}})
		if err == nil {
			t.Errorf("%s accepted", alg)
		}
	}
}

// TestValidatorConfigTakesTheAlgorithmTable: Algorithms names algorithms
// of the one table and no other, though golang-jwt
// knows RS512 and ES384.
func TestValidatorConfigTakesTheAlgorithmTable(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	for _, alg := range []string{"RS512", "ES384", "PS512"} {
		_, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: jwks.Issuer(), AnyAudience: true, Algorithms: []string{"ES256", alg}})
		if err == nil || !strings.Contains(err.Error(), alg) {
			t.Errorf("%s: %v", alg, err)
		}
	}
	for _, alg := range []string{"ES256", "RS256", "PS256", "EdDSA", "Ed25519"} {
		if _, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: jwks.Issuer(), AnyAudience: true, Algorithms: []string{alg}}); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
}

func TestValidatorAlgorithmAllowList(t *testing.T) {
	k := jwktest.NewKey(t, "RS256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Algorithms: []string{"ES256"}})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAlgorithm) {
		t.Fatalf("err = %v", err)
	}
}

// TestValidatorSlowJWKSNeverHoldsARequest: a token with an unknown kid
// triggers a JWKS fetch; when that fetch hangs, the request still ends
// when its context does.
func TestValidatorSlowJWKSNeverHoldsARequest(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	release := make(chan struct{})
	var slow atomic.Bool
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []keys.JWK{k.PublicJWK()}})
	})
	srv = httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)
	v := newValidator(t, accesstoken.Config{Issuer: "https://ids.example/ids", Keys: newJWKS(t, accesstoken.JWKSConfig{URL: srv.URL + "/jwks", RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})})
	slow.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tok := jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, jwktest.Claims("https://ids.example/ids", scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(ctx, tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("err = %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("Validate returned before the context ended: the fetch did not hang as the test meant")
	}
	// Known keys keep working while the JWKS hangs.
	good := jwktest.Sign(t, k, nil, jwktest.Claims("https://ids.example/ids", scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), good, accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
}

// trickle is an identity service that answers a byte every 200 ms and
// never finishes: its discovery document and its JWKS are both an
// endless "{" and spaces, valid JSON so far, so a reader waits for more.
// It closes cancelled when a request ends on the client's side.
type trickle struct {
	*httptest.Server
	cancelled chan struct{}
}

func newTrickle(t *testing.T) *trickle {
	t.Helper()
	tr := &trickle{cancelled: make(chan struct{})}
	var once sync.Once
	stop := make(chan struct{})
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for b := "{"; ; b = " " {
			_, _ = io.WriteString(w, b)
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				once.Do(func() { close(tr.cancelled) })
				return
			case <-stop: // the test is over: let a fetch still waiting end
				return
			case <-tick.C:
			}
		}
	}))
	t.Cleanup(tr.Close)
	t.Cleanup(func() { close(stop) }) // runs before Close, which waits for the handler
	return tr
}

// hangGuard is how long a test waits for a fetch that should have ended
// at its FetchTimeout, far longer, before it reports the fetch as one
// without a deadline. It bounds the wait; it measures nothing.
const hangGuard = 15 * time.Second

// TestFetchesHaveADeadlineWhateverTheClient: with a caller's client that
// has no Timeout (&http.Client{Transport: t}), a discovery document that
// trickles forever does not hold New: it fails with a deadline
// error and the server sees the request cancelled (issue 23, row 4). The
// JWKS fetch ends the same way: New returns, the failed fetch is
// a timeout, and tokens meet ErrKeysUnavailable.
func TestFetchesHaveADeadlineWhateverTheClient(t *testing.T) {
	t.Run("discovery", func(t *testing.T) {
		tr := newTrickle(t)
		client := &http.Client{Transport: tr.Client().Transport} // no Timeout
		done := make(chan error, 1)
		go func() {
			_, err := accesstoken.NewJWKS(context.Background(), accesstoken.JWKSConfig{
				Issuer: tr.URL + "/ids", HTTPClient: client, Timeout: 300 * time.Millisecond,
			})
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(hangGuard):
			t.Fatalf("NewJWKS still blocked on a trickling discovery document after %v: the fetch has no deadline", hangGuard)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline error", err)
		}
		select {
		case <-tr.cancelled:
		case <-time.After(hangGuard):
			t.Fatal("the server never saw the discovery request cancelled")
		}
	})
	t.Run("JWKS", func(t *testing.T) {
		tr := newTrickle(t)
		rec := &eventtest.Recorder{}
		done := make(chan *accesstoken.Validator, 1)
		go func() {
			keys, err := accesstoken.NewJWKS(t.Context(), accesstoken.JWKSConfig{
				URL: tr.URL + "/jwks", Observer: rec,
				HTTPClient: &http.Client{Transport: tr.Client().Transport}, Timeout: 300 * time.Millisecond,
			})
			if err != nil {
				t.Error(err)
				done <- nil
				return
			}
			v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: "https://ids.example/ids", AnyAudience: true, Keys: keys})
			if err != nil {
				t.Error(err)
			}
			done <- v
		}()
		var v *accesstoken.Validator
		select {
		case v = <-done:
		case <-time.After(hangGuard):
			t.Fatalf("New still blocked on a trickling JWKS after %v: the fetch has no deadline", hangGuard)
		}
		if v == nil {
			return
		}
		eventtest.Want(t, "the first fetch", rec.Take(), observe.Event{Kind: observe.KeysFetchFailed, Reason: "timeout"})
		select {
		case <-tr.cancelled:
		case <-time.After(hangGuard):
			t.Fatal("the server never saw the JWKS request cancelled")
		}
		k := jwktest.NewKey(t, "ES256")
		if _, err := v.Validate(context.Background(), jwktest.Sign(t, k, nil, jwktest.Claims("https://ids.example/ids", scope.AdminWebAPI, time.Hour)), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrKeysUnavailable) {
			t.Fatalf("err = %v, want ErrKeysUnavailable", err)
		}
	})
	t.Run("a negative Timeout is refused", func(t *testing.T) {
		_, err := accesstoken.NewJWKS(context.Background(), accesstoken.JWKSConfig{URL: "https://ids.example/jwks", Timeout: -time.Second})
		if err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("err = %v", err)
		}
	})
}
