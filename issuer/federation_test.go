package issuer_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Workload identities as client credentials (issue 42): tokens of a
// foreign issuer, served on loopback by jwktest.JWKS (discovery and a
// JWKS whose keys a test changes or takes down), minted with
// golang-jwt; the exact shapes of Kubernetes, AWS STS, GitHub Actions
// and SPIRE tokens, minted by go-jose, are the conformance module's.

const (
	typeBearer = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	typeSPIFFE = "urn:ietf:params:oauth:client-assertion-type:jwt-spiffe"
	grantJWT   = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// fedClock is a test's clock: the issuer's, and the one tokens are minted
// by.
type fedClock struct{ ns atomic.Int64 }

func newFedClock() *fedClock {
	c := &fedClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *fedClock) now() time.Time             { return time.Unix(0, c.ns.Load()) }
func (c *fedClock) add(d time.Duration)        { c.ns.Add(int64(d)) }
func (c *fedClock) unix(d time.Duration) int64 { return c.now().Add(d).Unix() }

// events records the issuer's events.
type events struct {
	mu  sync.Mutex
	all []observe.Event
}

func (e *events) Observe(_ context.Context, ev observe.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(k observe.Kind) []observe.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []observe.Event
	for _, ev := range e.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// fedEnv is an issuer that trusts the foreign issuer oidc (and a SPIFFE
// trust domain by a bundle file), with clients of federated credentials.
type fedEnv struct {
	*server
	oidc   *jwktest.JWKS
	key    *keys.Key
	clock  *fedClock
	events *events
	bundle string // the bundle file of the trust domain td.test
	svid   *keys.Key
}

func newFedEnv(t *testing.T, edit func(*issuer.Config, *fedEnv)) *fedEnv {
	t.Helper()
	e := &fedEnv{key: jwktest.NewKey(t, "RS256"), svid: jwktest.NewKey(t, "ES256"), clock: newFedClock(), events: &events{}}
	e.oidc = jwktest.NewJWKS(t, e.key)
	e.bundle = filepath.Join(t.TempDir(), "bundle.json")
	writeBundle(t, e.bundle, e.svid)
	e.server = newServer(t, func(c *issuer.Config) {
		c.TrustedIssuers = []issuer.TrustedIssuerConfig{
			{Issuer: e.oidc.Issuer(), Kind: "oidc"},
			{Kind: "spiffe", TrustDomain: "td.test", BundleFile: e.bundle},
		}
		c.ScopeWhenOmitted = "all"
		c.Clients = append(c.Clients,
			issuer.ClientConfig{ClientID: "ci", Scopes: []string{scope.AdminWebAPI},
				FederatedCredentials: []issuer.FederatedCredential{{Issuer: e.oidc.Issuer(), Subject: "repo:acme/app:ref:refs/heads/main"}}},
			issuer.ClientConfig{ClientID: "web", Scopes: []string{scope.ConnectWebAPI},
				FederatedCredentials: []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod/*"}}},
			issuer.ClientConfig{ClientID: "batch", Scopes: []string{scope.ConnectWebAPI}, SecretHashes: []string{secret.HashSHA256("batch-secret").String()},
				FederatedCredentials: []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod"}}},
		)
		if edit != nil {
			edit(c, e)
		}
	}, issuer.WithClock(e.clock.now), issuer.WithObserver(e.events))
	return e
}

// writeBundle writes a SPIFFE bundle of ks: JWT-SVID keys, beside an
// X.509 CA's key, which signs no JWT-SVID.
func writeBundle(t *testing.T, path string, ks ...*keys.Key) {
	t.Helper()
	set := map[string]any{"spiffe_sequence": 1, "spiffe_refresh_hint": 300}
	var list []any
	for _, k := range ks {
		j := k.PublicJWK()
		list = append(list, map[string]any{"kty": j.Kty, "crv": j.Crv, "x": j.X, "y": j.Y, "n": j.N, "e": j.E, "kid": j.Kid, "use": "jwt-svid"})
	}
	ca := jwktest.NewKey(t, "ES256").PublicJWK()
	list = append(list, map[string]any{"kty": ca.Kty, "crv": ca.Crv, "x": ca.X, "y": ca.Y, "use": "x509-svid", "kid": "ca"})
	set["keys"] = list
	b, _ := json.Marshal(set)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// workload mints a token of the foreign OIDC issuer for subject sub at
// the issuer's token endpoint; claims edit it (nil removes one).
func (e *fedEnv) workload(t *testing.T, k *keys.Key, sub string, claims ...any) string {
	t.Helper()
	c := map[string]any{"iss": e.oidc.Issuer(), "sub": sub, "aud": e.tokenURL(), "iat": e.clock.unix(0), "exp": e.clock.unix(10 * time.Minute), "jti": rand.Text()}
	return jwktest.Sign(t, k, map[string]any{"typ": "JWT"}, jwktest.With(c, claims...))
}

// svidOf mints a JWT-SVID of k for the SPIFFE ID id: ES256, aud an
// array, no jti, no nbf, no iss (SPIRE's shape when jwt_issuer is unset).
func (e *fedEnv) svidOf(t *testing.T, k *keys.Key, id string, claims ...any) string {
	t.Helper()
	c := map[string]any{"sub": id, "aud": []string{e.tokenURL()}, "iat": e.clock.unix(0), "exp": e.clock.unix(5 * time.Minute)}
	return jwktest.Sign(t, k, map[string]any{"typ": "JWT"}, jwktest.With(c, claims...))
}

// ask asks for a token with a workload's token as client_assertion.
func (e *fedEnv) ask(t *testing.T, typ, client, assertion string, kv ...string) answer {
	t.Helper()
	f := []string{"grant_type", "client_credentials", "client_assertion_type", typ, "client_assertion", assertion}
	if client != "" {
		f = append(f, "client_id", client)
	}
	return post(t, e.tokenURL(), formType, form(append(f, kv...)...))
}

func TestFederatedClientAuthentication(t *testing.T) {
	e := newFedEnv(t, nil)
	main := "repo:acme/app:ref:refs/heads/main"
	good := e.workload(t, e.key, main)
	for _, c := range []struct {
		name      string
		typ       string
		client    string
		assertion string
		extra     []string
		status    int
		code      string
	}{
		{"an OIDC issuer's token for its client", typeBearer, "ci", good, nil, 200, ""},
		{"the same token again: reused by design", typeBearer, "ci", good, nil, 200, ""},
		{"a JWT-SVID by a /* prefix, as jwt-spiffe", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web"), nil, 200, ""},
		{"a JWT-SVID as jwt-bearer", typeBearer, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web"), nil, 200, ""},
		{"a JWT-SVID whose exact ID another client names", typeSPIFFE, "batch", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod"), nil, 200, ""},
		{"the prefix's own path is not under it", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod"), nil, 401, "invalid_client"},
		{"the token for another client", typeBearer, "web", good, nil, 401, "invalid_client"},
		{"a subject no client names", typeBearer, "ci", e.workload(t, e.key, "repo:acme/app:ref:refs/heads/dev"), nil, 401, "invalid_client"},
		{"a subject in another case", typeBearer, "ci", e.workload(t, e.key, strings.ToUpper(main)), nil, 401, "invalid_client"},
		{"a SPIFFE ID in another case", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/NS/prod/web"), nil, 401, "invalid_client"},
		{"a SPIFFE ID with ..", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/../admin"), nil, 400, "invalid_request"},
		{"a SPIFFE ID percent-encoded", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/%77eb"), nil, 400, "invalid_request"},
		{"a SPIFFE ID with a trailing slash", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web/"), nil, 400, "invalid_request"},
		{"a SPIFFE ID of a path that only begins alike", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/production"), nil, 401, "invalid_client"},
		{"a JWT-SVID of another trust domain", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://other.test/ns/prod/web"), nil, 401, "invalid_client"},
		{"a JWT-SVID signed by the OIDC issuer's key", typeSPIFFE, "web", e.svidOf(t, e.key, "spiffe://td.test/ns/prod/web"), nil, 401, "invalid_client"},
		{"a JWT-SVID with an iss the trust domain has none of", typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web", "iss", e.oidc.Issuer()), nil, 401, "invalid_client"},
		{"the OIDC issuer signing for a SPIFFE client's subject", typeBearer, "web", e.workload(t, e.key, "spiffe://td.test/ns/prod/web"), nil, 401, "invalid_client"},
		{"an OIDC token as jwt-spiffe", typeSPIFFE, "ci", good, nil, 400, "invalid_request"},
		{"another audience", typeBearer, "ci", e.workload(t, e.key, main, "aud", "https://elsewhere.example/token"), nil, 401, "invalid_client"},
		{"expired", typeBearer, "ci", e.workload(t, e.key, main, "iat", e.clock.unix(-20*time.Minute), "exp", e.clock.unix(-5*time.Minute)), nil, 401, "invalid_client"},
		{"without iat", typeBearer, "ci", e.workload(t, e.key, main, "iat", nil), nil, 401, "invalid_client"},
		{"older than the client's maximum assertion age", typeBearer, "ci", e.workload(t, e.key, main, "iat", e.clock.unix(-2*time.Hour), "exp", e.clock.unix(time.Minute)), nil, 401, "invalid_client"},
		{"living longer than the issuer allows", typeBearer, "ci", e.workload(t, e.key, main, "exp", e.clock.unix(3*time.Hour)), nil, 401, "invalid_client"},
		{"signed by a key the issuer does not publish", typeBearer, "ci", e.workload(t, jwktest.NewKey(t, "RS256"), main), nil, 401, "invalid_client"},
		{"without client_id", typeBearer, "", good, nil, 400, "invalid_request"},
		{"with a secret too", typeBearer, "ci", good, []string{"client_secret", "x"}, 400, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := e.ask(t, c.typ, c.client, c.assertion, c.extra...)
			if a.status != c.status || (c.code != "" && a.body["error"] != c.code) {
				t.Fatalf("%d %s, want %d %s", a.status, a.raw, c.status, c.code)
			}
		})
	}
	// A workload's token and a secret together, the secret by Basic.
	req, _ := http.NewRequest(http.MethodPost, e.tokenURL(), strings.NewReader(form("grant_type", "client_credentials", "client_id", "batch",
		"client_assertion_type", typeBearer, "client_assertion", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod"))))
	req.Header.Set("Content-Type", formType)
	req.Header.Set("Authorization", basic("batch", "batch-secret"))
	if a := do(t, req); a.status != 400 {
		t.Errorf("a workload's token with a secret by Basic: %d %s, want 400", a.status, a.raw)
	}
	issued := e.events.of(observe.TokenIssued)
	if len(issued) == 0 {
		t.Fatal("no TokenIssued event")
	}
	if issued[0].Credential != e.oidc.Issuer()+" "+main {
		t.Errorf("the first TokenIssued event names credential %q, want the issuer and the subject", issued[0].Credential)
	}
	if !strings.Contains(e.logs.String(), "token issued for a workload's token") || !strings.Contains(e.logs.String(), `spiffe://td.test spiffe://td.test/ns/prod/*`) {
		t.Errorf("no audit line names the prefix credential:\n%s", e.logs)
	}
}

// TestFederatedKeyRotation: the foreign issuer rotates its key; a token
// of the new one is accepted without a reload, the set fetched again for
// its kid, once.
func TestFederatedKeyRotation(t *testing.T) {
	e := newFedEnv(t, nil)
	sub := "repo:acme/app:ref:refs/heads/main"
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 200 {
		t.Fatalf("before the rotation: %d %s", a.status, a.raw)
	}
	hits := e.oidc.Hits()
	next := jwktest.NewKey(t, "ES256")
	e.oidc.SetKeys(next)
	if a := e.ask(t, typeBearer, "ci", e.workload(t, next, sub)); a.status != 200 {
		t.Fatalf("a token of the new key: %d %s\n%s", a.status, a.raw, e.logs)
	}
	if got := e.oidc.Hits() - hits; got != 1 {
		t.Errorf("the new kid fetched the set %d times, want 1", got)
	}
	// The old key is gone from the set: its tokens are refused, and its
	// kid, now unknown, fetches nothing more within the limit.
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 401 {
		t.Errorf("a token of the retired key: %d, want 401", a.status)
	}
	if got := e.oidc.Hits() - hits; got != 1 {
		t.Errorf("after an unknown kid within the limit, %d fetches, want 1", got)
	}
}

// TestFederatedIssuerDown: keys known keep verifying for the issuer's
// grace while its JWKS fails; then its tokens are refused, with an Error
// line and a keys_fetch_failed event ("stale"); and no request waits on
// the issuer past the bound.
func TestFederatedIssuerDown(t *testing.T) {
	e := newFedEnv(t, func(c *issuer.Config, _ *fedEnv) { c.TrustedIssuers[0].KeysGrace = 20 * time.Minute })
	sub := "repo:acme/app:ref:refs/heads/main"
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 200 {
		t.Fatalf("up: %d %s", a.status, a.raw)
	}
	e.oidc.SetDown(true)
	e.clock.add(10 * time.Minute) // past the refresh: a fetch behind the request, which fails
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 200 {
		t.Fatalf("down, within the grace: %d %s", a.status, a.raw)
	}
	waitFor(t, func() bool { return len(e.events.of(observe.KeysFetchFailed)) > 0 })
	e.clock.add(15 * time.Minute) // past the grace
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 401 {
		t.Fatalf("down past the grace: %d %s, want 401", a.status, a.raw)
	}
	stale := false
	for _, ev := range e.events.of(observe.KeysFetchFailed) {
		stale = stale || ev.Reason == "stale"
	}
	if !stale || !strings.Contains(e.logs.String(), "no fetch of these keys succeeded within their grace") {
		t.Errorf("no stale event or line:\n%s", e.logs)
	}
	e.oidc.SetDown(false)
	e.clock.add(time.Minute) // the limit of unknown-kid fetches
	if a := e.ask(t, typeBearer, "ci", e.workload(t, e.key, sub)); a.status != 200 {
		t.Errorf("up again: %d %s", a.status, a.raw)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("waited 10 s in vain")
		}
	}
}

// TestFederatedIssuerSlowOrHostile: an issuer that does not answer holds
// no token request past the wait bound; a JWKS past its size, of too many
// keys, or a redirect is refused, and the client gets invalid_client.
func TestFederatedIssuerSlowOrHostile(t *testing.T) {
	var mode atomic.Value
	mode.Store("")
	key := jwktest.NewKey(t, "ES256")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "huge":
			_, _ = w.Write([]byte(`{"keys":[` + strings.Repeat(`{"kty":"oct","k":"AAAA"},`, 60000) + `{}]}`))
		case "many":
			var list []string
			for i := range 200 {
				j := key.PublicJWK()
				j.Kid = fmt.Sprint(i)
				b, _ := json.Marshal(j)
				list = append(list, string(b))
			}
			_, _ = w.Write([]byte(`{"keys":[` + strings.Join(list, ",") + `]}`))
		case "redirect":
			http.Redirect(w, r, srv.URL+"/elsewhere", http.StatusFound)
		}
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{key.PublicJWK()}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, m := range []string{"slow", "huge", "many", "redirect"} {
		t.Run(m, func(t *testing.T) {
			mode.Store(m)
			e := newFedEnv(t, func(c *issuer.Config, e *fedEnv) {
				c.TrustedIssuers = append(c.TrustedIssuers, issuer.TrustedIssuerConfig{Issuer: "https://hostile.example", Kind: "oidc", JWKSURI: srv.URL + "/jwks"})
				c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "victim", Scopes: []string{scope.AdminWebAPI},
					FederatedCredentials: []issuer.FederatedCredential{{Issuer: "https://hostile.example", Subject: "w"}}})
			})
			tok := jwktest.Sign(t, key, map[string]any{"typ": "JWT"}, map[string]any{"iss": "https://hostile.example", "sub": "w",
				"aud": e.tokenURL(), "iat": e.clock.unix(0), "exp": e.clock.unix(time.Minute)})
			done := make(chan answer, 1)
			go func() { done <- e.ask(t, typeBearer, "victim", tok) }()
			select {
			case a := <-done:
				if a.status != 401 {
					t.Errorf("%d %s, want 401", a.status, a.raw)
				}
			case <-time.After(8 * time.Second): // the wait bound is 3 s; the fetch's 10
				t.Fatal("the token request still waits on the issuer")
			}
		})
	}
}

// TestFederatedKubernetesInCluster: the in-cluster JWKS, fetched from an
// API server stand-in over TLS with the pod's token (read at each fetch)
// and CA; a namespace's default account only where the client says.
func TestFederatedKubernetesInCluster(t *testing.T) {
	ca := certtest.NewCA(t, "cluster")
	key := jwktest.NewKey(t, "RS256")
	dir := t.TempDir()
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenFile, []byte("pod-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, certtest.PEM(ca.Cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	var auth atomic.Value
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		if r.URL.Path != "/openid/v1/jwks" || r.Header.Get("Authorization") != "Bearer pod-token-1" {
			http.Error(w, `{"kind":"Status","code":401}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{key.PublicJWK()}})
	}))
	api.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}}
	api.StartTLS()
	t.Cleanup(api.Close)
	const clusterIss = "https://kubernetes.default.svc.cluster.local"
	e := newFedEnv(t, func(c *issuer.Config, e *fedEnv) {
		c.TrustedIssuers = append(c.TrustedIssuers, issuer.TrustedIssuerConfig{Issuer: clusterIss, Kind: "kubernetes", InCluster: true,
			APIServer: api.URL, TokenFile: tokenFile, CAFile: caFile, MaxTokenLifetime: time.Hour})
		c.Clients = append(c.Clients,
			issuer.ClientConfig{ClientID: "pod", Scopes: []string{scope.AdminWebAPI},
				FederatedCredentials: []issuer.FederatedCredential{{Issuer: clusterIss, Subject: "system:serviceaccount:prod:reporter"}}},
			issuer.ClientConfig{ClientID: "legacy", Scopes: []string{scope.AdminWebAPI}, AllowDefaultServiceAccount: true,
				FederatedCredentials: []issuer.FederatedCredential{{Issuer: clusterIss, Subject: "system:serviceaccount:legacy:default"}}})
	})
	k8s := func(sub string) string {
		return jwktest.Sign(t, key, map[string]any{"typ": nil}, map[string]any{"iss": clusterIss, "sub": sub, "aud": []string{e.tokenURL()},
			"iat": e.clock.unix(0), "nbf": e.clock.unix(0), "exp": e.clock.unix(time.Hour), "jti": rand.Text(),
			"kubernetes.io": map[string]any{"namespace": "prod", "serviceaccount": map[string]any{"name": "reporter", "uid": "u"}}})
	}
	if a := e.ask(t, typeBearer, "pod", k8s("system:serviceaccount:prod:reporter")); a.status != 200 {
		t.Fatalf("a projected token: %d %s (API server saw %v)", a.status, a.raw, auth.Load())
	}
	if a := e.ask(t, typeBearer, "legacy", k8s("system:serviceaccount:legacy:default")); a.status != 200 {
		t.Errorf("a default account a client allows: %d %s", a.status, a.raw)
	}
	if a := e.ask(t, typeBearer, "pod", k8s("system:serviceaccount:prod:default")); a.status != 401 {
		t.Errorf("another namespace's default account: %d, want 401", a.status)
	}
	// A default account that no client allows is refused at load.
	cfg := testConfig("https://ids.example/ids")
	cfg.TrustedIssuers = []issuer.TrustedIssuerConfig{{Issuer: clusterIss, Kind: "kubernetes"}}
	cfg.Clients = append(cfg.Clients, issuer.ClientConfig{ClientID: "k", Scopes: []string{scope.AdminWebAPI},
		FederatedCredentials: []issuer.FederatedCredential{{Issuer: clusterIss, Subject: "system:serviceaccount:prod:default"}}})
	var ce *issuer.ConfigError
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != `clients[3] ("k").federatedCredentials[0]` {
		t.Errorf("a default account without allowDefaultServiceAccount: %v", err)
	}
}

// TestFederationConfig: what the configuration refuses, by the field the
// file names.
func TestFederationConfig(t *testing.T) {
	const gh = "https://token.actions.githubusercontent.com"
	for _, c := range []struct {
		name  string
		edit  func(*issuer.Config)
		field string
	}{
		{"jwksUri beside publicKeys", func(c *issuer.Config) {
			c.Clients[0].JWKSURI = "https://keys.example/jwks"
			c.Clients[0].PublicKeys = []issuer.ClientKeyConfig{{Key: signerKey().Public()}}
		}, `clients[0] ("admin").jwksUri`},
		{"a plain http jwksUri", func(c *issuer.Config) { c.Clients[0].JWKSURI = "http://keys.example/jwks" }, `clients[0] ("admin").jwksUri`},
		{"a plain http jwksUri on loopback, not allowed", func(c *issuer.Config) { c.Clients[0].JWKSURI = "http://127.0.0.1:9/jwks" }, `clients[0] ("admin").jwksUri`},
		{"an issuer nobody trusts", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Issuer: "https://evil.example", Subject: "x"}}
		}, `clients[0] ("admin").federatedCredentials[0]`},
		{"a subject that looks like a pattern", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Issuer: gh, Subject: "repo:acme/*"}}
		}, `clients[0] ("admin").federatedCredentials[0]`},
		{"a SPIFFE ID of another trust domain", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Issuer: "spiffe://td.test", Subject: "spiffe://other.test/a"}}
		}, `clients[0] ("admin").federatedCredentials[0]`},
		{"a SPIFFE prefix without its slash", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns*"}}
		}, `clients[0] ("admin").federatedCredentials[0]`},
		{"a SPIFFE ID with ..", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/a/../b"}}
		}, `clients[0] ("admin").federatedCredentials[0]`},
		{"one subject for two clients", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Issuer: gh, Subject: "repo:acme/app:ref:refs/heads/main"}}
			c.Clients[1].FederatedCredentials = []issuer.FederatedCredential{{Issuer: gh, Subject: "repo:acme/app:ref:refs/heads/main"}}
		}, `clients[1] ("connect").federatedCredentials[0]`},
		{"a prefix over another client's ID", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod/web"}}
			c.Clients[1].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/*"}}
		}, `clients[1] ("connect").federatedCredentials[0]`},
		{"an ID under another client's prefix", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/*"}}
			c.Clients[1].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod/web"}}
		}, `clients[1] ("connect").federatedCredentials[0]`},
		{"a prefix over another client's prefix", func(c *issuer.Config) {
			c.Clients[0].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod/*"}}
			c.Clients[1].FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://td.test/*"}}
		}, `clients[1] ("connect").federatedCredentials[0]`},
		{"a trusted issuer twice", func(c *issuer.Config) {
			c.TrustedIssuers = append(c.TrustedIssuers, issuer.TrustedIssuerConfig{Issuer: gh, Kind: "oidc"})
		}, `trustedIssuers[2]`},
		{"a bundle for an OIDC issuer", func(c *issuer.Config) { c.TrustedIssuers[0].BundleFile = "b.json" }, `trustedIssuers[0]`},
		{"a key source over plain http", func(c *issuer.Config) { c.TrustedIssuers[0].JWKSURI = "http://keys.example/jwks" }, `trustedIssuers[0]`},
		{"the grant without scopes", func(c *issuer.Config) { c.TrustedIssuers[0].JWTBearerGrant = true }, `trustedIssuers[0].scopes`},
		{"a clock skew too loose", func(c *issuer.Config) { c.TrustedIssuers[0].ClockSkew = time.Hour }, `trustedIssuers[0].clockSkewSeconds`},
		{"a spiffe issuer without trust domain", func(c *issuer.Config) { c.TrustedIssuers[1].TrustDomain = "" }, `trustedIssuers[1].trustDomain`},
		{"a trust domain in capitals", func(c *issuer.Config) { c.TrustedIssuers[1].TrustDomain = "TD.test" }, `trustedIssuers[1].trustDomain`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig("https://ids.example/ids")
			cfg.TrustedIssuers = []issuer.TrustedIssuerConfig{{Issuer: gh, Kind: "oidc"}, {Kind: "spiffe", TrustDomain: "td.test", BundleEndpoint: "https://spire.example:8443"}}
			c.edit(cfg)
			var ce *issuer.ConfigError
			if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
				t.Fatalf("%v, want a ConfigError of %s", err, c.field)
			}
		})
	}
}

// TestFederationRegisteredClash: a registered client whose federated
// credential names a file client's identity is left out; the file's wins.
func TestFederationRegisteredClash(t *testing.T) {
	e := newFedEnv(t, nil)
	err := e.iss.SetRegistered([]issuer.ClientConfig{
		{ClientID: "thief", Scopes: []string{scope.AdminWebAPI}, FederatedCredentials: []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/prod/web/*"}}},
		{ClientID: "fine", Scopes: []string{scope.AdminWebAPI}, FederatedCredentials: []issuer.FederatedCredential{{Subject: "spiffe://td.test/ns/dev/web"}}},
	}, nil)
	var re *issuer.RegistrationError
	if !errors.As(err, &re) || re.ID != "thief" || !strings.Contains(re.Err.Field, "federatedCredentials[0]") {
		t.Fatalf("%v, want thief left out", err)
	}
	if a := e.ask(t, typeSPIFFE, "web", e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web/a")); a.status != 200 {
		t.Errorf("the file's client: %d %s", a.status, a.raw)
	}
	if a := e.ask(t, typeSPIFFE, "fine", e.svidOf(t, e.svid, "spiffe://td.test/ns/dev/web")); a.status != 200 {
		t.Errorf("a registered client of its own identity: %d %s", a.status, a.raw)
	}
}

// TestJWKSURIClient: a private_key_jwt client whose keys are at its
// jwksUri rotates them without a reload; a jwksUri that reaches a
// loopback address without allowLoopbackJwksUri reaches nothing.
func TestJWKSURIClient(t *testing.T) {
	k1 := jwktest.NewKey(t, "ES256")
	keysAt := jwktest.NewJWKS(t, k1)
	e := newFedEnv(t, func(c *issuer.Config, _ *fedEnv) {
		c.ClientAssertions.AllowLoopbackJWKS = true
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "rotor", Scopes: []string{scope.AdminWebAPI}, JWKSURI: keysAt.JWKSURL()})
	})
	ask := func(k *keys.Key) answer {
		return post(t, e.tokenURL(), formType, assertionForm(assertionFor(t, k, "rotor", e.tokenURL(), map[string]any{"iat": e.clock.unix(0), "exp": e.clock.unix(time.Minute)}, nil)))
	}
	if a := ask(k1); a.status != 200 {
		t.Fatalf("a key of its jwksUri: %d %s\n%s", a.status, a.raw, e.logs)
	}
	k2 := jwktest.NewKey(t, "ES256")
	keysAt.SetKeys(k2)
	if a := ask(k2); a.status != 200 {
		t.Errorf("its new key: %d %s", a.status, a.raw)
	}
	if a := ask(jwktest.NewKey(t, "ES256")); a.status != 401 {
		t.Errorf("a key it does not publish: %d", a.status)
	}
	// The same URL, without the loopback allowance: refused at the dial.
	hits := keysAt.Hits()
	f := newFedEnv(t, func(c *issuer.Config, _ *fedEnv) {
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "inner", Scopes: []string{scope.AdminWebAPI},
			JWKSURI: strings.Replace(keysAt.JWKSURL(), "http://", "https://", 1)})
	})
	a := post(t, f.tokenURL(), formType, assertionForm(assertionFor(t, k2, "inner", f.tokenURL(), map[string]any{"iat": f.clock.unix(0), "exp": f.clock.unix(time.Minute)}, nil)))
	if a.status != 401 || keysAt.Hits() != hits {
		t.Errorf("a jwksUri on loopback: %d, %d fetches reached it", a.status, keysAt.Hits()-hits)
	}
	if !strings.Contains(f.logs.String(), "not a public address") {
		t.Errorf("no line says why:\n%s", f.logs)
	}
}

// TestJWTBearerGrant: RFC 7523 §2.1 on the same trust: the token goes to
// the client the subject maps to, its scopes capped by the issuer's and
// the client's; a client or an issuer that did not opt in gets nothing.
func TestJWTBearerGrant(t *testing.T) {
	e := newFedEnv(t, func(c *issuer.Config, e *fedEnv) {
		c.TrustedIssuers[0].JWTBearerGrant, c.TrustedIssuers[0].Scopes = true, []string{scope.AdminWebAPI}
		c.Clients = append(c.Clients,
			issuer.ClientConfig{ClientID: "wif", Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}, ScopeWhenOmitted: "all", GrantTypes: []string{grantJWT},
				FederatedCredentials: []issuer.FederatedCredential{{Issuer: e.oidc.Issuer(), Subject: "repo:acme/wif:ref:refs/heads/main"}}})
	})
	grant := func(assertion string, kv ...string) answer {
		return post(t, e.tokenURL(), formType, form(append([]string{"grant_type", grantJWT, "assertion", assertion}, kv...)...))
	}
	a := grant(e.workload(t, e.key, "repo:acme/wif:ref:refs/heads/main"))
	if a.status != 200 || a.body["scope"] != scope.AdminWebAPI {
		t.Fatalf("the grant: %d %s, want pd_AdminWebApi alone", a.status, a.raw)
	}
	claims := decodeClaims(t, a.body["access_token"].(string))
	if claims["client_id"] != "wif" {
		t.Errorf("issued to %v, want wif", claims["client_id"])
	}
	for _, c := range []struct {
		name   string
		a      answer
		status int
		code   string
	}{
		{"a scope the issuer does not give", grant(e.workload(t, e.key, "repo:acme/wif:ref:refs/heads/main"), "scope", scope.ConnectWebAPI), 400, "invalid_scope"},
		{"a subject that maps to no client", grant(e.workload(t, e.key, "repo:acme/nobody:ref:refs/heads/main")), 400, "invalid_grant"},
		{"a client without the grant", grant(e.workload(t, e.key, "repo:acme/app:ref:refs/heads/main")), 400, "unauthorized_client"},
		{"an issuer without the grant", grant(e.svidOf(t, e.svid, "spiffe://td.test/ns/prod/web")), 400, "invalid_grant"},
		{"with client credentials", grant(e.workload(t, e.key, "repo:acme/wif:ref:refs/heads/main"), "client_id", "wif"), 400, "invalid_request"},
		{"without assertion", grant(""), 400, "invalid_request"},
	} {
		if c.a.status != c.status || c.a.body["error"] != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, c.a.status, c.a.raw, c.status, c.code)
		}
	}
	doc := get(t, e.issuerURL()+"/.well-known/openid-configuration")
	if !strings.Contains(doc, grantJWT) || !strings.Contains(doc, typeSPIFFE) {
		t.Errorf("discovery lists neither the grant nor jwt-spiffe: %s", doc)
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return do(t, req).raw
}

func decodeClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(payload, &m)
	}
	if err != nil {
		t.Fatalf("token claims: %v", err)
	}
	return m
}

// TestFederationRegisteredChanges: a change of the registry moves a
// workload identity as it says (UpdateRegistered applies it as a change,
// not by building the roster anew): a registration's identity replaced
// authenticates it no more, and the new one does; an identity freed by a
// removal may be another client's; one still held may not, in a change
// as in a whole load.
func TestFederationRegisteredChanges(t *testing.T) {
	e := newFedEnv(t, nil)
	reg := func(id string, subs ...string) issuer.ClientConfig {
		cc := issuer.ClientConfig{ClientID: id, Scopes: []string{scope.AdminWebAPI}}
		for _, s := range subs {
			cc.FederatedCredentials = append(cc.FederatedCredentials, issuer.FederatedCredential{Subject: s})
		}
		return cc
	}
	asks := func(client, sub string) int {
		return e.ask(t, typeSPIFFE, client, e.svidOf(t, e.svid, sub)).status
	}
	if err := e.iss.SetRegistered([]issuer.ClientConfig{reg("a", "spiffe://td.test/ns/dev/a"), reg("b", "spiffe://td.test/ns/dev/b/*")}, nil); err != nil {
		t.Fatal(err)
	}
	if s := asks("a", "spiffe://td.test/ns/dev/a"); s != 200 {
		t.Fatalf("a: %d", s)
	}
	// a's identity replaced.
	if err := e.iss.UpdateRegistered([]issuer.ClientConfig{reg("a", "spiffe://td.test/ns/dev/a2")}, nil); err != nil {
		t.Fatal(err)
	}
	if s := asks("a", "spiffe://td.test/ns/dev/a"); s != 401 {
		t.Errorf("a's old identity after the change: %d, want 401", s)
	}
	if s := asks("a", "spiffe://td.test/ns/dev/a2"); s != 200 {
		t.Errorf("a's new identity: %d", s)
	}
	// b's prefix still holds what is under it; freed by b's removal.
	err := e.iss.UpdateRegistered([]issuer.ClientConfig{reg("c", "spiffe://td.test/ns/dev/b/x")}, nil)
	var re *issuer.RegistrationError
	if !errors.As(err, &re) || re.ID != "c" || !strings.Contains(re.Err.Field, "federatedCredentials[0]") {
		t.Fatalf("an identity under b's prefix: %v, want c left out", err)
	}
	if err := e.iss.UpdateRegistered(nil, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if s := asks("b", "spiffe://td.test/ns/dev/b/x"); s != 401 {
		t.Errorf("removed b's identity: %d, want 401", s)
	}
	if err := e.iss.UpdateRegistered([]issuer.ClientConfig{reg("c", "spiffe://td.test/ns/dev/b/x")}, nil); err != nil {
		t.Fatalf("the identity b's removal freed: %v", err)
	}
	if s := asks("c", "spiffe://td.test/ns/dev/b/x"); s != 200 {
		t.Errorf("c: %d", s)
	}
	// CheckRegistered tells what a change would do and changes nothing.
	if err := e.iss.CheckRegistered([]issuer.ClientConfig{reg("d", "spiffe://td.test/ns/dev/b/x")}, nil); err == nil {
		t.Error("CheckRegistered of c's identity for d: nil")
	}
	if err := e.iss.CheckRegistered([]issuer.ClientConfig{reg("c", "spiffe://td.test/ns/dev/c")}, nil); err != nil {
		t.Errorf("CheckRegistered of c's own change: %v", err)
	}
	if s := asks("c", "spiffe://td.test/ns/dev/b/x"); s != 200 {
		t.Errorf("c after the checks: %d", s)
	}
}
