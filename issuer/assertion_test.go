package issuer_test

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
)

// TestAssertionFailuresAreCharged: bad assertions are charged to the
// failure budgets as wrong secrets are, so a burst of them ends in 429
// slow_down; the client's right assertion from another address, and
// another client's right secret, still get tokens.
func TestAssertionFailuresAreCharged(t *testing.T) {
	const budget = 3
	s := newServer(t, func(c *issuer.Config) {
		withMachineClients(c)
		c.Limits = limit.Config{FailedAttemptsPerSubject: budget, TrustedProxyHeader: "X-Forwarded-For"}
	})
	attacker := jwktest.NewKey(t, "ES256")
	counts := map[int]int{}
	for range 20 {
		a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, attacker, "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI), "X-Forwarded-For", "203.0.113.7")
		counts[a.status]++
		if a.status == 429 && (a.body["error"] != "slow_down" || a.header.Get("Retry-After") == "") {
			t.Fatalf("429 without slow_down and Retry-After: %s %v", a.raw, a.header)
		}
	}
	if counts[401] != budget || counts[429] != 20-budget {
		t.Fatalf("answers to 20 bad assertions = %v, want %d failures then 429s", counts, budget)
	}
	// The same burst, by a malformed assertion naming the client.
	if a := post(t, s.tokenURL(), formType, assertionForm("x.y.z", "client_id", "signer", "scope", scope.AdminWebAPI), "X-Forwarded-For", "203.0.113.7"); a.status != 429 {
		t.Fatalf("a malformed assertion after the burst: %d %s", a.status, a.raw)
	}
	good := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI)
	if a := post(t, s.tokenURL(), formType, good, "X-Forwarded-For", "198.51.100.1"); a.status != 200 {
		t.Fatalf("the right assertion from another address: %d %s", a.status, a.raw)
	}
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), "X-Forwarded-For", "198.51.100.2"); a.status != 200 {
		t.Fatalf("another client's right secret: %d %s", a.status, a.raw)
	}
}

// TestAssertionFailuresAreHeldToTheFloor: a failed assertion answers no
// sooner than the failure floor, as a wrong secret does, whether the
// client is known or not.
func TestAssertionFailuresAreHeldToTheFloor(t *testing.T) {
	const floor = 60 * time.Millisecond
	s := newServer(t, func(c *issuer.Config) {
		withMachineClients(c)
		c.Verifier.FailureFloor = floor
	})
	attacker := jwktest.NewKey(t, "ES256")
	for _, client := range []string{"signer", "nobody"} {
		start := time.Now()
		a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, attacker, client, s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI))
		if took := time.Since(start); a.status != 401 || took < floor {
			t.Fatalf("%s: %d after %v, want 401 after at least %v", client, a.status, took, floor)
		}
	}
}

// TestReplayCacheIsFixedInBytes: the replay cache is allocated once at
// its configured size; a flood of invalid assertions (an attacker's key,
// unknown clients, expired or wrongly addressed ones signed by the right
// key) adds no entry; valid ones add one each until a set is full, when
// an assertion is refused with 429 slow_down rather than an unexpired jti
// forgotten, and nothing grows.
func TestReplayCacheIsFixedInBytes(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withMachineClients(c)
		c.Limits = limit.Config{FailedAttemptsPerSubject: 1 << 20, FailedAttemptsPerAddress: 1 << 20}
		c.ClientAssertions.ReplayCacheBytes = 4096
	})
	if got := issuer.ReplayBytes(s.iss); got != 4096 {
		t.Fatalf("the replay cache holds %d bytes, want 4096", got)
	}
	attacker := jwktest.NewKey(t, "ES256")
	for i := range 600 {
		var as string
		switch i % 3 {
		case 0:
			as = assertionFor(t, attacker, "signer", s.tokenURL(), nil, nil)
		case 1:
			as = assertionFor(t, attacker, fmt.Sprint("client-", i), s.tokenURL(), nil, nil)
		case 2:
			as = assertionFor(t, signerKey(), "signer", s.tokenURL(), map[string]any{"aud": "https://elsewhere.example"}, nil)
		}
		if a := post(t, s.tokenURL(), formType, assertionForm(as, "scope", scope.AdminWebAPI)); a.status != 401 {
			t.Fatalf("invalid assertion %d: %d %s", i, a.status, a.raw)
		}
	}
	if n := issuer.ReplayLive(s.iss); n != 0 {
		t.Fatalf("600 invalid assertions left %d entries", n)
	}
	counts := map[int]int{}
	for range 400 { // 4096 bytes hold 256 entries
		a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI))
		counts[a.status]++
		if a.status == 429 && (a.body["error"] != "slow_down" || a.header.Get("Retry-After") == "") {
			t.Fatalf("a full cache answered %s %v", a.raw, a.header)
		}
	}
	live := issuer.ReplayLive(s.iss)
	if counts[200] != live || live > 256 || counts[429] != 400-live || counts[429] == 0 {
		t.Fatalf("400 valid assertions: answers %v, %d remembered; want a token for each one remembered (at most 256), 429 for the rest", counts, live)
	}
	if got := issuer.ReplayBytes(s.iss); got != 4096 {
		t.Fatalf("the replay cache grew to %d bytes", got)
	}
}

