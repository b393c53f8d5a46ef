package middleware_test

import (
	"strings"
	"testing"

	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

// TestEmptyTenantTokenHashIsRefused: a SCIM tenant registered with the
// hash of the empty token is refused by NewTenants, naming the field.
func TestEmptyTenantTokenHashIsRefused(t *testing.T) {
	_, err := middleware.NewTenants([]middleware.TenantConfig{
		{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("t0ken").String(), secret.HashSHA256("").String()}},
	})
	if err == nil || !strings.Contains(err.Error(), "[0].tokenHashes[1]") || !strings.Contains(err.Error(), "empty secret") {
		t.Fatalf("NewTenants with the empty token's hash: %v, want an error naming [0].tokenHashes[1]", err)
	}
}
