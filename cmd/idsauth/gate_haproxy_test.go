package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/haproxytest"
)

// startBehindHAProxy is startBehindNginx with HAProxy and the shipped
// Lua action.
func startBehindHAProxy(t *testing.T, gateConfig func(host string) string) *behind {
	t.Helper()
	up := pythonUpstream(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "haproxy")
	server := ca.Server(t)
	clients := certtest.NewCA(t, "clients")
	lua, err := os.ReadFile("../../packaging/haproxy/idsauth-gate.lua")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"api.pem":          append(certtest.PEM(server.Leaf.Raw), certtest.KeyPEM(t, server)...),
		"clients-ca.pem":   certtest.PEM(clients.Cert.Raw),
		"ca.pem":           certtest.PEM(ca.Cert.Raw),
		"idsauth-gate.lua": lua,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := gateConfig("placeholder.invalid")
	g, gsrv := startGate(t, file)
	gateAddr := strings.TrimPrefix(gsrv.URL, "http://")
	conf := recipe(t, "haproxy", "bind :443 ", "bind 127.0.0.1:{{port}} ", "/etc/haproxy/", dir+"/",
		"10.0.0.9:8181", gateAddr, "10.0.0.7:8080", up)
	hp := haproxytest.Start(t, dir, conf)
	if err := os.Rename(gateConfig(hp.Addr), file); err != nil {
		t.Fatal(err)
	}
	if err := g.reloadConfig(); err != nil {
		t.Fatal(err)
	}
	return &behind{gsrv: gsrv, addr: hp.Addr, log: hp.Log, g: g, origin: "https://" + hp.Addr, ca: ca, caFile: filepath.Join(dir, "ca.pem")}
}

// TestGateBehindHAProxy: idsauth conformance gate through a real HAProxy
// 2.6 with the shipped Lua action, for JWTs and reference tokens, nonces
// given back: HAProxy has no auth subrequest, and the action passes the
// gate's status, headers and body in one call. The claims reach the
// upstream, never the client's own.
func TestGateBehindHAProxy(t *testing.T) {
	iss := testIssuer(t)
	b := startBehindHAProxy(t, func(host string) string {
		return issuerGate(t, iss.URL(), host, func(c map[string]any) {
			c["dpop"] = map[string]any{"requireNonce": true}
			c["certificates"] = map[string]any{"header": "Client-Cert"}
		})
	})
	target := b.origin + "/webapi/api/v3/demo/Admin/Users"
	for _, client := range []string{"runner", "runner-ref"} {
		code, out := runRunner(t, "gate", "-url", target, "-issuer", iss.URL(), "-client-id", client, "-scope", "pd_AdminWebApi", "-cacert", b.caFile)
		if code != 0 {
			t.Fatalf("%s: exit %d through HAProxy:\n%s\nhaproxy:\n%s", client, code, out, b.log())
		}
	}
	good := runnerToken(t, iss, "runner", "pd_AdminWebApi")
	resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: Bearer "+good, "X-Client-Id: spoofed", "X-Scope: everything")
	saw := sawOf(t, body)
	if resp.StatusCode != 200 || strings.Join(saw.Headers["X-Client-Id"], ",") != "runner" || strings.Join(saw.Headers["X-Scope"], ",") != "pd_AdminWebApi" {
		t.Fatalf("the claims upstream: %d %+v", resp.StatusCode, saw)
	}
}

// TestGatePathsBehindHAProxy: the table of paths through a real HAProxy.
func TestGatePathsBehindHAProxy(t *testing.T) {
	iss := testIssuer(t)
	b := startBehindHAProxy(t, func(host string) string { return issuerGate(t, iss.URL(), host, nil) })
	tok := runnerToken(t, iss, "runner", "pd_ConnectWebApi")
	for _, row := range pathRows {
		resp, body := b.raw(t, "GET", row.raw, "Authorization: Bearer "+tok)
		checkPathRow(t, "haproxy", row.name, row.raw, row.want["haproxy"], resp.StatusCode, strings.TrimSpace(body))
	}
}
