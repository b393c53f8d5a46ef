package issuer_test

import (
	"context"
	"crypto"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/justinas/alice"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

func TestClientCredentialsAndRequireBearer(t *testing.T) {
	s := newServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The validator finds the JWKS by discovery, as a separate service would.
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: s.issuerURL(), Audience: []string{s.issuerURL() + "/resources"}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(
		func(w http.ResponseWriter, r *http.Request) {
			c, _ := accesstoken.ClaimsFrom(r.Context())
			fmt.Fprint(w, c.ClientID)
		}))
	defer api.Close()

	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		t.Run(fmt.Sprint("auth style ", style), func(t *testing.T) {
			cc := clientcredentials.Config{ClientID: "admin", ClientSecret: adminSecret, TokenURL: s.tokenURL(), Scopes: []string{scope.AdminWebAPI}, AuthStyle: style}
			resp, err := cc.Client(ctx).Get(api.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "admin" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
		})
	}
}

func TestAccessTokenClaims(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Clients[1].Audience = []string{"https://api.example"}
	})
	cc := clientcredentials.Config{ClientID: "connect", ClientSecret: connectSecret, TokenURL: s.tokenURL(), Scopes: []string{scope.ConnectWebAPI}}
	before := time.Now().Unix()
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok.AccessToken, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", tok.AccessToken)
	}
	var header map[string]any
	var claims map[string]any
	decode(t, parts[0], &header)
	decode(t, parts[1], &claims)

	// The key: fetch the JWKS and check the kid is the key's thumbprint.
	a := do(t, mustRequest(t, http.MethodGet, s.URL+"/ids/.well-known/openid-configuration/jwks"))
	jwks := a.body["keys"].([]any)
	if len(jwks) != 1 {
		t.Fatalf("jwks = %v", a.raw)
	}
	jwk := jwks[0].(map[string]any)
	if header["typ"] != "at+jwt" || header["alg"] != "ES256" || header["kid"] != jwk["kid"] || jwk["use"] != "sig" || jwk["alg"] != "ES256" {
		t.Errorf("header %v, jwk %v", header, jwk)
	}
	if claims["iss"] != s.issuerURL() || claims["sub"] != "connect" || claims["client_id"] != "connect" || claims["scope"] != scope.ConnectWebAPI {
		t.Errorf("claims = %v", claims)
	}
	if aud, _ := claims["aud"].([]any); len(aud) != 1 || aud[0] != "https://api.example" {
		t.Errorf("aud = %v", claims["aud"])
	}
	iat, nbf, exp := claims["iat"].(float64), claims["nbf"].(float64), claims["exp"].(float64)
	if int64(iat) < before || nbf != iat || exp != iat+600 {
		t.Errorf("iat %v nbf %v exp %v", iat, nbf, exp)
	}
	// The jti is crypto/rand.Text: 26 base32 characters, 130 random bits.
	jti, _ := claims["jti"].(string)
	if raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(jti); err != nil || len(jti) != 26 || len(raw) < 16 {
		t.Errorf("jti %q is not 130 random bits", jti)
	}
	again, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var next map[string]any
	decode(t, strings.Split(again.AccessToken, ".")[1], &next)
	if next["jti"] == jti {
		t.Errorf("two tokens share the jti %q", jti)
	}
	// The signature verifies with the published key.
	keyfunc := func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		ks, err := s.iss.VerificationKeys(context.Background(), kid, t.Method.Alg())
		if err != nil {
			return nil, err
		}
		return ks[0], nil
	}
	if _, err := jwt.Parse(tok.AccessToken, keyfunc); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
}

func TestScopeFormatArray(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.ScopeFormat = "array" })
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", scope.AdminWebAPI+" "+scope.ConnectWebAPI))
	if a.body["scope"] != scope.AdminWebAPI+" "+scope.ConnectWebAPI {
		t.Errorf("the answer's scope is always a string: %v", a.body["scope"])
	}
	var claims map[string]any
	decode(t, strings.Split(a.body["access_token"].(string), ".")[1], &claims)
	if sc, _ := claims["scope"].([]any); len(sc) != 2 || sc[0] != scope.AdminWebAPI || sc[1] != scope.ConnectWebAPI {
		t.Errorf("scope claim = %v", claims["scope"])
	}
}

