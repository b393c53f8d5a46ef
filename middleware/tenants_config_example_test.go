package middleware_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/idsauth/idsauth/middleware"
)

// Load the SCIM tenants from a section of a service's configuration file,
// and replace them on reload; a bad section changes nothing.
func ExampleNewTenants() {
	file := []byte(`{
	  "scimTenants": [
	    {"tenant": "acme", "tokenHashes": ["sha256:nm/i/1iedFryVcLNbev2oz1/SDcrgF/J5j/RzEc05tc="]}
	  ]
	}`)
	var cfg struct {
		SCIMTenants []middleware.TenantConfig `json:"scimTenants"`
	}
	if err := json.Unmarshal(file, &cfg); err != nil {
		log.Fatal(err)
	}
	tenants, err := middleware.NewTenants(cfg.SCIMTenants) // for middleware.SCIMAuth(tenants)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(tenants.TenantTokens("acme")), "token hash for acme")

	// On reload: a bad list changes nothing.
	bad := []middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{"demo-scim-token"}}}
	if err := tenants.Replace(bad); err != nil {
		fmt.Println("reload refused:", err)
	}
	fmt.Println(len(tenants.TenantTokens("acme")), "token hash for acme")
	// Output:
	// 1 token hash for acme
	// reload refused: SCIM tenants: [0].tokenHashes[0]: not a hash: want "sha256:", "sha512:" or "bcrypt:" followed by the hash (a plain-text secret is never accepted)
	// 1 token hash for acme
}
