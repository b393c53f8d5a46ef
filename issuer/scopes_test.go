package issuer_test

import (
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestOwnScopes: scopes of your own, listed in Config.Scopes, may be
// held by clients and API resources beside the product's; one not listed
// is refused as before, naming every known scope; the list itself
// refuses what is no scope name, a product scope in another case, and a
// scope listed twice.
func TestOwnScopes(t *testing.T) {
	hash := []string{secret.HashSHA256("s").String()}
	cfg := func(own []string, clientScopes ...string) *issuer.Config {
		return &issuer.Config{
			Issuer: "https://ids.example/ids", EphemeralKey: true, Scopes: own,
			Clients:      []issuer.ClientConfig{{ClientID: "c", SecretHashes: hash, Scopes: clientScopes}},
			APIResources: []issuer.APIResourceConfig{{Name: "orders-api", SecretHashes: hash, Scopes: clientScopes}},
		}
	}
	if err := cfg([]string{"orders.read", "orders:write"}, "orders.read", "orders:write", scope.AdminWebAPI).Validate(); err != nil {
		t.Fatalf("own scopes: %v", err)
	}
	err := cfg([]string{"orders.read"}, "orders.write").Validate()
	if err == nil || !strings.Contains(err.Error(), `clients[0] ("c").scopes[0]: unknown scope "orders.write" (known: [pd_AdminWebApi pd_ConnectWebApi orders.read])`) {
		t.Fatalf("a scope not listed: %v", err)
	}
	if err := cfg(nil, "orders.read").Validate(); err == nil || !strings.Contains(err.Error(), "unknown scope") {
		t.Fatalf("no own scopes: %v", err)
	}
	for name, own := range map[string][]string{
		"a space":                       {"orders read"},
		"empty":                         {""},
		"a quote":                       {`orders"`},
		"a product scope in other case": {"PD_AdminWebApi"},
		"twice":                         {"orders.read", "orders.read"},
	} {
		if err := cfg(own, scope.AdminWebAPI).Validate(); err == nil || !strings.Contains(err.Error(), "scopes[") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