func TestDiscovery(t *testing.T) {
	s := newServer(t, nil)
	a := do(t, mustRequest(t, http.MethodGet, s.URL+"/ids/.well-known/openid-configuration"))
	want := map[string]any{
		"issuer":                                s.issuerURL(),
		"token_endpoint":                        s.issuerURL() + "/connect/token",
		"jwks_uri":                              s.issuerURL() + "/.well-known/openid-configuration/jwks",
		"grant_types_supported":                 []any{"client_credentials"},
		"token_endpoint_auth_methods_supported": []any{"client_secret_basic", "client_secret_post", "private_key_jwt"},
		"scopes_supported":                      []any{scope.AdminWebAPI, scope.ConnectWebAPI},
		"response_types_supported":              []any{"token"},
		"token_endpoint_auth_signing_alg_values_supported": []any{"ES256", "RS256", "PS256", "EdDSA", "Ed25519"},
	}
	for k, v := range want {
		if fmt.Sprint(a.body[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, a.body[k], v)
		}
	}
	if a.header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("Cache-Control = %q", a.header.Get("Cache-Control"))
	}
	if a := do(t, mustRequest(t, http.MethodPost, s.URL+"/ids/.well-known/openid-configuration/jwks")); a.status != 405 {
		t.Errorf("POST to JWKS = %d", a.status)
	}
	if a := do(t, mustRequest(t, http.MethodGet, s.URL+"/ids/nothing")); a.status != 404 {
		t.Errorf("unknown path = %d", a.status)
	}
}

// TestBruteForceIsSlowedPerClient: 1,000 wrong secrets for one client from
// one address get 429 after the threshold, while a second client (from
// another address) keeps getting tokens all along.
func TestBruteForceIsSlowedPerClient(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Limits = limit.Config{FailedAttemptsPerSubject: 5, FailedAttemptsPerAddress: 50, TrustedProxyHeader: "X-Forwarded-For"}
	})
	attack := func(i int) string { // a new guess each time: a repeated one is charged once
		return form("grant_type", "client_credentials", "client_id", "admin", "client_secret", fmt.Sprint("guess-", i), "scope", scope.AdminWebAPI)
	}
	legit := form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", scope.ConnectWebAPI)
	counts := map[int]int{}
	for i := range 1000 {
		a := post(t, s.tokenURL(), formType, attack(i), "X-Forwarded-For", "203.0.113.9")
		counts[a.status]++
		switch {
		case i < 5 && a.status != 401:
			t.Fatalf("attempt %d: %d before the threshold", i, a.status)
		case i >= 5 && a.status != 429:
			t.Fatalf("attempt %d: %d after the threshold", i, a.status)
		case a.status == 429 && (a.body["error"] != "slow_down" || a.header.Get("Retry-After") == ""):
			t.Fatalf("429 answer = %v %v", a.header, a.body)
		}
		if i%100 == 0 {
			if other := post(t, s.tokenURL(), formType, legit, "X-Forwarded-For", "198.51.100.7"); other.status != 200 {
				t.Fatalf("the other client was slowed at attempt %d: %d %s", i, other.status, other.raw)
			}
		}
	}
	if counts[401] != 5 || counts[429] != 995 {
		t.Fatalf("answers = %v", counts)
	}
	// The attacker's guesses never lock the client out: its right secret
	// from an address that has not failed still gets a token, while the
	// attacker's address stays refused, even with the right secret.
	right := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)
	if a := post(t, s.tokenURL(), formType, right, "X-Forwarded-For", "198.51.100.1"); a.status != 200 {
		t.Errorf("the client's right secret from another address got %d %s", a.status, a.raw)
	}
	if a := post(t, s.tokenURL(), formType, right, "X-Forwarded-For", "203.0.113.9"); a.status != 429 {
		t.Errorf("the attacker's address got %d", a.status)
	}
}

func TestBruteForceIsSlowedPerAddress(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Limits = limit.Config{FailedAttemptsPerSubject: 100, FailedAttemptsPerAddress: 3}
	})
	for i := range 3 {
		a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", fmt.Sprint("random-", i), "client_secret", "x", "scope", scope.AdminWebAPI))
		if a.status != 401 {
			t.Fatalf("attempt %d: %d", i, a.status)
		}
	}
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI))
	if a.status != 429 {
		t.Fatalf("address not locked out: %d", a.status)
	}
}

