package middleware_test

import (
	"context"
	"crypto"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

// iss is the issuer of the tests' own keys (countingKeys).
const iss = "https://ids.example/ids"

// newValidator makes a validator for cfg that lives as long as the test;
// an empty Audience is what jwktest.Claims puts in aud.
func newValidator(t *testing.T, cfg accesstoken.Config) *accesstoken.Validator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if len(cfg.Audience) == 0 && !cfg.AnyAudience {
		cfg.Audience = []string{cfg.Issuer + "/resources"}
	}
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// countingKeys is a versioned key source of keys in memory that counts
// its look-ups.
type countingKeys struct {
	mu      sync.Mutex
	keys    map[string]*keys.Key
	version atomic.Uint64
	lookups atomic.Int64
}

func newCountingKeys(ks ...*keys.Key) *countingKeys {
	c := &countingKeys{keys: map[string]*keys.Key{}}
	for _, k := range ks {
		c.keys[k.KID] = k
	}
	c.version.Add(1)
	return c
}

func (c *countingKeys) VerificationKeys(_ context.Context, kid, _ string) ([]crypto.PublicKey, error) {
	c.lookups.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[kid]
	if !ok {
		return nil, accesstoken.ErrUnknownKey
	}
	return []crypto.PublicKey{k.Public()}, nil
}

func (c *countingKeys) KeysVersion() uint64 { return c.version.Load() }

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
