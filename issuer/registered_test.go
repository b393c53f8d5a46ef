package issuer_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// registeredClient is a client of a registry: regSecret, pd_AdminWebApi,
// reference tokens when ref.
func registeredClient(id string, ref bool) issuer.ClientConfig {
	cc := issuer.ClientConfig{ClientID: id, SecretHashes: []string{secret.HashSHA256(regSecret).String()}, Scopes: []string{scope.AdminWebAPI}}
	if ref {
		cc.AccessTokenType = "reference"
	}
	return cc
}

const regSecret = "registered-secret"

// TestSetRegisteredServesBesideTheFile: registered clients get tokens
// beside the file's; a set without one refuses it at once, and its
// reference tokens answer inactive at introspection (as a disabled
// client's do); a registered API resource introspects; a Reload keeps the
// registered set.
func TestSetRegisteredServesBesideTheFile(t *testing.T) {
	s := newServer(t, withReference)
	tokenOf := func(id string) answer {
		return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic(id, regSecret))
	}
	if a := tokenOf("reg"); a.status != 401 {
		t.Fatalf("before it is registered: %d %s", a.status, a.raw)
	}
	api := issuer.APIResourceConfig{Name: "reg-api", SecretHashes: []string{secret.HashSHA256("reg-api-secret").String()}, Scopes: []string{scope.AdminWebAPI}}
	if err := s.iss.SetRegistered([]issuer.ClientConfig{registeredClient("reg", false), registeredClient("reg-ref", true)}, []issuer.APIResourceConfig{api}); err != nil {
		t.Fatal(err)
	}
	if a := tokenOf("reg"); a.status != 200 {
		t.Fatalf("a registered client: %d %s", a.status, a.raw)
	}
	ref := tokenOf("reg-ref")
	tok, _ := ref.body["access_token"].(string)
	if ref.status != 200 || tok == "" || strings.Contains(tok, ".") {
		t.Fatalf("a registered reference client: %d %s", ref.status, ref.raw)
	}
	introspect := func() map[string]any {
		t.Helper()
		a := post(t, s.introspectURL(), formType, form("token", tok), "Authorization", basic("reg-api", "reg-api-secret"))
		if a.status != 200 {
			t.Fatalf("introspection by the registered API resource: %d %s", a.status, a.raw)
		}
		return a.body
	}
	if m := introspect(); m["active"] != true || m["client_id"] != "reg-ref" {
		t.Fatalf("the registered client's reference token: %v", m)
	}
	// A reload of the file keeps the registered set.
	cfg := testConfig(s.issuerURL())
	withReference(cfg)
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if a := tokenOf("reg"); a.status != 200 {
		t.Fatalf("after a reload: %d %s", a.status, a.raw)
	}
	// Disabled (left out of the set): refused, and its token inactive.
	if err := s.iss.SetRegistered([]issuer.ClientConfig{registeredClient("reg", false)}, []issuer.APIResourceConfig{api}); err != nil {
		t.Fatal(err)
	}
	if a := tokenOf("reg-ref"); a.status != 401 {
		t.Fatalf("a client left out of the set: %d %s", a.status, a.raw)
	}
	if m := introspect(); m["active"] != false || len(m) != 1 {
		t.Fatalf("the token of a client left out of the set: %v", m)
	}
	if a := tokenOf("admin"); a.status != 401 {
		t.Fatalf("a file client with the registered secret: %d", a.status)
	}
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("admin", adminSecret)); a.status != 200 {
		t.Fatalf("a file client: %d %s", a.status, a.raw)
	}
}

// TestSetRegisteredLeavesOutWhatDoesNotFit: a registered client that
// clashes with a file client (the file's wins), is named twice, names a
// key file, a scope the configuration does not know, or lives longer than
// the key schedule allows is left out with a *ConfigError naming it and
// its field; the others are served. CheckRegistered says the same and
// applies nothing.
func TestSetRegisteredLeavesOutWhatDoesNotFit(t *testing.T) {
	// The first key signs for a day and retires a day later: a day's
	// tokens fit, not more.
	now := time.Now()
	s := newServer(t, func(c *issuer.Config) {
		c.EphemeralKey = false
		c.Keys = []issuer.KeyConfig{{Key: signerKey().Private, RetireAt: now.Add(48 * time.Hour)}, {Key: edKey().Private, SignAt: now.Add(24 * time.Hour)}}
	})
	long := registeredClient("long", false)
	long.AccessTokenLifetime = 24 * time.Hour
	unknown := registeredClient("unknown-scope", false)
	unknown.Scopes = []string{"reports.read"}
	withFile := registeredClient("key-file", false)
	withFile.PublicKeys = []issuer.ClientKeyConfig{{File: "client.pub.pem"}}
	clash := registeredClient("admin", false)
	set := []issuer.ClientConfig{registeredClient("good", false), clash, registeredClient("good", false), withFile, unknown, long}
	want := []string{
		`clients ("admin").clientId: a client of the configuration file`,
		`clients ("good").clientId: registered twice`,
		`clients ("key-file").publicKeys[0].file:`,
		`clients ("unknown-scope").scopes[0]: unknown scope "reports.read"`,
	}
	check := func(err error) {
		t.Helper()
		var ces []*issuer.ConfigError
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var ce *issuer.ConfigError
			if !errors.As(e, &ce) {
				t.Fatalf("not a *ConfigError: %v", e)
			}
			ces = append(ces, ce)
		}
		if len(ces) != len(want) {
			t.Fatalf("left out: %v, want %d", err, len(want))
		}
		for i, w := range want {
			if got := ces[i].Field + ": " + ces[i].Reason; !strings.HasPrefix(got, w) {
				t.Errorf("left out [%d]: %q, want %q...", i, got, w)
			}
		}
	}
	check(s.iss.CheckRegistered(set, nil))
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("good", regSecret)); a.status != 401 {
		t.Fatalf("CheckRegistered applied the set: %d", a.status)
	}
	check(s.iss.SetRegistered(set, nil))
	for id, wantStatus := range map[string]int{"good": 200, "long": 200, "admin": 401, "unknown-scope": 401, "key-file": 401} {
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic(id, regSecret)); a.status != wantStatus {
			t.Errorf("%s: %d, want %d", id, a.status, wantStatus)
		}
	}
	longer := registeredClient("longer", false)
	longer.AccessTokenLifetime = 24*time.Hour + time.Second
	err := s.iss.CheckRegistered([]issuer.ClientConfig{longer}, nil)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != `clients ("longer").accessTokenLifetime` {
		t.Fatalf("a lifetime past the bound: %v", err)
	}
}

