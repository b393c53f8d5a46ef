package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/secret"
)

// TestTokenWithDPoPKey: token -dpop-key gets a token bound to the key
// (decode shows its cnf.jkt) from a client that requires DPoP; without
// the flag the same client is refused.
func TestTokenWithDPoPKey(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "dpop.pem")
	if r := idsauth(t, bin, "", nil, "gen-key", "-alg", "EdDSA", "-out", keyFile); r.code != 0 {
		t.Fatalf("gen-key: %+v", r)
	}
	pemBytes, _ := os.ReadFile(keyFile)
	priv, err := keys.ParsePEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	jkt, _ := keys.Thumbprint(priv.Public())
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b, _ := json.Marshal(map[string]any{
		"issuer": srv.URL + "/ids", "ephemeralKey": true,
		"clients": []map[string]any{{"clientId": "bound", "secretHashes": []string{secret.HashSHA256("b-secret").String()}, "scopes": []string{"pd_AdminWebApi"}, "requireDPoP": true}},
	})
	cfgFile := filepath.Join(dir, "idsauth.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := idsauth(t, bin, "", nil, "check-config", cfgFile); r.code != 0 || !strings.Contains(r.stdout, "dpop      required") {
		t.Fatalf("check-config: %+v", r)
	}
	mountIssuer(t, mux, cfgFile)
	args := []string{"token", "-issuer", srv.URL + "/ids", "-client-id", "bound", "-scope", "pd_AdminWebApi"}
	env := []string{"IDSAUTH_CLIENT_SECRET=b-secret"}
	r := idsauth(t, bin, "", env, append(args, "-dpop-key", keyFile, "-decode")...)
	if r.code != 0 || !strings.Contains(r.stdout, `"jkt": "`+jkt+`"`) {
		t.Fatalf("with -dpop-key: %+v", r)
	}
	if r := idsauth(t, bin, "", env, args...); r.code != 1 || !strings.Contains(r.stderr, "invalid_request") {
		t.Fatalf("without: %+v", r)
	}
}
