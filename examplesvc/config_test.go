package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestIssuerURLSource checks where the issuer URL comes from: only an
// explicit issuer (the -issuer flag) replaces a file's, and the demo
// configuration's is the one it is given (the listen address).
func TestIssuerURLSource(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, writeKey(t, dir, "k.pem", jwktest.NewKey(t, "ES256")))
	file := filepath.Join(dir, "config.json")
	cases := []struct {
		name string
		src  configSource
		want string
	}{
		{"a file without -issuer keeps its issuer", configSource{file: file}, "http://placeholder/ids"},
		{"-issuer replaces a file's issuer", configSource{file: file, issuer: "https://auth.example/ids"}, "https://auth.example/ids"},
		{"the demo configuration takes the one given", configSource{issuer: "http://127.0.0.1:9/ids"}, "http://127.0.0.1:9/ids"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, logger := testlog.New()
			svc, err := newService(t.Context(), c.src, logger)
			if err != nil {
				t.Fatal(err)
			}
			if got := svc.iss.URL(); got != c.want {
				t.Fatalf("issuer %q, want %q", got, c.want)
			}
		})
	}
}

// TestLoadLeavesCheckingToTheIssuer shows that load neither checks the
// configuration nor reads its key files: issuer.New does both, once.
func TestLoadLeavesCheckingToTheIssuer(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "missing.pem")
	src := configSource{file: filepath.Join(dir, "config.json"), issuer: "http://127.0.0.1:9/ids"}
	cfg, err := src.load()
	if err != nil {
		t.Fatalf("load read the key file: %v", err)
	}
	if cfg.Dir != dir || cfg.Keys[0].File != "missing.pem" {
		t.Fatalf("key file %q in %q: relative paths are read from the file's folder", cfg.Keys[0].File, cfg.Dir)
	}
	if len(cfg.SCIMTenants) != 1 || cfg.SCIMTenants[0].Tenant != "acme" {
		t.Fatalf("tenants %+v", cfg.SCIMTenants)
	}
	_, logger := testlog.New()
	_, err = newService(context.Background(), src, logger)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "keys[0]" {
		t.Fatalf("newService: %v, want a ConfigError for keys[0]", err)
	}
	for name, body := range map[string]string{
		"unknown field":             `{"issuer":"http://x/ids","colour":"red"}`,
		"unknown field in a tenant": `{"issuer":"http://x/ids","scimTenants":[{"tenant":"t","tokens":["x"]}]}`,
		"two values":                `{} {}`,
		"not JSON":                  `{"issuer":`,
	} {
		if err := os.WriteFile(src.file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := src.load(); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a ConfigError", name, err)
		}
	}
}

// TestDemoConfigurationOptsInToAnEphemeralKey: the embedded demo
// configuration is the one that asks for an ephemeral key, and says so.
func TestDemoConfigurationOptsInToAnEphemeralKey(t *testing.T) {
	cfg, err := configSource{}.load()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.EphemeralKey || len(cfg.Keys) != 0 {
		t.Fatalf("ephemeralKey %v, %d keys", cfg.EphemeralKey, len(cfg.Keys))
	}
	logs, logger := testlog.New()
	if _, err := newService(t.Context(), configSource{issuer: "http://127.0.0.1:9/ids"}, logger); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "NO SIGNING KEY CONFIGURED") {
		t.Fatalf("log:\n%s", logs.String())
	}
}