// TestSetRegisteredFollowsTheConfiguration: a registered client takes the
// configuration's defaults (its audience is the issuer URL's, and under
// the identityserver profile the names of the API resources of its
// scopes, registered ones included), and a Reload that drops a scope of
// its own leaves out the registered client that holds it, logging why.
func TestSetRegisteredFollowsTheConfiguration(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Scopes = []string{"reports.read"}
		c.Profile = "identityserver"
	})
	cc := registeredClient("reports", false)
	cc.Scopes = []string{"reports.read"}
	api := issuer.APIResourceConfig{Name: "reports-api", SecretHashes: []string{secret.HashSHA256("x-secret").String()}, Scopes: []string{"reports.read"}}
	if err := s.iss.SetRegistered([]issuer.ClientConfig{cc}, []issuer.APIResourceConfig{api}); err != nil {
		t.Fatal(err)
	}
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials"), "Authorization", basic("reports", regSecret))
	tok, _ := a.body["access_token"].(string)
	if a.status != 200 || tok == "" {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	var claims struct {
		Aud any `json:"aud"`
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err := json.Unmarshal(payload, &claims); err != nil || fmt.Sprint(claims.Aud) != "[reports-api]" {
		t.Fatalf("aud %v (%v), want the registered API resource's name", claims.Aud, err)
	}
	cfg := testConfig(s.issuerURL())
	cfg.Profile = "identityserver"
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatalf("a reload fails for a registered client that no longer fits: %v", err)
	}
	// The identityserver profile answers invalid_client with 400.
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials"), "Authorization", basic("reports", regSecret)); a.body["error"] != "invalid_client" {
		t.Fatalf("a registered client whose scope is gone: %d %s", a.status, a.raw)
	}
	if !strings.Contains(s.logs.String(), `clients (\"reports\").scopes[0]`) {
		t.Errorf("the reload does not log the client it leaves out:\n%s", s.logs)
	}
	if err := s.iss.SetRegistered(nil, nil); err != nil {
		t.Fatal(err)
	}
}

// manyClients returns n registered clients of the shape a registry's
// are (pgregistry's BenchmarkLoad): a sha256 secret hash, three scopes
// (the issuer's own "reports.read" among them), an epoch of their own.
func manyClients(n int) []issuer.ClientConfig {
	out := make([]issuer.ClientConfig, n)
	for i := range out {
		out[i] = issuer.ClientConfig{ClientID: fmt.Sprintf("client-%06d", i), SecretHashes: []string{secret.HashSHA256(fmt.Sprintf("secret-%d", i)).String()},
			Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI, "reports.read"}, AccessTokenLifetime: 10 * time.Minute, Epoch: uint64(i + 1)}
	}
	return out
}

