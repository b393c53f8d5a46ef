package issuer_test

import (
	"crypto/rsa"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// The red-team pass over issue 32, item 3, at the issuer: a Reload that
// fails must change nothing.

// snapshot is what a reload could change that a test can read from
// outside: the keys, the discovery document and JWKS bytes, the failure
// limiter's and the replay cache's memory.
type snapshot struct {
	kids            string
	discovery, jwks string
	limiterBytes    int
	replayBytes     int
}

func snap(t *testing.T, s *server) snapshot {
	t.Helper()
	get := func(path string) string {
		a := do(t, mustRequest(t, http.MethodGet, s.issuerURL()+path))
		return a.raw
	}
	return snapshot{
		kids:         strings.Join(s.iss.KeyIDs(), ","),
		discovery:    get("/.well-known/openid-configuration"),
		jwks:         get("/.well-known/openid-configuration/jwks"),
		limiterBytes: issuer.LimiterBytes(s.iss),
		replayBytes:  issuer.ReplayBytes(s.iss),
	}
}

// TestRedTeamFailedReloadsChangeNothing: reloads that fail in each of the
// ways a configuration can (a key file missing, an unknown scope, a bad
// limit, no key signing yet, a client key file missing), each also
// asking for another failure limiter size, another replay cache size,
// another signing key and a new client, change nothing: the same keys,
// documents and memory, the new client unknown, the old one served.
func TestRedTeamFailedReloadsChangeNothing(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.EphemeralKey, c.Keys = false, []issuer.KeyConfig{{Key: mustKey(t, "ES256")}} })
	before := snap(t, s)
	dir := t.TempDir()
	newKey := mustKey(t, "ES256")
	for _, c := range []struct {
		name  string
		spoil func(*issuer.Config)
	}{
		{"a key file missing", func(c *issuer.Config) {
			c.Keys = append(c.Keys, issuer.KeyConfig{File: filepath.Join(dir, "nope.pem")})
		}},
		{"an unknown scope", func(c *issuer.Config) { c.Clients[0].Scopes = []string{"no_such_scope"} }},
		{"a bad limit", func(c *issuer.Config) { c.Limits.FailureWindow = 86401 * time.Second }},
		{"a client key file missing", func(c *issuer.Config) {
			c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "filekey", PublicKeys: []issuer.ClientKeyConfig{{File: filepath.Join(dir, "nope.pub")}}, Scopes: []string{scope.AdminWebAPI}})
		}},
		{"a trailing duplicate client", func(c *issuer.Config) { c.Clients = append(c.Clients, c.Clients[0]) }},
	} {
		cfg := testConfig(s.issuerURL())
		cfg.EphemeralKey, cfg.Keys = false, []issuer.KeyConfig{{Key: newKey}}
		cfg.Limits.MemoryBytes = 64 << 10
		cfg.ClientAssertions.ReplayCacheBytes = 8 << 10
		cfg.Clients = append(cfg.Clients, issuer.ClientConfig{ClientID: "newcomer", SecretHashes: []string{secret.HashSHA256("n").String()}, Scopes: []string{scope.AdminWebAPI}})
		c.spoil(cfg)
		if err := s.iss.Reload(cfg); err == nil {
			t.Fatalf("%s: the reload succeeded", c.name)
		}
		if got := snap(t, s); got != before {
			t.Errorf("%s: the failed reload changed\n%+v\ninto\n%+v", c.name, before, got)
		}
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("newcomer", "n")); a.status != 401 {
			t.Errorf("%s: the new client got %d %s", c.name, a.status, a.raw)
		}
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("admin", adminSecret)); a.status != 200 {
			t.Errorf("%s: the old client got %d %s", c.name, a.status, a.raw)
		}
	}
	// The same changes without the fault apply, every one of them: the
	// snapshot sees each.
	cfg := testConfig(s.issuerURL())
	cfg.EphemeralKey, cfg.Keys = false, []issuer.KeyConfig{{Key: newKey}}
	cfg.Limits.MemoryBytes = 64 << 10
	cfg.ClientAssertions.ReplayCacheBytes = 8 << 10
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	after := snap(t, s)
	if after.kids == before.kids || after.jwks == before.jwks || after.limiterBytes == before.limiterBytes || after.replayBytes == before.replayBytes {
		t.Errorf("a good reload did not change what the snapshot reads:\n%+v\n%+v", before, after)
	}
}

// brokenRSAKey is a 2048-bit RSA key whose public half is sound (its
// thumbprint and size pass every check of a configuration) and whose
// private exponent is not its own: rsa.PrivateKey.Validate fails, and
// with it x509.MarshalPKCS8PrivateKey, from which the DPoP nonce key is
// derived. A key in code can be so; one read from a file cannot (Go's
// parsers validate it).
func brokenRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k := mustKey(t, "RS256").(*rsa.PrivateKey)
	broken := *k
	broken.D = new(big.Int).Add(k.D, big.NewInt(2))
	broken.Precomputed = rsa.PrecomputedValues{}
	if broken.Validate() == nil {
		t.Fatal("the broken key validates")
	}
	return &broken
}

// TestRedTeamReloadFailingAtTheNonceKeyChangesNothing (finding F5, low):
// a configuration with dpop.requireNonce and a signing key in code whose
// private half does not validate passes every check, then fails at the
// last step that can, deriving each span's DPoP nonce key (noncesOf).
// Reload returns that error and changes nothing: the replay cache keeps
// its size, the keys and documents stay. Reload resized the replay cache
// (in place: iss.replays is the issuer's, not the configuration's),
// primed the shared secret verifier and counted key versions before
// deriving the nonces; now compile derives them, and everything that
// can fail runs before anything shared is touched. Reachable only from
// code (a key file is validated when parsed), so not from idsauth serve.
func TestRedTeamReloadFailingAtTheNonceKeyChangesNothing(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { c.EphemeralKey, c.Keys = false, []issuer.KeyConfig{{Key: mustKey(t, "ES256")}} })
	before := snap(t, s)
	cfg := testConfig(s.issuerURL())
	cfg.EphemeralKey, cfg.Keys = false, []issuer.KeyConfig{{Key: brokenRSAKey(t), Alg: "RS256"}}
	cfg.DPoP.RequireNonce = true
	cfg.ClientAssertions.ReplayCacheBytes = 8 << 10
	err := s.iss.Reload(cfg)
	if err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("the reload: %v, want the nonce key's error", err)
	}
	if got := snap(t, s); got != before {
		t.Errorf("the failed reload changed\n%+v\ninto\n%+v", before, got)
	}
}
