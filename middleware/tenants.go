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

// NewTenants returns a store holding tenants, each with one or more token
// hashes (several while a token is being rotated).
func NewTenants(tenants map[string][]secret.Hash) *Tenants {
	t := &Tenants{}
	t.Replace(tenants)
	return t
}

// Replace swaps the whole content of the store for tenants.
func (t *Tenants) Replace(tenants map[string][]secret.Hash) {
	cp := make(map[string][]secret.Hash, len(tenants))
	subjects := make([][]secret.Hash, 0, len(tenants))
	for k, v := range tenants {
		cp[k] = append([]secret.Hash(nil), v...)
		subjects = append(subjects, cp[k])
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, v := range t.verifiers {
		v.Prime(subjects...)
	}
	t.m.Store(&cp)
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