func TestReloadKeepsServingOnBadConfig(t *testing.T) {
	s := newServer(t, nil)
	bad := testConfig(s.issuerURL())
	bad.Clients = append(bad.Clients, bad.Clients[0])
	err := s.iss.Reload(bad)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "clients[3].clientId" {
		t.Fatalf("err = %v", err)
	}
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI))
	if a.status != 200 {
		t.Fatalf("after a bad reload: %d %s", a.status, a.raw)
	}
}

// TestRotationUnderLoad rotates the signing key while clients keep asking
// for tokens and a validator in the same process keeps checking them.
func TestRotationUnderLoad(t *testing.T) {
	k1, k2 := mustKey(t, "ES256"), mustKey(t, "EdDSA")
	s := newServer(t, func(c *issuer.Config) { c.Keys, c.EphemeralKey = []issuer.KeyConfig{{Key: k1}}, false })
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: s.issuerURL(), Audience: []string{s.issuerURL() + "/resources"}, Keys: s.iss})
	if err != nil {
		t.Fatal(err)
	}
	var failures, done atomic.Int64
	l := startLoad(4, func() {
		a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI))
		tok, _ := a.body["access_token"].(string)
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); a.status != 200 || err != nil {
			failures.Add(1)
		}
		done.Add(1)
	})
	// reload waits until no token of the keys before the last reload is
	// still in flight (the guide's "once the old key's last token has
	// expired"), then reloads.
	reload := func(ks ...issuer.KeyConfig) {
		l.settle()
		cfg := testConfig(s.issuerURL())
		cfg.Keys, cfg.EphemeralKey = ks, false
		if err := s.iss.Reload(cfg); err != nil {
			t.Error(err)
		}
	}
	reload(issuer.KeyConfig{Key: k1}, issuer.KeyConfig{Key: k2}) // publish the new key
	reload(issuer.KeyConfig{Key: k2}, issuer.KeyConfig{Key: k1}) // it signs
	reload(issuer.KeyConfig{Key: k2})                            // the old one goes
	reload(issuer.KeyConfig{Key: k2})
	l.end()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d requests failed during rotation", failures.Load(), done.Load())
	}
	// A token of the dropped key no longer validates.
	old := newServer(t, func(c *issuer.Config) {
		c.Issuer, c.Keys, c.EphemeralKey = s.issuerURL(), []issuer.KeyConfig{{Key: k1}}, false
	})
	a := post(t, old.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI))
	if _, err := v.Validate(context.Background(), a.body["access_token"].(string), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("token of a dropped key: %v", err)
	}
}

func TestEphemeralKeyIsAnnounced(t *testing.T) {
	s := newServer(t, nil)
	if !strings.Contains(s.logs.String(), "NO SIGNING KEY CONFIGURED") {
		t.Fatalf("log = %s", s.logs.String())
	}
}

// TestEphemeralKeyIsOptIn: an issuer without keys does not start unless
// the configuration asks for an ephemeral key, and asking for one beside
// keys is refused too.
func TestEphemeralKeyIsOptIn(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*issuer.Config)
		field string
	}{
		{"no keys and no ephemeralKey", func(c *issuer.Config) { c.EphemeralKey = false }, "keys"},
		{"keys and ephemeralKey", func(c *issuer.Config) { c.Keys = []issuer.KeyConfig{{Key: mustKey(t, "ES256")}} }, "ephemeralKey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig("http://h/ids")
			c.edit(cfg)
			_, err := issuer.New(cfg)
			var ce *issuer.ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field {
				t.Fatalf("New: %v, want a ConfigError for %s", err, c.field)
			}
		})
	}
}

// TestLoggerAndClockAreTheIssuers: New's options hold for the issuer's
// life; Reload takes a configuration only.
func TestLoggerAndClockAreTheIssuers(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newServer(t, nil, issuer.WithClock(func() time.Time { return at }))
	if err := s.iss.Reload(testConfig(s.issuerURL())); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.logs.String(), "NO SIGNING KEY CONFIGURED"); n != 2 {
		t.Fatalf("the reload did not log to New's logger (%d warnings):\n%s", n, s.logs.String())
	}
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI))
	var claims map[string]any
	decode(t, strings.Split(a.body["access_token"].(string), ".")[1], &claims)
	if claims["iat"] != float64(at.Unix()) {
		t.Fatalf("iat %v after a reload, want New's clock's %d", claims["iat"], at.Unix())
	}
}

