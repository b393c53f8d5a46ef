package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
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
	if got := cfg.Keys[0].File; got != filepath.Join(dir, "missing.pem") {
		t.Fatalf("key file %q: relative paths are read from the file's folder", got)
	}
	_, logger := testlog.New()
	_, err = newService(context.Background(), src, logger)
	var ce *issuer.ConfigError
	if !errors.As(err, &ce) || ce.Field != "keys[0]" {
		t.Fatalf("newService: %v, want a ConfigError for keys[0]", err)
	}
	for name, body := range map[string]string{"unknown field": `{"issuer":"http://x/ids","colour":"red"}`, "two values": `{} {}`, "not JSON": `{"issuer":`} {
		if _, err := decodeConfig([]byte(body), dir); err == nil {
			t.Errorf("%s: decoded", name)
		}
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
