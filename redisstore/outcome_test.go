package redisstore_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// referenceIssuer serves an issuer whose client "payroll" gets reference
// tokens of a minute, kept in tokens, and whose API resource "admin-api"
// introspects them; it returns a function that posts a form to one of
// its endpoints ("token", "introspect", "revocation") as one of them.
func referenceIssuer(t *testing.T, tokens *redisstore.TokenStore, opts ...issuer.Option) func(endpoint, id, pass string, form url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	iss, err := issuer.New(&issuer.Config{
		Issuer:       sharedIssuer,
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "payroll", SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference", AccessTokenLifetime: time.Minute},
		},
		APIResources: []issuer.APIResourceConfig{
			{Name: "admin-api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: []string{scope.AdminWebAPI}},
		},
	}, append(opts, issuer.WithTokenStore(tokens))...)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	return func(endpoint, id, pass string, form url.Values) (int, http.Header, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/ids/connect/"+endpoint, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, pass)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, resp.Header, m
	}
}

// TestTokenStoreSlowerThanItsBound: while a real redis-server is paused
// (CLIENT PAUSE, 600 ms) past the token store's 150 ms bound, the 503s
// say what is true. A revocation answers that its outcome is unknown and
// that revoking again is safe: it was in fact applied once Redis went on
// (the token introspects inactive), and asked again it answers 200. A
// token request answers that no token can be issued, and none is handed
// out; the grant of the token it did not hand out is written once Redis
// goes on, under the SHA-256 of a token nobody holds, and expires with
// it.
func TestTokenStoreSlowerThanItsBound(t *testing.T) {
	srv := startRedis(t)
	tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "slow503:ref:"})
	post := referenceIssuer(t, tokens)
	issue := func() (int, http.Header, map[string]any) {
		return post("token", "payroll", payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}})
	}
	introspect := func(tok string) (int, map[string]any) {
		status, _, m := post("introspect", "admin-api", "api-secret", url.Values{"token": {tok}})
		return status, m
	}
	pause := func() {
		t.Helper()
		if _, err := srv.nodes[0].Do("CLIENT", "PAUSE", "600", "ALL"); err != nil {
			t.Fatal(err)
		}
	}
	// untilAnswered polls introspection of tok until the store answers,
	// counting; Redis goes on after its pause.
	untilAnswered := func(tok string) map[string]any {
		t.Helper()
		for i := 0; ; i++ {
			status, m := introspect(tok)
			if status == http.StatusOK {
				return m
			}
			if i == 200 {
				t.Fatalf("introspection never answered again: %d %v", status, m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	status, _, m := issue()
	tok, _ := m["access_token"].(string)
	if status != http.StatusOK || tok == "" {
		t.Fatalf("a reference token: %d %v", status, m)
	}

	pause()
	status, h, m := post("revocation", "payroll", payrollSecret, url.Values{"token": {tok}})
	const unknown = "whether the token was revoked is unknown; try again shortly: revoking it again is safe"
	if status != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" || m["error_description"] != unknown || h.Get("Retry-After") == "" {
		t.Errorf("a revocation while Redis is paused: %d %v (Retry-After %q), want 503 temporarily_unavailable %q", status, m, h.Get("Retry-After"), unknown)
	}
	if m := untilAnswered(tok); m["active"] != false {
		t.Errorf("after the pause, the token the 503'd revocation was about: %v, want inactive (the revocation was applied)", m)
	}
	if status, _, m := post("revocation", "payroll", payrollSecret, url.Values{"token": {tok}}); status != http.StatusOK {
		t.Errorf("the revocation asked again: %d %v, want 200", status, m)
	}

	before := srv.keys(t, "slow503:ref:*")
	pause()
	status, h, m = issue()
	const none = "no token can be issued now; try again shortly"
	if status != http.StatusServiceUnavailable || m["error_description"] != none || m["access_token"] != nil || h.Get("Retry-After") == "" {
		t.Errorf("a token request while Redis is paused: %d %v, want 503 %q and no token", status, m, none)
	}
	untilAnswered("unknown")
	after := srv.keys(t, "slow503:ref:*")
	if len(after) != len(before)+1 {
		t.Fatalf("grants before the 503'd token request %q, after %q: want the one of the token not handed out", before, after)
	}
	for _, k := range after {
		if ttl, err := srv.client(t).PTTL(context.Background(), k).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Errorf("grant %s: PTTL %v (%v), want within the token's minute", k, ttl, err)
		}
	}
}

// TestTokenStoreDownIsLoggedOncePerTenSeconds: with the token store's
// redis-server killed, ten token requests, ten introspections and ten
// revocations each answer 503, and each of the three failures is logged
// at Error once; ten seconds later by the issuer's clock, one more of
// each logs again, saying how many were held back.
func TestTokenStoreDownIsLoggedOncePerTenSeconds(t *testing.T) {
	srv := startRedis(t)
	tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "down:ref:"})
	logs, logger := testlog.New()
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	post := referenceIssuer(t, tokens, issuer.WithLogger(logger), issuer.WithClock(clock))
	srv.kill()
	const someToken = "x8Qm4n2Zk1Vb7Tc5Yd3Wf9Hg6Jh0Lk2Pn4Rs6Tu8Vw"
	lines := map[string]string{
		"token":      "idsauth issuer: no reference token issued: the reference token store cannot answer",
		"introspect": "idsauth issuer: introspection: the reference token store cannot answer",
		"revocation": "idsauth issuer: revocation: the reference token store cannot answer",
	}
	each := func(n int) {
		t.Helper()
		for range n {
			for _, c := range []struct {
				endpoint, id, pass string
				form               url.Values
			}{
				{"token", "payroll", payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}},
				{"introspect", "admin-api", "api-secret", url.Values{"token": {someToken}}},
				{"revocation", "payroll", payrollSecret, url.Values{"token": {someToken}}},
			} {
				if status, _, m := post(c.endpoint, c.id, c.pass, c.form); status != http.StatusServiceUnavailable {
					t.Fatalf("%s with the token store down: %d %v, want 503", c.endpoint, status, m)
				}
			}
		}
	}
	// logged returns the "suppressed" of each Error line with msg.
	logged := func(msg string) []float64 {
		var held []float64
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg && rec["level"] == slog.LevelError.String() {
				n, _ := rec["suppressed"].(float64)
				held = append(held, n)
			}
		}
		return held
	}
	each(10)
	for endpoint, msg := range lines {
		if got := logged(msg); len(got) != 1 {
			t.Errorf("%s: %d Error lines for 10 failures (suppressed %v), want 1", endpoint, len(got), got)
		}
	}
	ahead.Store(int64(10 * time.Second))
	each(1)
	for endpoint, msg := range lines {
		if got := logged(msg); len(got) != 2 || got[1] != 9 {
			t.Errorf("%s: ten seconds on, Error lines with suppressed %v, want [0 9]", endpoint, got)
		}
	}
}

