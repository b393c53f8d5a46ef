package issuer_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/netip"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// TestKeyFileErrorKeepsItsCause: a key file that cannot be read is a
// *ConfigError naming the field, and errors.Is still finds the cause (a
// missing file here; a permission denied alike), so that a program can
// say what to do about it.
func TestKeyFileErrorKeepsItsCause(t *testing.T) {
	cfg := testConfig("https://host.example/ids")
	cfg.EphemeralKey = false
	cfg.Keys = []issuer.KeyConfig{{File: filepath.Join(t.TempDir(), "missing.pem")}}
	_, err := issuer.New(cfg)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "keys[0]" || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want a ConfigError of keys[0] wrapping fs.ErrNotExist", err)
	}
}

// TestLimitsErrorIsAlwaysTheFirst: of several bad limits, the error names
// the first in the order of the fields, every time (a map's order chose
// one at random).
func TestLimitsErrorIsAlwaysTheFirst(t *testing.T) {
	for range 50 {
		cfg := testConfig("https://host.example/ids")
		cfg.Limits.FailedAttemptsPerAddress = -1
		cfg.Limits.MemoryBytes = -1
		cfg.Verifier.MaxConcurrentSlow = -1
		var ce *issuer.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "limits.failedAttemptsPerAddress" {
			t.Fatalf("got %v, want limits.failedAttemptsPerAddress", err)
		}
	}
}

// TestFileShape: every member of the configuration file lands in its Go
// field, in its Go unit: seconds and milliseconds as durations, RFC 3339
// text as times, addresses and prefixes as netip.Prefix.
func TestFileShape(t *testing.T) {
	file := `{
  "issuer": "https://host/ids",
  "keys": [{"file": "a.pem", "alg": "ES256", "publishAt": "2030-01-01T00:00:00Z", "signAt": "2030-01-01T01:00:00+01:00", "retireAt": "2030-02-01T00:00:00Z"}],
  "ephemeralKey": false,
  "clients": [{"clientId": "c", "secretHashes": ["sha256:x"], "publicKeys": [{"file": "k.pem", "alg": "PS256"}, {"jwk": {"kty": "OKP"}}],
    "grantTypes": ["client_credentials"], "scopes": ["pd_AdminWebApi"], "accessTokenLifetime": 600, "audience": ["https://api"],
    "scopeWhenOmitted": "all", "claims": [{"type": "tenant", "value": "acme"}], "requireDPoP": true, "accessTokenType": "reference"}],
  "scopes": ["mine"],
  "profile": "identityserver",
  "scopeFormat": "array",
  "jwksMaxAgeSeconds": 120,
  "validatorRefreshSeconds": 60,
  "limits": {"maxBodyBytes": 4096, "failedAttemptsPerClient": 3, "failedAttemptsPerAddress": 30, "failureWindowSeconds": 90,
    "limiterMaxBytes": 8192, "failureFloorMillis": -1, "maxConcurrentSlowHashes": 2, "trustedProxyHeader": "X-Forwarded-For",
    "trustedProxies": ["10.0.0.0/8", "192.0.2.1", "::ffff:10.1.0.0/112"], "nat64Prefixes": ["64:ff9b:1::/48"]},
  "scopeWhenOmitted": "refuse",
  "apiResources": [{"name": "api", "secretHashes": ["sha256:y"], "publicKeys": [{"file": "api.pem"}], "scopes": ["pd_ConnectWebApi"]}],
  "dpop": {"proofMaxAgeSeconds": 30, "requireNonce": true},
  "clientAssertions": {"maxLifetimeSeconds": 120, "replayCacheBytes": 8192}
}`
	got, err := issuer.ParseConfig([]byte(file), "dir", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := &issuer.Config{
		Issuer:           "https://host/ids",
		Keys:             []issuer.KeyConfig{{File: "a.pem", Alg: "ES256", PublishAt: at("2030-01-01T00:00:00Z"), SignAt: at("2030-01-01T01:00:00+01:00"), RetireAt: at("2030-02-01T00:00:00Z")}},
		Clients:          []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{"sha256:x"}, PublicKeys: []issuer.ClientKeyConfig{{File: "k.pem", Alg: "PS256"}, {JWK: json.RawMessage(`{"kty": "OKP"}`)}}, GrantTypes: []string{"client_credentials"}, Scopes: []string{"pd_AdminWebApi"}, AccessTokenLifetime: 10 * time.Minute, Audience: []string{"https://api"}, ScopeWhenOmitted: "all", Claims: []issuer.ClientClaim{{Type: "tenant", Value: "acme"}}, RequireDPoP: true, AccessTokenType: "reference"}},
		Scopes:           []string{"mine"},
		Profile:          "identityserver",
		ScopeFormat:      "array",
		JWKSMaxAge:       2 * time.Minute,
		ValidatorRefresh: time.Minute,
		Limits: limit.Config{FailedAttemptsPerSubject: 3, FailedAttemptsPerAddress: 30, FailureWindow: 90 * time.Second, MemoryBytes: 8192,
			TrustedProxyHeader: "X-Forwarded-For", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("10.1.0.0/16")},
			NAT64Prefixes: []netip.Prefix{netip.MustParsePrefix("64:ff9b:1::/48")}},
		MaxBodyBytes:     4096,
		Verifier:         secret.VerifierConfig{FailureFloor: -time.Millisecond, MaxConcurrentSlow: 2},
		ScopeWhenOmitted: "refuse",
		APIResources:     []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{"sha256:y"}, PublicKeys: []issuer.ClientKeyConfig{{File: "api.pem"}}, Scopes: []string{"pd_ConnectWebApi"}}},
		DPoP:             issuer.DPoPConfig{ProofMaxAge: 30 * time.Second, RequireNonce: true},
		ClientAssertions: issuer.AssertionConfig{MaxLifetime: 2 * time.Minute, ReplayCacheBytes: 8192},
		Dir:              "dir",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}
}

// TestDurationsInCodeAreChecked: a Config built in code says durations
// as time.Duration; those that go on the wire in whole seconds must be
// whole, and a proof's age is at least a second.
func TestDurationsInCodeAreChecked(t *testing.T) {
	for _, c := range []struct {
		name, field string
		edit        func(*issuer.Config)
	}{
		{"a lifetime of a second and a half", `clients[0] ("admin").accessTokenLifetime`, func(c *issuer.Config) { c.Clients[0].AccessTokenLifetime = 1500 * time.Millisecond }},
		{"a max-age of a second and a half", "jwksMaxAgeSeconds", func(c *issuer.Config) { c.JWKSMaxAge = 1500 * time.Millisecond }},
		{"a proof half a second old", "dpop.proofMaxAgeSeconds", func(c *issuer.Config) { c.DPoP.ProofMaxAge = 500 * time.Millisecond }},
		{"a lifetime over a day", `clients[0] ("admin").accessTokenLifetime`, func(c *issuer.Config) { c.Clients[0].AccessTokenLifetime = 25 * time.Hour }},
	} {
		cfg := testConfig("https://host.example/ids")
		c.edit(cfg)
		var ce *issuer.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: %v, want a ConfigError for %s", c.name, err, c.field)
		}
	}
}
