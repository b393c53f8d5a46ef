// Package tenanttest makes SCIM tenant stores for tests from tenant names
// and hashes, through middleware.NewTenants as a configuration would.
package tenanttest

import (
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

// TB is what these helpers need of a test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Of is a store of one tenant with these token hashes.
func Of(t TB, tenant string, hashes ...secret.Hash) *middleware.Tenants {
	t.Helper()
	return From(t, map[string][]secret.Hash{tenant: hashes})
}

// From is a store of these tenants, written as a configuration file
// writes them.
func From(t TB, m map[string][]secret.Hash) *middleware.Tenants {
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
