package middleware

import (
	"sync"
	"sync/atomic"

	"github.com/idsauth/idsauth/secret"
)

// TenantStore gives the token hashes of a SCIM tenant. An unknown tenant
// has none. *Tenants is the implementation; a service with tenants in a
// database writes its own.
type TenantStore interface {
	TenantTokens(tenant string) []secret.Hash
}

// Tenants is a TenantStore held in memory. Its whole content is swapped
// at once by Replace, so a configuration reload never shows a reader half
// of it. It is safe for concurrent use; the zero value has no tenants.
//
// SCIMAuth primes its Verifier with a Tenants' hashes (see
// secret.Verifier.Prime), at start and on every Replace, so that the
// failure floor covers the costliest tenant from the first request.
type Tenants struct {
	m atomic.Pointer[map[string][]secret.Hash]

	mu        sync.Mutex // serializes Replace and attach
	verifiers []*secret.Verifier
}

// NewTenants returns a store holding tenants, as a configuration file
// writes them: it checks them and parses their token hashes (several
// while a token is being rotated), and returns a *TenantConfigError naming
// the first wrong field.
func NewTenants(tenants []TenantConfig) (*Tenants, error) {
	t := &Tenants{}
	if err := t.Replace(tenants); err != nil {
		return nil, err
	}
	return t, nil
}

// Replace checks tenants as NewTenants does and swaps the whole content of
// the store for them; on error it changes nothing. (To check a list
// without applying it, make a store of it with NewTenants.)
func (t *Tenants) Replace(tenants []TenantConfig) error {
	parsed, err := parseTenants(tenants)
	if err != nil {
		return err
	}
	subjects := make([][]secret.Hash, 0, len(parsed))
	for _, v := range parsed {
		subjects = append(subjects, v)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, v := range t.verifiers {
		v.Prime(subjects...)
	}
	t.m.Store(&parsed)
	return nil
}

// attach primes v with the tenants' hashes now and on every Replace.
func (t *Tenants) attach(v *secret.Verifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.m.Load(); m != nil {
		for _, hashes := range *m {
			v.Prime(hashes)
		}
	}
	t.verifiers = append(t.verifiers, v)
}

// TenantTokens returns the token hashes of tenant.
func (t *Tenants) TenantTokens(tenant string) []secret.Hash {
	m := t.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[tenant]
}
