package middleware_test

import (
	"testing"

	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

// newDPoP makes a middleware.DPoP for cfg or fails the test.
func newDPoP(t testing.TB, cfg middleware.DPoPConfig) *middleware.DPoP {
	t.Helper()
	d, err := middleware.NewDPoP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tenantsOf is a store of one tenant with these token hashes.
func tenantsOf(t testing.TB, tenant string, hashes ...secret.Hash) *middleware.Tenants {
	t.Helper()
	return tenantsFrom(t, map[string][]secret.Hash{tenant: hashes})
}

// tenantsFrom is a store of these tenants, made as a configuration file
// makes it.
func tenantsFrom(t testing.TB, m map[string][]secret.Hash) *middleware.Tenants {
	t.Helper()
	var cfg []middleware.TenantConfig
	for name, hashes := range m {
		tc := middleware.TenantConfig{Tenant: name}
		for _, h := range hashes {
			tc.TokenHashes = append(tc.TokenHashes, h.String())
		}
		cfg = append(cfg, tc)
	}
	tenants, err := middleware.NewTenants(cfg)
	if err != nil {
		t.Fatalf("tenants: %v", err)
	}
	return tenants
}
