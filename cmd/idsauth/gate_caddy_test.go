package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/proctest"
)

// caddyBinary is the Caddy v2.11.9 that CI's Caddy stage builds from its
// Go module (Caddy needs Go 1.26), named by IDSAUTH_CADDY: without it the
// Caddy tests are skipped, under CI too, where only that stage runs them.
func caddyBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("IDSAUTH_CADDY")
	if bin == "" {
		t.Skip("IDSAUTH_CADDY names no Caddy binary: .ci/run's Caddy stage builds one (go install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9)")
	}
	return bin
}

// startBehindCaddy is startBehindNginx with Caddy and its forward_auth.
func startBehindCaddy(t *testing.T, gateConfig func(host string) string) *behind {
	t.Helper()
	bin := caddyBinary(t)
	up := pythonUpstream(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "caddy")
	server := ca.Server(t)
	for name, data := range map[string][]byte{"api.pem": certtest.PEM(server.Leaf.Raw), "api-key.pem": certtest.KeyPEM(t, server), "ca.pem": certtest.PEM(ca.Cert.Raw)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := gateConfig("placeholder.invalid")
	g, gsrv := startGate(t, file)
	// Caddy holds a request's Host to its TLS server name where it asks
	// for client certificates (421 otherwise): the clients call
	// localhost, as a client calls api.example.com.
	port := proctest.FreePort(t)
	addr, host := "127.0.0.1:"+port, "localhost:"+port
	conf := recipe(t, "caddy", "https://api.example.com", "https://"+host, "/etc/caddy/", dir+"/",
		"10.0.0.9:8181", strings.TrimPrefix(gsrv.URL, "http://"), "10.0.0.7:8080", up)
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, addr, bin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	if err := os.Rename(gateConfig(host), file); err != nil {
		t.Fatal(err)
	}
	if err := g.reloadConfig(); err != nil {
		t.Fatal(err)
	}
	return &behind{gsrv: gsrv, addr: addr, host: host, log: p.Log, g: g, origin: "https://" + host, ca: ca, caFile: filepath.Join(dir, "ca.pem")}
}

// TestGateBehindCaddy: idsauth conformance gate through a real Caddy
// v2.11.9 (built from its Go module) with forward_auth as docs/GATEWAY.md
// has it, for JWTs and reference tokens, nonces given back; the path
// table through it; the claims reach the upstream, never the client's.
func TestGateBehindCaddy(t *testing.T) {
	iss := testIssuer(t)
	b := startBehindCaddy(t, func(host string) string {
		return issuerGate(t, iss.URL(), host, func(c map[string]any) {
			c["dpop"] = map[string]any{"requireNonce": true}
			c["certificates"] = map[string]any{"header": "Client-Cert"}
		})
	})
	for _, client := range []string{"runner", "runner-ref"} {
		code, out := runRunner(t, "gate", "-url", b.origin+"/webapi/api/v3/demo/Admin/Users", "-issuer", iss.URL(), "-client-id", client, "-scope", "pd_AdminWebApi", "-cacert", b.caFile)
		if code != 0 {
			t.Fatalf("%s: exit %d through Caddy:\n%s\ncaddy:\n%s", client, code, out, b.log())
		}
	}
	good := runnerToken(t, iss, "runner", "pd_AdminWebApi")
	resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: Bearer "+good, "X-Client-Id: spoofed", "X-Scope: everything")
	saw := sawOf(t, body)
	if resp.StatusCode != 200 || strings.Join(saw.Headers["X-Client-Id"], ",") != "runner" || strings.Join(saw.Headers["X-Scope"], ",") != "pd_AdminWebApi" {
		t.Errorf("the claims upstream: %d %+v", resp.StatusCode, saw)
	}
	tok := runnerToken(t, iss, "runner", "pd_ConnectWebApi")
	for _, row := range pathRows {
		want := row.want["caddy"]
		resp, body := b.raw(t, "GET", row.raw, "Authorization: Bearer "+tok)
		checkPathRow(t, "caddy", row.name, row.raw, want, resp.StatusCode, strings.TrimSpace(body))
	}
}
