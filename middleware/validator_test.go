package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

func newValidator(t *testing.T, cfg middleware.ValidatorConfig) *middleware.Validator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if len(cfg.Audience) == 0 && !cfg.AnyAudience {
		cfg.Audience = []string{cfg.Issuer + "/resources"} // what jwktest.Claims puts in aud
	}
	v, err := middleware.NewValidator(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidatorClaims(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer()})
	claims := jwktest.With(jwktest.Claims(jwks.Issuer(), "pd_AdminWebApi pd_ConnectWebApi", time.Hour), "tenant", "acme")
	c, err := v.Validate(context.Background(), jwktest.Sign(t, k, nil, claims))
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
		{"31s after exp is expired", exp.Add(31 * time.Second), middleware.ErrExpired},
		{"29s before nbf is within the leeway", exp.Add(-time.Hour - 29*time.Second), nil},
		{"31s before nbf is not valid yet", exp.Add(-time.Hour - 31*time.Second), middleware.ErrNotYetValid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := c.now
			v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), Now: func() time.Time { return now }})
			if _, err := v.Validate(context.Background(), tok); !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("no leeway", func(t *testing.T) {
		now := exp.Add(time.Second)
		v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), Leeway: -1, Now: func() time.Time { return now }})
		if _, err := v.Validate(context.Background(), tok); !errors.Is(err, middleware.ErrExpired) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestValidatorKeyRotation(t *testing.T) {
	old := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, old)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})
	claims := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, old, nil, claims)); err != nil {
		t.Fatal(err)
	}
	next := jwktest.NewKey(t, "ES256")
	jwks.SetKeys(old, next)
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, next, nil, claims)); err != nil {
		t.Fatalf("a kid published after start is accepted after a refresh: %v", err)
	}
}

func TestValidatorUnknownKIDRefreshIsRateLimited(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1)})
	before := jwks.Hits()
	claims := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	for range 20 {
		_, err := v.Validate(context.Background(), jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, claims))
		if !errors.Is(err, middleware.ErrUnknownKey) {
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
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), RefreshInterval: 10 * time.Millisecond})
	jwks.SetDown(true)
	hits := jwks.Hits()
	for jwks.Hits() < hits+3 { // let refreshes fail a few times
		time.Sleep(5 * time.Millisecond)
	}
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("cached keys must keep validating: %v", err)
	}
	jwks.SetDown(false)
	jwks.SetBody([]byte(`{"keys": garbage`))
	hits = jwks.Hits()
	for jwks.Hits() < hits+3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("a garbage JWKS must not drop the keys: %v", err)
	}
	jwks.SetBody([]byte(`{"keys":[` + strings.Repeat(" ", 2<<20) + `]}`))
	hits = jwks.Hits()
	for jwks.Hits() < hits+3 {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("an oversized JWKS must be refused and the keys kept: %v", err)
	}
}

func TestValidatorJWKSUnreachableAtStart(t *testing.T) {
	k := jwktest.NewKey(t, "EdDSA")
	jwks := jwktest.NewJWKS(t, k)
	jwks.SetDown(true)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), JWKSURL: jwks.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, middleware.ErrKeysUnavailable) {
		t.Fatalf("err = %v, want ErrKeysUnavailable", err)
	}
	jwks.SetDown(false)
	if _, err := v.Validate(context.Background(), tok); err != nil {
		t.Fatalf("must recover without restart: %v", err)
	}
}

func TestValidatorDiscovery(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	t.Run("issuer mismatch is refused", func(t *testing.T) {
		_, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: jwks.Issuer() + "/", AnyAudience: true})
		if err == nil || !strings.Contains(err.Error(), "names issuer") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unreachable discovery is an error", func(t *testing.T) {
		_, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: jwks.Issuer() + "/nowhere", AnyAudience: true})
		if err == nil {
			t.Fatal("no error")
		}
	})
}

func TestValidatorConfigRefusesUnsafeAlgorithms(t *testing.T) {
	for _, alg := range []string{"none", "HS256", "hs512", "XX1"} {
		_, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: "https://x/ids", AnyAudience: true, Algorithms: []string{alg}})
		if err == nil {
			t.Errorf("%s accepted", alg)
		}
	}
}

func TestValidatorAlgorithmAllowList(t *testing.T) {
	k := jwktest.NewKey(t, "RS256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: jwks.Issuer(), Algorithms: []string{"ES256"}})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, middleware.ErrAlgorithm) {
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
	v := newValidator(t, middleware.ValidatorConfig{Issuer: "https://ids.example/ids", JWKSURL: srv.URL + "/jwks", RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})
	slow.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tok := jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, jwktest.Claims("https://ids.example/ids", scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(ctx, tok); !errors.Is(err, middleware.ErrUnknownKey) {
		t.Fatalf("err = %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("Validate returned before the context ended: the fetch did not hang as the test meant")
	}
	// Known keys keep working while the JWKS hangs.
	good := jwktest.Sign(t, k, nil, jwktest.Claims("https://ids.example/ids", scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), good); err != nil {
		t.Fatal(err)
	}
}
