package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientStoreSection: serve, check-config and migrate read the
// clientStore section alike: a URL in the file (it holds the password),
// no urlEnv, and an issuer that does not allow the administration API's
// scope are refused, naming the field; an unset variable is named, never
// a value.
func TestClientStoreSection(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, scopes, section, want string
	}{
		{"a URL in the file", `["idsauth_admin"]`, `{"postgres": {"url": "postgres://u:hunter2@db/x"}}`, "clientStore.postgres.url: the URL holds the password"},
		{"no urlEnv", `["idsauth_admin"]`, `{"postgres": {}}`, "clientStore.postgres.urlEnv: required"},
		{"no postgres", `["idsauth_admin"]`, `{}`, "clientStore.postgres: required"},
		{"no admin scope", `[]`, `{"postgres": {"urlEnv": "X"}}`, `add it to the issuer's scopes`},
		{"a misspelt field", `["idsauth_admin"]`, `{"postgres": {"urlenv2": "X"}}`, `unknown field "urlenv2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "idsauth.json")
			cfg := `{"issuer": "https://host.example/ids", "ephemeralKey": true, "scopes": ` + c.scopes + `, "clientStore": ` + c.section + `}`
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadServeConfig(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
	path := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(path, []byte(`{"issuer": "https://host.example/ids", "ephemeralKey": true, "scopes": ["idsauth_admin"], "clientStore": {"postgres": {"urlEnv": "IDSAUTH_TEST_PG_URL"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadServeConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.ClientStore.databaseURL(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "IDSAUTH_TEST_PG_URL is empty or unset") {
		t.Fatalf("an unset variable: %v", err)
	}
}