// TestBadTenantsAreRefusedByField: a wrong SCIM tenant stops the start
// and, on reload, leaves both the issuer and the tenants as they were.
func TestBadTenantsAreRefusedByField(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "k.pem", jwktest.NewKey(t, "ES256"))
	writeConfig(t, dir, key)
	file := filepath.Join(dir, "config.json")
	setTenants := func(tenants any, clientID string) {
		t.Helper()
		var cfg map[string]any
		b, _ := os.ReadFile(file)
		_ = json.Unmarshal(b, &cfg)
		cfg["scimTenants"] = tenants
		cfg["clients"].([]any)[0].(map[string]any)["clientId"] = clientID
		b, _ = json.Marshal(cfg)
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setTenants([]map[string]any{{"tenant": "acme", "tokenHashes": []string{"acme-scim-token"}}}, "admin")
	logs, logger := testlog.New()
	if _, err := newService(t.Context(), configSource{file: file}, logger); err == nil ||
		err.Error() != "configuration: scimTenants[0].tokenHashes[0]: "+secret.ErrPlainText.Error() {
		t.Fatalf("newService: %v", err)
	}

	writeConfig(t, dir, key)
	svc, err := newService(t.Context(), configSource{file: file}, logger)
	if err != nil {
		t.Fatal(err)
	}
	setTenants([]map[string]any{{"tenant": "acme", "tokenHashes": []string{"acme-scim-token"}}}, "renamed")
	svc.reload()
	if !strings.Contains(logs.String(), "reload refused") || !strings.Contains(logs.String(), "scimTenants[0].tokenHashes[0]") || strings.Contains(logs.String(), "acme-scim-token") {
		t.Fatalf("log:\n%s", logs.String())
	}
	if svc.tenants.TenantTokens("acme") == nil || clientIDs(svc.current)[0] != "admin" {
		t.Fatalf("a refused reload changed the service: tenants %v, clients %v", svc.tenants.TenantTokens("acme"), clientIDs(svc.current))
	}
	// The issuer still has admin, not renamed.
	req := httptest.NewRequest("POST", svc.iss.TokenURL(), strings.NewReader("grant_type=client_credentials&scope="+scope.AdminWebAPI))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("admin", "admin-secret")
	rec := httptest.NewRecorder()
	svc.iss.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("admin after a refused reload: %d %s", rec.Code, rec.Body)
	}
}

// TestReloadKeepsTheIssuerURL refuses a reload whose file names another
// issuer: the validator checks tokens against the URL the service
// started with.
func TestReloadKeepsTheIssuerURL(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "k.pem", jwktest.NewKey(t, "ES256"))
	writeConfig(t, dir, key)
	file := filepath.Join(dir, "config.json")
	logs, logger := testlog.New()
	svc, err := newService(t.Context(), configSource{file: file}, logger)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	b, _ := os.ReadFile(file)
	_ = json.Unmarshal(b, &cfg)
	cfg["issuer"] = "https://elsewhere.example/ids"
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	svc.reload()
	if !strings.Contains(logs.String(), "reload refused") || svc.iss.URL() != "http://placeholder/ids" {
		t.Fatalf("issuer %q after reload; log:\n%s", svc.iss.URL(), logs.String())
	}
	writeConfig(t, dir, key) // the same issuer again: accepted
	svc.reload()
	if !strings.Contains(logs.String(), "configuration reloaded") {
		t.Fatalf("a reload with the same issuer was refused:\n%s", logs.String())
	}
}

func TestIssuerWarnings(t *testing.T) {
	addr := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	cases := []struct {
		issuer, listen string
		want           int
	}{
		{"http://127.0.0.1:8080/ids", "127.0.0.1:8080", 0},
		{"http://127.0.0.1:8080/ids", "0.0.0.0:8080", 0},
		{"http://auth.example:8080/ids", "[::]:8080", 0},
		{"https://auth.example/ids", "127.0.0.1:8080", 1},
		{"http://127.0.0.1:9090/ids", "127.0.0.1:8080", 1},
		{"http://127.0.0.1:8080/auth", "127.0.0.1:8080", 1},
		{"https://auth.example/auth", "127.0.0.1:443", 2},
	}
	for _, c := range cases {
		if got := issuerWarnings(c.issuer, addr(c.listen)); len(got) != c.want {
			t.Errorf("%s on %s: %q, want %d warnings", c.issuer, c.listen, got, c.want)
		}
	}
}

// TestIssuerFlag runs the binary: with -config and no -issuer the
// discovery document names the file's issuer and the log warns that it is
// not the listen address; -issuer replaces it.
func TestIssuerFlag(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, writeKey(t, dir, "k1.pem", jwktest.NewKey(t, "ES256")))
	discovered := func(p *process) string {
		t.Helper()
		r := send(t, http.DefaultClient, "GET", p.base+"/ids/.well-known/openid-configuration", "")
		var doc struct{ Issuer string }
		if r.status != 200 || json.Unmarshal([]byte(r.body), &doc) != nil {
			t.Fatalf("discovery: %d %s", r.status, r.body)
		}
		return doc.Issuer
	}
	p := startArgs(t, dir, "-addr", "127.0.0.1:0")
	if got := discovered(p); got != "http://placeholder/ids" {
		t.Fatalf("without -issuer the issuer is %q, want the file's", got)
	}
	p.waitLog(t, "the issuer URL's host is not the listen address", 1)

	p = startArgs(t, dir, "-addr", "127.0.0.1:0", "-issuer", "https://auth.example/ids")
	if got := discovered(p); got != "https://auth.example/ids" {
		t.Fatalf("with -issuer the issuer is %q", got)
	}
}