// TestReplayIsRefusedAcrossReloads: a jti accepted before a reload is
// refused after it, whether the reload keeps the cache's size or changes
// it.
func TestReplayIsRefusedAcrossReloads(t *testing.T) {
	edit := func(c *issuer.Config) { withMachineClients(c); c.Limits.FailedAttemptsPerSubject = 100 }
	s := newServer(t, edit)
	for _, size := range []int{0, 64 << 10, 8 << 10} {
		as := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI)
		if a := post(t, s.tokenURL(), formType, as); a.status != 200 {
			t.Fatalf("first use: %d %s", a.status, a.raw)
		}
		cfg := testConfig(s.issuerURL())
		edit(cfg)
		cfg.ClientAssertions.ReplayCacheBytes = size
		if err := s.iss.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		if a := post(t, s.tokenURL(), formType, as); a.status != 401 {
			t.Fatalf("replayed after a reload to %d bytes: %d %s", size, a.status, a.raw)
		}
	}
}

// TestShrinkingReloadForgetsNoLiveJTI: 100 assertions of one client are
// used, then a reload shrinks the replay cache to 4 KiB, whose window for
// one client holds 32 jtis. Stepping the issuer's clock past their
// expiries, which are spread over 50 s, every replay is refused until its
// assertion has expired; then the cache is back to its new size and takes
// new assertions.
func TestShrinkingReloadForgetsNoLiveJTI(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	clock := newClock(t0)
	edit := func(c *issuer.Config) {
		withMachineClients(c)
		c.Limits.FailedAttemptsPerSubject, c.Limits.FailedAttemptsPerAddress = 1<<20, 1<<20
	}
	s := newServer(t, edit, issuer.WithClock(clock.now))
	used := make([]string, 100)
	live := make([]time.Time, len(used)) // until when each must be refused: exp and the leeway
	for i := range used {
		exp := t0.Add(time.Duration(20+i/2) * time.Second)
		used[i] = assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), map[string]any{"iat": t0.Unix(), "exp": exp.Unix()}, nil), "scope", scope.AdminWebAPI)
		live[i] = exp.Add(30 * time.Second)
		if a := post(t, s.tokenURL(), formType, used[i]); a.status != 200 {
			t.Fatalf("assertion %d, first use: %d %s", i, a.status, a.raw)
		}
	}
	cfg := testConfig(s.issuerURL())
	edit(cfg)
	cfg.ClientAssertions.ReplayCacheBytes = 4096
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if got := issuer.ReplayBytes(s.iss); got > 4096+len(used)*16 {
		t.Fatalf("after the reload the replay cache holds %d bytes, more than 4096 and the %d jtis it carries", got, len(used))
	}
	end := live[len(live)-1].Sub(t0) // the last expiry
	replays := 0
	for at := time.Duration(0); at < end; at += 3 * time.Second {
		clock.set(t0.Add(at))
		for i, as := range used {
			if !clock.now().Before(live[i]) {
				continue
			}
			replays++
			if a := post(t, s.tokenURL(), formType, as); a.status != 401 || a.body["error"] != "invalid_client" {
				t.Fatalf("%v after the reload, assertion %d (live until +%v) replayed: %d %s", at, i, live[i].Sub(t0), a.status, a.raw)
			}
		}
	}
	if replays < 1000 {
		t.Fatalf("only %d replays were tried", replays)
	}
	clock.set(t0.Add(end))
	fresh := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), map[string]any{"iat": clock.now().Unix(), "exp": clock.now().Add(time.Minute).Unix()}, nil), "scope", scope.AdminWebAPI)
	if a := post(t, s.tokenURL(), formType, fresh); a.status != 200 {
		t.Fatalf("a new assertion once the old ones expired: %d %s", a.status, a.raw)
	}
	if got := issuer.ReplayBytes(s.iss); got != 4096 {
		t.Fatalf("once every old jti expired, the replay cache holds %d bytes, want 4096", got)
	}
}

