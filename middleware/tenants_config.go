package middleware

import (
	"fmt"

	"github.com/idsauth/idsauth/secret"
)

// TenantConfig is one SCIM tenant as a configuration file writes it:
//
//	{"tenant": "acme", "tokenHashes": ["sha256:..."]}
type TenantConfig struct {
	// Tenant is the tenant's name, the {tenant} of the SCIM path.
	// Required and unique.
	Tenant string `json:"tenant"`
	// TokenHashes are the hashes of the tenant's tokens, in package
	// secret's forms: at least one, several to rotate one. A plain-text
	// token is refused.
	TokenHashes []string `json:"tokenHashes"`
}

// TenantConfigError names the field of a tenant list that is wrong and
// why. It never holds a token hash's value: a value that is not a hash may
// be a token pasted in plain text.
type TenantConfigError struct {
	// Field is the wrong field, from the list's index, e.g.
	// "[1].tokenHashes[0]"; a file that holds the list under a name puts
	// that name before it ("scimTenants[1].tokenHashes[0]").
	Field  string
	Reason string
}

func (e *TenantConfigError) Error() string {
	return "SCIM tenants: " + e.Field + ": " + e.Reason
}

// parseTenants checks tenants and parses their token hashes.
func parseTenants(tenants []TenantConfig) (map[string][]secret.Hash, error) {
	out := make(map[string][]secret.Hash, len(tenants))
	for i, tc := range tenants {
		bad := func(field, format string, args ...any) error {
			return &TenantConfigError{Field: fmt.Sprintf("[%d].%s", i, field), Reason: fmt.Sprintf(format, args...)}
		}
		switch _, dup := out[tc.Tenant]; {
		case tc.Tenant == "":
			return nil, bad("tenant", "empty")
		case dup:
			return nil, bad("tenant", "duplicate tenant %q", tc.Tenant)
		case len(tc.TokenHashes) == 0:
			return nil, bad("tokenHashes", "at least one hash is required")
		}
		hashes := make([]secret.Hash, len(tc.TokenHashes))
		for j, s := range tc.TokenHashes {
			h, err := secret.Parse(s)
			if err != nil {
				// secret.Parse's errors do not quote the value.
				return nil, bad(fmt.Sprintf("tokenHashes[%d]", j), "%v", err)
			}
			hashes[j] = h
		}
		out[tc.Tenant] = hashes
	}
	return out, nil
}
