package issuer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// The red-team pass over issue 32, item 5, at the issuer: what one client
// assertion costs. The issuer pads an assertion's signature checks to the
// most keys of its alg any client (or API resource) has, so that an
// unknown client, a wrong key and a client with several keys do the same
// work. These tests count the checks, by putting a counting method in
// place of each of assertionMethods for the test's length.

// countingMethod is a jwt.SigningMethod that counts its Verify calls and
// passes them on.
type countingMethod struct {
	jwt.SigningMethod
	n *atomic.Int64
}

func (m countingMethod) Verify(signingString string, sig []byte, key any) error {
	m.n.Add(1)
	return m.SigningMethod.Verify(signingString, sig, key)
}

// countAssertionChecks makes every assertion signature check count into
// the returned counter until t ends.
func countAssertionChecks(t *testing.T) *atomic.Int64 {
	t.Helper()
	n := new(atomic.Int64)
	saved := assertionMethods
	counted := make(map[string]jwt.SigningMethod, len(saved))
	for alg, m := range saved {
		counted[alg] = countingMethod{m, n}
	}
	assertionMethods = counted
	t.Cleanup(func() { assertionMethods = saved })
	return n
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// assertionOf signs an assertion for id with k (its alg ES256 or RS256)
// addressed to the issuer's token endpoint.
func assertionOf(t *testing.T, k crypto.Signer, id, tokenURL string) string {
	t.Helper()
	return assertionAt(t, k, id, tokenURL, time.Now())
}

// assertionAt is assertionOf made at the instant at.
func assertionAt(t *testing.T, k crypto.Signer, id, tokenURL string, at time.Time) string {
	t.Helper()
	s, err := clientauth.NewSigner(k, "", "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Assertion(id, tokenURL, at)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRedTeamAssertionCostIsTheLargestKeyCount: with every client holding
// one ES256 key, any ES256 assertion, forged or genuine, for a client or
// for nobody, costs one signature check; once one client holds eight
// (MaxClientKeys), every refused ES256 assertion costs eight, whoever it
// names, a genuine one refused for its claims (expired) or its used jti
// too, while an EdDSA one, an alg no client has keys for, still costs
// one; and an RS256 assertion whose signature has the size of a 4096-bit
// key (MaxRSABits), once a client holds eight such keys, costs eight
// checks at 4096 bits. So the bound is MaxClientKeys checks of the
// costliest key any client may register, per request. A success is not
// padded (finding F9): it costs the checks of its client's keys up to the
// one that signed it, one for the one-key client whatever the others
// hold, one to eight for the eight-key client's first to last key.
func TestRedTeamAssertionCostIsTheLargestKeyCount(t *testing.T) {
	checks := countAssertionChecks(t)
	one, forger := ecKey(t), ecKey(t)
	rsaBig, err := rsa.GenerateKey(rand.Reader, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var eight, eightRSA []ClientKeyConfig
	var eightPriv []*ecdsa.PrivateKey
	for range maxClientKeys {
		k := ecKey(t)
		eightPriv = append(eightPriv, k)
		eight = append(eight, ClientKeyConfig{Key: k.Public()})
		eightRSA = append(eightRSA, ClientKeyConfig{Key: rsaBig.Public()})
	}
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	config := func(many bool) *Config {
		c := &Config{Issuer: srv.URL + "/ids", EphemeralKey: true, Clients: []ClientConfig{
			{ClientID: "one", PublicKeys: []ClientKeyConfig{{Key: one.Public()}}, Scopes: []string{scope.AdminWebAPI}},
		}, Limits: limit.Config{FailedAttemptsPerAddress: 1000, FailedAttemptsPerSubject: 1000}}
		if many {
			c.Clients = append(c.Clients,
				ClientConfig{ClientID: "many", PublicKeys: eight, Scopes: []string{scope.AdminWebAPI}},
				ClientConfig{ClientID: "manyrsa", PublicKeys: eightRSA, Scopes: []string{scope.AdminWebAPI}})
		}
		return c
	}
	iss, err := New(config(false), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = iss
	tokenURL := srv.URL + "/ids/connect/token"
	cost := func(assertion string) (int64, int) {
		t.Helper()
		before := checks.Load()
		form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI},
			"client_assertion_type": {assertionTypeJWT}, "client_assertion": {assertion}}
		resp, err := http.Post(tokenURL, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return checks.Load() - before, resp.StatusCode
	}
	edKey := func() crypto.Signer {
		k, err := keys.Generate("EdDSA")
		if err != nil {
			t.Fatal(err)
		}
		return k.Private
	}
	for _, c := range []struct {
		name      string
		assertion func() string
		replayed  bool // sent once before, and accepted
		manyOnly  bool // the client is among the 8-key ones
		status    int
		few, many int64 // checks with one key per client, with the 8-key clients
	}{
		{"forged, nobody", func() string { return assertionOf(t, forger, "nobody", tokenURL) }, false, false, 401, 1, 8},
		{"forged, one", func() string { return assertionOf(t, forger, "one", tokenURL) }, false, false, 401, 1, 8},
		{"genuine, one", func() string { return assertionOf(t, one, "one", tokenURL) }, false, false, 200, 1, 1},
		{"genuine, one, replayed", func() string { return assertionOf(t, one, "one", tokenURL) }, true, false, 401, 1, 8},
		{"genuine, one, expired", func() string { return assertionAt(t, one, "one", tokenURL, time.Now().Add(-time.Hour)) }, false, false, 401, 1, 8},
		{"forged, many", func() string { return assertionOf(t, forger, "many", tokenURL) }, false, true, 401, 0, 8},
		{"genuine, many's first key", func() string { return assertionOf(t, eightPriv[0], "many", tokenURL) }, false, true, 200, 0, 1},
		{"genuine, many's last key", func() string { return assertionOf(t, eightPriv[maxClientKeys-1], "many", tokenURL) }, false, true, 200, 0, 8},
		{"genuine, many's last key, replayed", func() string { return assertionOf(t, eightPriv[maxClientKeys-1], "many", tokenURL) }, true, true, 401, 0, 8},
		{"forged EdDSA, nobody", func() string { return assertionOf(t, edKey(), "nobody", tokenURL) }, false, false, 401, 1, 1},
		{"forged RS256 of 4096 bits, nobody", func() string { return assertionOf(t, rsaBig, "nobody", tokenURL) }, false, false, 401, 1, 8},
	} {
		for _, many := range []bool{false, true} {
			if c.manyOnly && !many {
				continue
			}
			if err := iss.Reload(config(many)); err != nil {
				t.Fatal(err)
			}
			want := c.few
			if many {
				want = c.many
			}
			a := c.assertion()
			if c.replayed {
				if _, status := cost(a); status != 200 {
					t.Fatalf("%s, 8-key clients %v: the first use got %d", c.name, many, status)
				}
			}
			got, status := cost(a)
			if got != want || status != c.status {
				t.Errorf("%s, 8-key clients %v: %d checks, %d; want %d, %d", c.name, many, got, status, want, c.status)
			}
		}
	}
}

// TestRedTeamIntrospectorWithAKeyCostsTheIssuerItsOwnKeys: an API whose
// Introspector authenticates with a key (private_key_jwt) asks the
// issuer about every opaque token it has not cached, so each forged
// opaque token an anonymous caller sends the API costs one call, one
// signature by the API, and, at the issuer, the checks of the API's own
// keys up to the one that signed (one here), no failure budget spent:
// the failure budgets cannot hold it back. The issuer padded the API's
// good assertion, as every assertion, to the most keys of its alg any
// client holds (eight, with the eight-key client: finding F9); a success
// is no longer padded, so a client with eight keys changes nothing here.
func TestRedTeamIntrospectorWithAKeyCostsTheIssuerItsOwnKeys(t *testing.T) {
	checks := countAssertionChecks(t)
	apiKey := ecKey(t)
	var eight []ClientKeyConfig
	for range maxClientKeys {
		eight = append(eight, ClientKeyConfig{Key: ecKey(t).Public()})
	}
	for _, c := range []struct {
		name string
		many bool
		want int64
	}{{"one key per client", false, 1}, {"a client with eight keys", true, 1}} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(nil)
			t.Cleanup(srv.Close)
			cfg := &Config{Issuer: srv.URL + "/ids", EphemeralKey: true,
				Clients:      []ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}}},
				APIResources: []APIResourceConfig{{Name: "api", PublicKeys: []ClientKeyConfig{{Key: apiKey.Public()}}, Scopes: []string{scope.AdminWebAPI}}}}
			if c.many {
				cfg.Clients = append(cfg.Clients, ClientConfig{ClientID: "many", PublicKeys: eight, Scopes: []string{scope.AdminWebAPI}})
			}
			iss, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, introspectPath) {
					calls.Add(1)
				}
				iss.ServeHTTP(w, r)
			})
			in, err := accesstoken.New(context.Background(), accesstoken.Config{
				Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"},
				Introspection: &accesstoken.Introspection{Endpoint: srv.URL + "/ids" + introspectPath, ClientID: "api", Key: apiKey},
			})
			if err != nil {
				t.Fatal(err)
			}
			const forged = 20
			before := checks.Load()
			for i := range forged {
				if _, err := in.Validate(context.Background(), "forged-opaque-token-"+strings.Repeat("x", i), accesstoken.Presentation{}); err == nil {
					t.Fatal("a forged token validated")
				}
			}
			if n := calls.Load(); n != forged {
				t.Errorf("%d introspection calls for %d forged tokens", n, forged)
			}
			if got := checks.Load() - before; got != forged*c.want {
				t.Errorf("%d assertion checks at the issuer for %d forged tokens, want %d each", got, forged, c.want)
			} else {
				t.Logf("%d forged opaque tokens: %d introspection calls, %d assertion checks at the issuer", forged, calls.Load(), got)
			}
		})
	}
}
