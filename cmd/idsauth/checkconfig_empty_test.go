package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

// TestCheckConfigRefusesTheEmptySecretsHash: check-config names the field
// that holds the hash of the empty secret, and says why.
func TestCheckConfigRefusesTheEmptySecretsHash(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{
		"issuer": "https://auth.example/ids", "ephemeralKey": true,
		"clients": []map[string]any{{"clientId": "me", "secretHashes": []string{secret.HashSHA256("").String()}, "scopes": []string{"pd_AdminWebApi"}}},
	})
	file := filepath.Join(dir, "idsauth.json")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r := idsauth(t, bin, "", nil, "check-config", file)
	if r.code != 1 || !strings.Contains(r.stderr, `clients[0] ("me").secretHashes[0]`) || !strings.Contains(r.stderr, "empty secret") {
		t.Fatalf("check-config: %+v, want exit 1 naming clients[0] (\"me\").secretHashes[0] and the empty secret", r)
	}
}

// TestCheckConfigNamesTheFileAndTheNearestField: check-config names the
// file, as serve does, for an error of decoding (with the known field
// nearest a misspelt one) and of the issuer's check alike.
func TestCheckConfigNamesTheFileAndTheNearestField(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	h := secret.HashSHA256("s").String()
	for _, c := range []struct{ name, json, want string }{
		{"a misspelt field", `{"issuer":"https://auth.example/ids","ephemeralKey":true,"clients":[{"clientId":"me","secretHashes":["` + h + `"],"scope":["pd_AdminWebApi"]}]}`,
			`clients[0] ("me"): unknown field "scope" (did you mean "scopes"?)`},
		{"an unknown scope", `{"issuer":"https://auth.example/ids","ephemeralKey":true,"clients":[{"clientId":"me","secretHashes":["` + h + `"],"scopes":["nope"]}]}`,
			`clients[0] ("me").scopes[0]: unknown scope "nope"`},
	} {
		file := writeFile(t, dir, "idsauth.json", c.json)
		want := "idsauth check-config: issuer config: " + file + ": " + c.want
		if r := idsauth(t, bin, "", nil, "check-config", file); r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: %+v\nwant %q", c.name, r, want)
		}
	}
}