func TestLoadConfig(t *testing.T) {
	cfg, err := issuer.LoadConfig("testdata/example-config.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != "testdata" || cfg.Keys[0].File != "example-es256.pem" {
		t.Fatalf("Dir %q, keys[0].file %q: loading keeps the file's paths and notes its folder", cfg.Dir, cfg.Keys[0].File)
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if iss.URL() != "http://127.0.0.1:8080/ids" || len(iss.KeyIDs()) != 2 {
		t.Errorf("loaded %v", cfg)
	}
	// demo-all's second hash is sha512 of another secret: both work.
	srv := httptest.NewServer(iss)
	defer srv.Close()
	for _, sec := range []string{"demo-all-secret", "demo-all-secret-next"} {
		a := post(t, srv.URL+"/ids/connect/token", formType, form("grant_type", "client_credentials", "client_id", "demo-all", "client_secret", sec, "scope", scope.ConnectWebAPI))
		if a.status != 200 || a.body["expires_in"] != float64(1800) {
			t.Errorf("secret %d: %d %s", len(sec), a.status, a.raw)
		}
	}
}

// TestValidateIsPure: Validate checks fields only. It reads no key file
// and leaves the Config as it was, defaults unapplied; New reads the
// files.
func TestValidateIsPure(t *testing.T) {
	cfg := testConfig("http://h/ids/")
	cfg.EphemeralKey = false
	cfg.Keys = []issuer.KeyConfig{{File: "missing.pem"}}
	cfg.Dir = t.TempDir()
	before := fmt.Sprintf("%#v", *cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate read the key file: %v", err)
	}
	if after := fmt.Sprintf("%#v", *cfg); after != before {
		t.Fatalf("Validate changed the Config:\n%s\n%s", before, after)
	}
	_, err := issuer.New(cfg)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "keys[0]" || !strings.Contains(ce.Reason, "no such file") {
		t.Fatalf("New: %v, want keys[0]: no such file", err)
	}
}

// TestConfigErrors: each wrong field is named, by the step that can know
// it: decoding (ParseConfig: the file's own forms too, such as a key's
// RFC 3339 times, a proxy's prefix, a floor of -1 or more), checking
// (Validate, and New and Reload before anything else), or reading the key
// files (New and Reload).
func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	writePEM := func(name, alg string) string {
		k := mustKey(t, alg)
		b, err := keys.EncodePEM(k)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	es := writePEM("es.pem", "ES256")
	ecJWK := publicJWK(mustKey(t, "ES256").Public(), "")
	privJWK := strings.Replace(ecJWK, `"kty"`, `"d":"AAAA","kty"`, 1)
	const (
		decoding = "ParseConfig"
		checking = "Validate"
		reading  = "New"
	)
	client := `{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"]}`
	dev := `"issuer":"http://h/ids","ephemeralKey":true`
	// A key schedule: key is a key with times; the keys are checked before
	// their files are read, so they may be the same file.
	key := func(times string) string { return `{"file":"` + es + `"` + times + `}` }
	sched := func(top string, keys ...string) string {
		return `{"issuer":"http://h/ids"` + top + `,"keys":[` + strings.Join(keys, ",") + `],"clients":[` + client + `]}`
	}
	long := `,"clients":[` + client + `,{"clientId":"b","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"],"accessTokenLifetime":7200}]`
	cases := []struct {
		name, json, step, field, reason string
	}{
		{"unknown field", `{` + dev + `,"clients":[],"colour":"red"}`, decoding, "(file)", `unknown field "colour"`},
		{"the issuer's file has no SCIM tenants", `{` + dev + `,"clients":[],"scimTenants":[]}`, decoding, "(file)", `unknown field "scimTenants"`},
		{"wrong type", `{` + dev + `,"clients":{}}`, decoding, "clients", "wrong type"},
		{"bad JSON", `{"issuer":`, decoding, "(file)", ""},
		{"two values", `{` + dev + `} {}`, decoding, "(file)", "more than one"},
		{"missing issuer", `{"ephemeralKey":true,"clients":[]}`, checking, "issuer", "required"},
		{"relative issuer", `{"issuer":"/ids","ephemeralKey":true,"clients":[]}`, checking, "issuer", "absolute"},
		{"no keys", `{"issuer":"http://h/ids","clients":[]}`, checking, "keys", "ephemeralKey"},
		{"keys and ephemeralKey", `{` + dev + `,"keys":[{"file":"es.pem"}],"clients":[]}`, checking, "ephemeralKey", "not both"},
		{"key without file", `{"issuer":"http://h/ids","keys":[{"alg":"ES256"}],"clients":[]}`, checking, "keys[0]", "file: required"},
		{"HMAC alg", `{"issuer":"http://h/ids","keys":[{"file":"` + es + `","alg":"HS256"}],"clients":[]}`, checking, "keys[0]", "alg"},
		{"empty client ID", `{` + dev + `,"clients":[{"clientId":"","secretHashes":["x"],"scopes":["pd_AdminWebApi"]}]}`, checking, "clients[0].clientId", "empty"},
		{"duplicate client ID", `{` + dev + `,"clients":[` + client + `,` + client + `]}`, checking, "clients[1].clientId", "duplicate"},
		{"unknown scope", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_All"]}]}`, checking, `clients[0] ("a").scopes[0]`, "unknown scope"},
		{"plain-text secret", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["hunter2"],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").secretHashes[0]`, "plain-text secret is never accepted"},
		{"bad sha256", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["sha256:abc"],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").secretHashes[0]`, "malformed"},
		{"negative lifetime", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"],"accessTokenLifetime":-1}]}`, checking, `clients[0] ("a").accessTokenLifetime`, "negative"},
		{"a lifetime over a day", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"],"accessTokenLifetime":86401}]}`, checking, `clients[0] ("a").accessTokenLifetime`, "at most 86400"},
		{"negative limit", `{` + dev + `,"clients":[],"limits":{"failureWindowSeconds":-1}}`, checking, "limits.failureWindowSeconds", "negative"},
		{"unreadable key", `{"issuer":"http://h/ids","keys":[{"file":"missing.pem"}],"clients":[]}`, reading, "keys[0]", "no such file"},
		{"RSA key under 2048 bits", `{"issuer":"http://h/ids","keys":[{"file":"` + absTestdata(t, "weak-rsa1024.pem") + `"}],"clients":[]}`, reading, "keys[0]", "too weak"},
		{"alg that does not fit the key", `{"issuer":"http://h/ids","keys":[{"file":"` + es + `","alg":"RS256"}],"clients":[]}`, reading, "keys[0]", "does not fit"},
		{"the same key twice", `{"issuer":"http://h/ids","keys":[{"file":"es.pem"},{"file":"` + es + `"}],"clients":[]}`, reading, "keys[1]", "twice"},
		{"a window over a day", `{` + dev + `,"clients":[],"limits":{"failureWindowSeconds":10000000000}}`, checking, "limits.failureWindowSeconds", "at most 86400"},
		{"a floor over 10 s", `{` + dev + `,"clients":[],"limits":{"failureFloorMillis":10001}}`, checking, "limits.failureFloorMillis", "at most 10000"},
		{"a limiter of a few bytes", `{` + dev + `,"clients":[],"limits":{"limiterMaxBytes":1}}`, checking, "limits.limiterMaxBytes", "at least 4096"},
		{"a limiter over 1 GiB", `{` + dev + `,"clients":[],"limits":{"limiterMaxBytes":2147483648}}`, checking, "limits.limiterMaxBytes", "at most"},
		{"the Forwarded header", `{` + dev + `,"clients":[],"limits":{"trustedProxyHeader":"Forwarded"}}`, checking, "limits.trustedProxyHeader", "RFC 7239"},
		{"a bad trusted proxy", `{` + dev + `,"clients":[],"limits":{"trustedProxyHeader":"X-Forwarded-For","trustedProxies":["10.0.0.0/33"]}}`, decoding, "limits.trustedProxies", "10.0.0.0/33"},
		{"trusted proxies without a header", `{` + dev + `,"clients":[],"limits":{"trustedProxies":["10.0.0.0/8"]}}`, checking, "limits.trustedProxies", "trustedProxyHeader"},
		{"a negative floor other than -1", `{` + dev + `,"clients":[],"limits":{"failureFloorMillis":-2}}`, decoding, "limits.failureFloorMillis", "negative"},
		{"neither secret nor key", `{` + dev + `,"clients":[{"clientId":"a","scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").secretHashes`, "or one of publicKeys"},
		{"a JWK holding a private key", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"jwk":` + privJWK + `}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys[0]`, "private"},
		{"a JWK for encryption", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"jwk":` + strings.Replace(ecJWK, `"kty"`, `"use":"enc","kty"`, 1) + `}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys[0]`, "use"},
		{"a client key for HS256", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"jwk":` + ecJWK + `,"alg":"HS256"}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys[0]`, "alg"},
		{"a client key whose alg does not fit", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"jwk":` + ecJWK + `,"alg":"RS256"}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys[0]`, "does not fit"},
		{"a client key with file and jwk", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"jwk":` + ecJWK + `,"file":"k.pem"}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys[0]`, "exactly one"},
		{"nine client keys", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[` + strings.Repeat(`{"jwk":`+ecJWK+`},`, 8) + `{"jwk":` + ecJWK + `}],"scopes":["pd_AdminWebApi"]}]}`, checking, `clients[0] ("a").publicKeys`, "more than 8"},
		{"a client key file holding a private key", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"file":"es.pem"}],"scopes":["pd_AdminWebApi"]}]}`, reading, `clients[0] ("a").publicKeys[0]`, "not a public key"},
		{"a missing client key file", `{` + dev + `,"clients":[{"clientId":"a","publicKeys":[{"file":"nothing.pem"}],"scopes":["pd_AdminWebApi"]}]}`, reading, `clients[0] ("a").publicKeys[0]`, "no such file"},
		{"scopeWhenOmitted unknown", `{` + dev + `,"clients":[],"scopeWhenOmitted":"some"}`, checking, "scopeWhenOmitted", `"refuse" or "all"`},
		{"a client's scopeWhenOmitted unknown", `{` + dev + `,"clients":[{"clientId":"a","secretHashes":["` + secret.HashSHA256("s").String() + `"],"scopes":["pd_AdminWebApi"],"scopeWhenOmitted":"none"}]}`, checking, `clients[0] ("a").scopeWhenOmitted`, `"refuse" or "all"`},
		{"assertions living a day", `{` + dev + `,"clients":[],"clientAssertions":{"maxLifetimeSeconds":86400}}`, checking, "clientAssertions.maxLifetimeSeconds", "at most 3600"},
		{"a replay cache of a few bytes", `{` + dev + `,"clients":[],"clientAssertions":{"replayCacheBytes":100}}`, checking, "clientAssertions.replayCacheBytes", "at least 4096"},
		{"a key time that is not RFC 3339", sched("", key(`,"publishAt":"2030-06-01"`)), decoding, "keys[0].publishAt", "RFC 3339"},
		{"a key time without a zone", sched("", key(`,"retireAt":"2030-06-01T00:00:00"`)), decoding, "keys[0].retireAt", "RFC 3339"},
		{"signAt before publishAt", sched("", key(`,"retireAt":"2030-01-01T03:00:00Z"`), key(`,"publishAt":"2030-01-01T01:00:00Z","signAt":"2030-01-01T00:00:00Z"`)), checking, "keys[1].signAt", "before publishAt"},
		{"retireAt at signAt", sched("", key(``), key(`,"signAt":"2030-01-01T04:00:00Z","retireAt":"2030-01-01T04:00:00Z"`)), checking, "keys[1].retireAt", "not after signAt"},
		{"retireAt before publishAt", sched("", key(``), key(`,"publishAt":"2030-01-01T04:00:00Z","retireAt":"2030-01-01T03:00:00Z"`)), checking, "keys[1].retireAt", "not after publishAt"},
		{"a key signing before validators have it", sched("", key(`,"retireAt":"2030-01-01T02:00:00Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:09:59Z"`)), checking, "keys[1].signAt",
			"signs from 2030-01-01T00:09:59Z, 9m59s after its publishAt: validators need validatorRefreshSeconds + jwksMaxAgeSeconds = 10m0s"},
		{"a key signing before slower validators have it", sched(`,"validatorRefreshSeconds":600`, key(`,"retireAt":"2030-01-01T02:00:00Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:10:00Z"`)), checking, "keys[1].signAt", "= 15m0s"},
		{"a key signing before validators that never refresh have it", sched(`,"validatorRefreshSeconds":9223372036854775807`, key(`,"retireAt":"2030-01-01T02:00:00Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T01:00:00Z"`)), checking, "keys[1].signAt", "validatorRefreshSeconds + jwksMaxAgeSeconds"},
		{"a key signing before a long max-age runs out", sched(`,"jwksMaxAgeSeconds":3600`, key(`,"retireAt":"2030-01-01T02:00:00Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:10:00Z"`)), checking, "keys[1].signAt", "= 1h5m0s"},
		{"a key without signAt listed before the signing one", sched("", key(`,"publishAt":"2030-01-01T00:00:00Z"`), key(``)), checking, "keys[0].publishAt", "signs from 2030-01-01T00:00:00Z, 0s after its publishAt"},
		{"a key retired while its tokens live", sched("", key(`,"retireAt":"2030-01-01T01:09:59Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:10:00Z"`)), checking, "keys[0].retireAt",
			"its tokens live until 2030-01-01T01:10:00Z (it signs until 2030-01-01T00:10:00Z, and accessTokenLifetime is up to 1h0m0s)"},
		{"a key retired while the longest-lived tokens live", `{"issuer":"http://h/ids","keys":[` + key(`,"retireAt":"2030-01-01T01:10:00Z"`) + `,` + key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:10:00Z"`) + `]` + long + `}`, checking, "keys[0].retireAt",
			"until 2030-01-01T02:10:00Z"},
		{"a gap between two keys", sched("", key(`,"retireAt":"2030-01-01T02:00:00Z"`), key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T03:00:00Z"`)), checking, "keys[0].retireAt", "no key signs from 2030-01-01T02:00:00Z"},
		{"every key retired", sched("", key(`,"retireAt":"2030-01-01T02:00:00Z"`)), checking, "keys[0].retireAt", "no key signs from 2030-01-01T02:00:00Z"},
		{"a key signing again", `{"issuer":"http://h/ids","keys":[` + key(``) + `,` + key(`,"publishAt":"2030-01-01T00:00:00Z","signAt":"2030-01-01T00:10:00Z","retireAt":"2030-01-01T01:00:00Z"`) + `],"clients":[]}`, checking, "keys[0]",
			"signs again from 2030-01-01T01:00:00Z, after keys[1] took over"},
		{"a negative refresh interval", `{` + dev + `,"clients":[],"validatorRefreshSeconds":-1}`, checking, "validatorRefreshSeconds", "negative"},
		{"no key signing yet", sched("", key(`,"publishAt":"2999-01-01T00:00:00Z","signAt":"2999-01-01T01:00:00Z"`)), reading, "keys", "no key signs yet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := decoding
			cfg, err := issuer.ParseConfig([]byte(c.json), dir, nil)
			if err == nil {
				step = checking
				err = cfg.Validate()
			}
			if err == nil {
				step = reading
				_, err = issuer.New(cfg)
			}
			var ce *issuer.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if step != c.step || ce.Field != c.field || !strings.Contains(ce.Reason, c.reason) {
				t.Fatalf("%s said %s: %s; want %s to say %s: ...%s...", step, ce.Field, ce.Reason, c.step, c.field, c.reason)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatal("the error echoes a plain-text secret")
			}
			if step == checking {
				if _, err := issuer.New(cfg); !errors.As(err, &ce) || ce.Field != c.field {
					t.Fatalf("New does not check as Validate does: %v", err)
				}
			}
		})
	}
}

func absTestdata(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustKey(t *testing.T, alg string) crypto.Signer {
	t.Helper()
	k, err := keys.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k.Private
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func decode(t *testing.T, seg string, v any) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestInsideAnAliceChain: the issuer is a plain http.Handler, so it sits
// behind other middleware and under any prefix the issuer URL names.
func TestInsideAnAliceChain(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	iss, err := issuer.New(testConfig(srv.URL + "/auth/ids"))
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	count := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1); next.ServeHTTP(w, r) })
	}
	mux.Handle("/auth/ids/", alice.New(count).Then(iss))
	cc := clientcredentials.Config{ClientID: "admin", ClientSecret: adminSecret, TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	if _, err := cc.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	if iss.TokenURL() != srv.URL+"/auth/ids/connect/token" || seen.Load() != 1 {
		t.Fatalf("token URL %s, %d requests through the chain", iss.TokenURL(), seen.Load())
	}
	a := do(t, mustRequest(t, http.MethodGet, srv.URL+"/auth/ids/.well-known/openid-configuration"))
	if a.status != 200 || a.body["issuer"] != srv.URL+"/auth/ids" {
		t.Fatalf("discovery under the prefix: %d %v", a.status, a.body)
	}
}
