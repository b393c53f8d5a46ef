package middleware_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

func TestNewTenants(t *testing.T) {
	good := secret.HashSHA256("acme-token").String()
	t.Run("each tenant gets its hashes, and SCIMAuth admits their tokens", func(t *testing.T) {
		m, err := middleware.NewTenants([]middleware.TenantConfig{
			{Tenant: "acme", TokenHashes: []string{good, secret.HashSHA256("acme-next").String()}},
			{Tenant: "globex", TokenHashes: []string{secret.HashSHA256("globex-token").String()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.TenantTokens("acme")) != 2 || len(m.TenantTokens("globex")) != 1 {
			t.Fatalf("parsed %v, %v", m.TenantTokens("acme"), m.TenantTokens("globex"))
		}
		srv := scimServer(t, m, middleware.SCIMConfig{})
		for tenant, tok := range map[string]string{"acme": "acme-next", "globex": "globex-token"} {
			if a := call(t, scimURL(srv, tenant), "Bearer "+tok); a.status != http.StatusOK {
				t.Errorf("%s: %d", tenant, a.status)
			}
		}
		wantSCIM401(t, call(t, scimURL(srv, "globex"), "Bearer acme-token"))
	})
	t.Run("no tenants is an empty store, not an error", func(t *testing.T) {
		if m, err := middleware.NewTenants(nil); err != nil || m == nil || m.TenantTokens("acme") != nil {
			t.Fatalf("%v, %v", m, err)
		}
	})

	cases := []struct {
		name, json, field, reason string
	}{
		{"empty tenant", `[{"tenant":"","tokenHashes":["` + good + `"]}]`, "[0].tenant", "empty"},
		{"duplicate tenant", `[{"tenant":"t","tokenHashes":["` + good + `"]},{"tenant":"t","tokenHashes":["` + secret.HashSHA256("b").String() + `"]}]`, "[1].tenant", `duplicate tenant "t"`},
		{"no hashes", `[{"tenant":"t","tokenHashes":[]}]`, "[0].tokenHashes", "at least one hash"},
		{"a plain-text token", `[{"tenant":"t","tokenHashes":["` + good + `","hunter2"]}]`, "[0].tokenHashes[1]", "plain-text"},
		{"a plain-text token with a colon", `[{"tenant":"t","tokenHashes":["x:hunter2"]}]`, "[0].tokenHashes[0]", "plain-text"},
		{"a malformed hash", `[{"tenant":"t","tokenHashes":["sha256:hunter2"]}]`, "[0].tokenHashes[0]", "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name+" is refused by field", func(t *testing.T) {
			var list []middleware.TenantConfig
			if err := json.Unmarshal([]byte(c.json), &list); err != nil {
				t.Fatal(err)
			}
			m, err := middleware.NewTenants(list)
			var te *middleware.TenantConfigError
			if !errors.As(err, &te) || m != nil {
				t.Fatalf("got %v, %v; want a TenantConfigError and nothing else", m, err)
			}
			// Replace refuses it the same way, and changes nothing.
			kept, _ := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "t", TokenHashes: []string{good}}})
			if err := kept.Replace(list); !errors.As(err, &te) || len(kept.TenantTokens("t")) != 1 {
				t.Fatalf("Replace: %v, and the store holds %v; want the error and the old tenants", err, kept.TenantTokens("t"))
			}
			if te.Field != c.field || !strings.Contains(te.Reason, c.reason) {
				t.Fatalf("got %s: %s; want %s: ...%s...", te.Field, te.Reason, c.field, c.reason)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error echoes the value: %v", err)
			}
		})
	}
}