// TestReloadUnderLoadForgetsNoJTI: while workers use new assertions,
// reloads change the replay cache's size back and forth (each size holds
// them all); every assertion that got a token, replayed afterwards, is
// refused, including those accepted by a request that began before a
// reload and ended after it.
func TestReloadUnderLoadForgetsNoJTI(t *testing.T) {
	edit := func(c *issuer.Config) {
		withMachineClients(c)
		c.Limits.FailedAttemptsPerSubject, c.Limits.FailedAttemptsPerAddress = 1<<20, 1<<20
	}
	s := newServer(t, edit)
	var mu sync.Mutex
	var accepted []string
	l := startLoad(4, func() {
		as := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI)
		if a := post(t, s.tokenURL(), formType, as); a.status == 200 {
			mu.Lock()
			accepted = append(accepted, as)
			mu.Unlock()
		}
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted)
	}
	for i := 0; i < 100 || (count() < 200 && i < 100_000); i++ {
		cfg := testConfig(s.issuerURL())
		edit(cfg)
		cfg.ClientAssertions.ReplayCacheBytes = []int{256 << 10, 512 << 10}[i%2]
		if err := s.iss.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	l.end()
	if len(accepted) < 200 {
		t.Fatalf("only %d assertions were accepted during the reloads", len(accepted))
	}
	for i, as := range accepted {
		if a := post(t, s.tokenURL(), formType, as); a.status != 401 {
			t.Fatalf("assertion %d of %d, accepted during the reloads, replayed: %d %s", i, len(accepted), a.status, a.raw)
		}
	}
}

// TestClientKeyFile: a client's public key in a PEM file, relative to the
// configuration's folder, verifies its assertions.
func TestClientKeyFile(t *testing.T) {
	dir := t.TempDir()
	k := jwktest.NewKey(t, "RS256")
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reporting.pub.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, func(c *issuer.Config) {
		c.Dir = dir
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "reporting", PublicKeys: []issuer.ClientKeyConfig{{File: "reporting.pub.pem"}}, Scopes: []string{scope.AdminWebAPI}})
	})
	a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, k, "reporting", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI))
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	if logs := s.logs.String(); strings.Contains(logs, "reporting.pub.pem") {
		t.Fatalf("the log names the key file:\n%s", logs)
	}
}

// TestScopeWhenOmitted: the global default applies to clients that do not
// say, and a client's own setting wins over it.
func TestScopeWhenOmitted(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.ScopeWhenOmitted = "all"
		c.Clients[1].ScopeWhenOmitted = "refuse" // connect
	})
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret)); a.status != 200 || a.body["scope"] != scope.AdminWebAPI {
		t.Fatalf("admin under the global \"all\": %d %s", a.status, a.raw)
	}
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret)); a.status != 400 || a.body["error"] != "invalid_scope" {
		t.Fatalf("connect set to \"refuse\": %d %s", a.status, a.raw)
	}
}
