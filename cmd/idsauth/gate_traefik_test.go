package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/proctest"
)

// TestGateBehindTraefik: idsauth conformance gate through a real Traefik
// with ForwardAuth as docs/GATEWAY.md has it, when IDSAUTH_TRAEFIK names
// a Traefik binary. CI builds none: Traefik v3.6.12 builds from its Go
// module here, but not within the minutes a CI stage has. Over plain
// HTTP: the recipe's TLS is Traefik's own business.
func TestGateBehindTraefik(t *testing.T) {
	bin := os.Getenv("IDSAUTH_TRAEFIK")
	if bin == "" {
		t.Skip("IDSAUTH_TRAEFIK names no Traefik binary (its build does not fit CI; see docs/GATEWAY.md)")
	}
	iss := testIssuer(t)
	up := pythonUpstream(t)
	file := issuerGate(t, iss.URL(), "placeholder.invalid", func(c map[string]any) { c["dpop"] = map[string]any{"requireNonce": true} })
	g, gsrv := startGate(t, file)
	port := proctest.FreePort(t)
	host := "127.0.0.1:" + port
	dyn := recipe(t, "yaml traefik", "http://10.0.0.9:8181", gsrv.URL, "http://10.0.0.7:8080", "http://"+up,
		"Host(`api.example.com`)", "Host(`127.0.0.1`)", "      tls: {}\n", "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dynamic.yaml"), []byte(dyn), 0o600); err != nil {
		t.Fatal(err)
	}
	p := proctest.Start(t, host, bin, "--entryPoints.web.address="+host, "--providers.file.filename="+filepath.Join(dir, "dynamic.yaml"), "--log.level=ERROR")
	if err := os.Rename(issuerGate(t, iss.URL(), host, func(c map[string]any) { c["dpop"] = map[string]any{"requireNonce": true}; c["scheme"] = "http" }), file); err != nil {
		t.Fatal(err)
	}
	if err := g.reloadConfig(); err != nil {
		t.Fatal(err)
	}
	// The file provider's routers come a moment after the entry point
	// listens.
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + host + "/webapi/api/v3/demo/Admin/Users")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				break
			}
		}
		if i == 100 {
			t.Fatalf("Traefik routes nothing: %v\n%s", err, p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, client := range []string{"runner", "runner-ref"} {
		code, out := runRunner(t, "gate", "-url", "http://"+host+"/webapi/api/v3/demo/Admin/Users", "-issuer", iss.URL(), "-client-id", client, "-scope", "pd_AdminWebApi")
		if code != 0 {
			t.Fatalf("%s: exit %d through Traefik:\n%s\ntraefik:\n%s", client, code, out, p.Log())
		}
		if !strings.Contains(out, "passed") {
			t.Fatal(out)
		}
	}
	b := &behind{addr: host, plain: true}
	good := runnerToken(t, iss, "runner", "pd_AdminWebApi")
	resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: Bearer "+good, "X-Client-Id: spoofed", "X-Scope: everything")
	saw := sawOf(t, body)
	if resp.StatusCode != 200 || strings.Join(saw.Headers["X-Client-Id"], ",") != "runner" || strings.Join(saw.Headers["X-Scope"], ",") != "pd_AdminWebApi" {
		t.Errorf("the claims upstream: %d %+v", resp.StatusCode, saw)
	}
	tok := runnerToken(t, iss, "runner", "pd_ConnectWebApi")
	for _, row := range pathRows {
		want := row.want["traefik"]
		resp, body := b.raw(t, "GET", row.raw, "Authorization: Bearer "+tok)
		checkPathRow(t, "traefik", row.name, row.raw, want, resp.StatusCode, strings.TrimSpace(body))
	}
}