// BenchmarkSetRegistered swaps in 10,000 registered clients: the issuer's
// part of a registry's load (pgregistry's BenchmarkLoad adds the query).
func BenchmarkSetRegistered(b *testing.B) {
	cfg := testConfig("https://host.example/ids")
	cfg.Scopes = []string{"reports.read"}
	iss, err := issuer.New(cfg, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	clients := manyClients(10_000)
	b.ResetTimer()
	for range b.N {
		if err := iss.SetRegistered(clients, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRegisteredClientMemory measures the heap a registered client holds
// in the issuer (its registration in the table, in bytes), after a GC,
// over 10,000 clients, and holds it to 400 bytes: with the registry's
// share, a client of the stated shape costs a replica at most 800 (issue
// 41).
func TestRegisteredClientMemory(t *testing.T) {
	cfg := testConfig("https://host.example/ids")
	cfg.Scopes = []string{"reports.read"}
	iss, err := issuer.New(cfg, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	const n = 10_000
	clients := manyClients(n)
	before := heap()
	if err := iss.SetRegistered(clients, nil); err != nil {
		t.Fatal(err)
	}
	per := (heap() - before) / n
	t.Logf("%d bytes of heap per registered client", per)
	if per > 400 {
		t.Errorf("%d bytes per registered client, want at most 400", per)
	}
	runtime.KeepAlive(iss)
	runtime.KeepAlive(clients) // the caller's, not the issuer's
}

func heap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestUpdateRegistered: a change applied as a change: a client added,
// one replaced (its new scopes served, its old tokens ended with its
// every secret replaced, when its registration gives no epoch), one
// removed (its tokens inactive); an ID equal under ASCII case folding to
// a file client's, or to another registered one's, left out and marked
// Taken, while the registration of an ID is replaced by its own; a
// removed ID no client holds changes nothing. What a change leaves out
// that a Reload makes fit is served after it.
func TestUpdateRegistered(t *testing.T) {
	s := newServer(t, withReference)
	tokenOf := func(id, pass string) answer {
		return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic(id, pass))
	}
	if err := s.iss.SetRegistered([]issuer.ClientConfig{registeredClient("kept", false), registeredClient("replaced", true), registeredClient("removed", true)}, nil); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{}
	for _, id := range []string{"replaced", "removed"} {
		a := tokenOf(id, regSecret)
		old[id], _ = a.body["access_token"].(string)
	}
	replaced := registeredClient("replaced", true)
	replaced.SecretHashes = []string{secret.HashSHA256("new-secret").String()}
	err := s.iss.UpdateRegistered([]issuer.ClientConfig{registeredClient("added", false), replaced, registeredClient("ADMIN", false), registeredClient("KEPT", false), registeredClient("wide", false)}, []string{"removed", "nobody"})
	var taken []string
	for _, e := range unwrapAll(err) {
		var re *issuer.RegistrationError
		if errors.As(e, &re) && re.Taken {
			taken = append(taken, re.ID)
		}
	}
	if fmt.Sprint(taken) != "[ADMIN KEPT]" {
		t.Fatalf("left out as taken: %v (%v), want [ADMIN KEPT]", taken, err)
	}
	for id, want := range map[string]int{"kept": 200, "added": 200, "removed": 401, "wide": 200} {
		if a := tokenOf(id, regSecret); a.status != want {
			t.Errorf("%s: %d, want %d", id, a.status, want)
		}
	}
	if a := tokenOf("replaced", "new-secret"); a.status != 200 {
		t.Errorf("replaced, its new secret: %d %s", a.status, a.raw)
	}
	for id, tok := range old {
		if m := introspect(t, s, "admin-api", adminAPISec, tok); m.body["active"] != false {
			t.Errorf("%s's token of before the change: %v", id, m.body)
		}
	}
	// Left out by a change, served once a reload makes it fit.
	narrow := registeredClient("later", false)
	narrow.Scopes = []string{"reports.read"}
	if err := s.iss.UpdateRegistered([]issuer.ClientConfig{narrow}, nil); err == nil {
		t.Fatal("a scope the configuration does not know was taken")
	}
	cfg := testConfig(s.issuerURL())
	withReference(cfg)
	cfg.Scopes = []string{"reports.read"}
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", "reports.read"), "Authorization", basic("later", regSecret)); a.status != 200 {
		t.Errorf("left out by a change, after the reload that makes it fit: %d %s", a.status, a.raw)
	}
	if a := tokenOf("added", regSecret); a.status != 200 {
		t.Errorf("a client of a change, after a reload: %d", a.status)
	}
}

// TestRegisteredKeyInCode: a registered client whose public key is given
// in code (ClientKeyConfig.Key), as a Go registry may give it, signs its
// assertions with it; the table keeps the key as its JWK, as it keeps a
// file's key.
func TestRegisteredKeyInCode(t *testing.T) {
	s := newServer(t, nil)
	k := jwktest.NewKey(t, "ES256")
	cc := issuer.ClientConfig{ClientID: "coded", PublicKeys: []issuer.ClientKeyConfig{{Key: k.Public()}}, Scopes: []string{scope.AdminWebAPI}}
	if err := s.iss.SetRegistered([]issuer.ClientConfig{cc}, nil); err != nil {
		t.Fatal(err)
	}
	a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, k, "coded", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI))
	if a.status != 200 {
		t.Fatalf("the registered client's assertion: %d %s; logs:\n%s", a.status, a.raw, s.logs)
	}
}

// BenchmarkUpdateRegistered is one change (a client's registration
// replaced) to 100,000 registered clients: what it costs is what it
// touches (B/op, allocs/op), whatever the roster's size.
func BenchmarkUpdateRegistered(b *testing.B) {
	cfg := testConfig("https://host.example/ids")
	cfg.Scopes = []string{"reports.read"}
	iss, err := issuer.New(cfg, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	clients := manyClients(100_000)
	if err := iss.SetRegistered(clients, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c := clients[i%len(clients)]
		if err := iss.UpdateRegistered([]issuer.ClientConfig{c}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