// TestLimiterStoreDownIsLoggedOncePerTenSeconds: a failure limiter's
// store that fails closed refuses every token request 503 while its Redis
// is down, and the issuer's Error line of it comes once per 10 s, with
// the failures held back since, as the token store's does.
func TestLimiterStoreDownIsLoggedOncePerTenSeconds(t *testing.T) {
	srv := startRedis(t)
	tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "down:ref:"})
	limiter := redisstore.New(srv.client(t), redisstore.Options{Prefix: "down:lim:", OnUnavailable: redisstore.FailClosed})
	logs, logger := testlog.New()
	var ahead atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	post := referenceIssuer(t, tokens, issuer.WithLogger(logger), issuer.WithClock(clock), issuer.WithLimiterStore(limiter))
	srv.kill()
	each := func(n int) {
		t.Helper()
		for range n {
			if status, _, m := post("token", "payroll", payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}); status != http.StatusServiceUnavailable {
				t.Fatalf("a token request with the limiter's store down: %d %v, want 503", status, m)
			}
		}
	}
	count := func() (n int, held []float64) {
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "idsauth issuer: the failure limiter's store cannot answer" {
				s, _ := rec["suppressed"].(float64)
				n, held = n+1, append(held, s)
			}
		}
		return n, held
	}
	each(10)
	if n, held := count(); n != 1 {
		t.Errorf("10 refusals logged %d Error lines (suppressed %v), want 1", n, held)
	}
	ahead.Store(int64(10 * time.Second))
	each(1)
	if n, held := count(); n != 2 || held[1] != 9 {
		t.Errorf("ten seconds on: %d lines, suppressed %v, want 2 and [0 9]", n, held)
	}
}
