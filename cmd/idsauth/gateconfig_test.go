package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateConfigRefusals: what loadGateConfig refuses, each naming the
// field: a secret in the file, a route without audience, a realm that
// could end its quoted string, a header the gate reads for itself, an
// assertion of an issuer's name, two issuers of which one introspects...
func TestGateConfigRefusals(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{
			"issuers":        []any{map[string]any{"issuer": "https://login.example/ids", "jwks": "discover"}},
			"routes":         []any{map[string]any{"host": "api.example", "scopes": []string{"s"}, "audience": []string{"a"}}},
			"trustedProxies": []string{"10.0.0.1"},
		}
	}
	route := func(c map[string]any) map[string]any { return c["routes"].([]any)[0].(map[string]any) }
	issuer := func(c map[string]any) map[string]any { return c["issuers"].([]any)[0].(map[string]any) }
	for name, tc := range map[string]struct {
		edit func(c map[string]any)
		want string
	}{
		"a secret in the file": {func(c map[string]any) {
			issuer(c)["introspection"] = map[string]any{"clientId": "gate", "clientSecret": "s3cret"}
		}, "a secret is never written in the file"},
		"no secret at all":           {func(c map[string]any) { issuer(c)["introspection"] = map[string]any{"clientId": "gate"} }, "give secretFile or secretEnv"},
		"no audience":                {func(c map[string]any) { delete(route(c), "audience") }, "give audience or resource"},
		"both audience and resource": {func(c map[string]any) { route(c)["resource"] = "https://api.example/x" }, "audience and resource: give one"},
		"a route without scopes":     {func(c map[string]any) { delete(route(c), "scopes") }, "routes[0].scopes"},
		"a host with a path":         {func(c map[string]any) { route(c)["host"] = "api.example/x" }, "routes[0].host"},
		"a prefix with dots":         {func(c map[string]any) { route(c)["pathPrefix"] = "/a/../b" }, "routes[0].pathPrefix"},
		"a quote in the realm":       {func(c map[string]any) { c["realm"] = `a"b` }, "realm"},
		"a claim in Authorization":   {func(c map[string]any) { c["claims"] = map[string]string{"sub": "Authorization"} }, "claims.sub"},
		"a claim in X-Forwarded-Uri": {func(c map[string]any) { c["claims"] = map[string]string{"sub": "X-Forwarded-Uri"} }, "claims.sub"},
		"an assertion of the issuer's name": {func(c map[string]any) {
			c["assertion"] = map[string]any{"keyFile": "k.pem", "issuer": "https://login.example/ids"}
		}, "assertion.issuer"},
		"an assertion of two minutes": {func(c map[string]any) {
			c["assertion"] = map[string]any{"keyFile": "k.pem", "issuer": "https://gate.example", "lifetimeSeconds": 120}
		}, "at most 60"},
		"two issuers, one introspecting": {func(c map[string]any) {
			issuer(c)["introspection"] = map[string]any{"clientId": "gate", "secretEnv": "X"}
			c["issuers"] = append(c["issuers"].([]any), map[string]any{"issuer": "https://other.example", "jwks": "discover"})
		}, "none introspects"},
		"a certificate header without proxies": {func(c map[string]any) {
			c["trustedProxies"] = []string{}
			c["certificates"] = map[string]any{"header": "X-SSL-Cert"}
		}, "certificates"},
		"an unknown field": {func(c map[string]any) { c["routs"] = []any{} }, `unknown field "routs"`},
		"jti of nobody":    {func(c map[string]any) { c["dpop"] = map[string]any{"jti": "nobody"} }, "dpop.jti"},
	} {
		c := good()
		tc.edit(c)
		b, _ := json.Marshal(c)
		p := filepath.Join(t.TempDir(), "gate.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadGateConfig(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
	b, _ := json.Marshal(good())
	p := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadGateConfig(p); err != nil {
		t.Fatalf("the good configuration: %v", err)
	}
}
