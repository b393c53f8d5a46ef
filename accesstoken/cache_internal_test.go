package accesstoken

import (
	"context"
	"crypto"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// versionedKeys is a key source whose version a test sets.
type versionedKeys struct{ version atomic.Uint64 }

func (*versionedKeys) VerificationKeys(context.Context, string, string) ([]crypto.PublicKey, error) {
	return nil, ErrUnknownKey
}
func (s *versionedKeys) KeysVersion() uint64 { return s.version.Load() }

// issuerAt returns an issuer whose keys are at version 1, and those keys.
func issuerAt() (*trustedIssuer, *versionedKeys) {
	src := &versionedKeys{}
	src.version.Store(1)
	return &trustedIssuer{issuer: "https://ids.example/ids", keys: src, versioned: src}, src
}

func TestTokenCacheBound(t *testing.T) {
	const size = 100
	c := newTokenCache(size, time.Hour)
	now := time.Now()
	claims := &Claims{}
	from, src := issuerAt()
	for i := range 100_000 {
		c.put(fmt.Sprint("token-", i), claims, now, now.Add(time.Hour), from.versioned, 1)
	}
	// Each of the 16 shards holds at most ceil(100/16) = 7.
	if n := c.len(); n > 16*7 || n < size/2 {
		t.Fatalf("%d entries after a flood, bound %d", n, 16*7)
	}
	// The configured size is the real capacity, however the tokens
	// spread over the shards.
	if n := c.len(); n != size {
		t.Fatalf("%d entries after a flood, want exactly %d", n, size)
	}
	// Expired entries go first: fill every shard (16 each) with entries
	// that expire, then add 16 live ones; none may be evicted.
	c = newTokenCache(16*16, time.Hour)
	for i := range 16 * 16 * 8 {
		c.put(fmt.Sprint("old-", i), claims, now, now.Add(time.Second), from.versioned, 1)
	}
	later := now.Add(time.Minute)
	for i := range 16 {
		c.put(fmt.Sprint("new-", i), claims, later, later.Add(time.Hour), from.versioned, 1)
	}
	for i := range 16 {
		if _, ok := c.get(fmt.Sprint("new-", i), later); !ok {
			t.Fatalf("a live entry was evicted while expired ones remained")
		}
	}
	src.version.Store(2)
	if _, ok := c.get("new-1", later); ok {
		t.Fatal("hit under another key set version")
	}
	n := c.len()
	c.put(string(make([]byte, maxCachedToken+1)), claims, now, later, from.versioned, 1)
	if c.len() != n {
		t.Fatal("an oversized token was cached")
	}
}

// TestTokenCacheCapacityAndOrder: a cache of 10000 holds 10000 tokens,
// and once full each insert evicts exactly the oldest entry.
func TestTokenCacheCapacityAndOrder(t *testing.T) {
	const size = 10000
	c := newTokenCache(size, time.Hour)
	now := time.Now()
	claims := &Claims{}
	from, src := issuerAt()
	for i := range size {
		c.put(fmt.Sprint("token-", i), claims, now, now.Add(time.Hour), from.versioned, 1)
	}
	if n := c.len(); n != size {
		t.Fatalf("%d of %d tokens kept", n, size)
	}
	for i := range 3 * size {
		c.put(fmt.Sprint("more-", i), claims, now, now.Add(time.Hour), from.versioned, 1)
		if _, ok := c.get(fmt.Sprint("more-", i), now); !ok {
			t.Fatalf("the newest entry %d is missing", i)
		}
		oldest := fmt.Sprint("token-", i)
		if i >= size {
			oldest = fmt.Sprint("more-", i-size)
		}
		if _, ok := c.get(oldest, now); ok {
			t.Fatalf("insert %d did not evict the oldest entry", i)
		}
		if i+1 < size {
			if _, ok := c.get(fmt.Sprint("token-", i+1), now); !ok {
				t.Fatalf("insert %d evicted more than the oldest entry", i)
			}
		}
	}
	if n := c.len(); n != size {
		t.Fatalf("%d entries, want %d", n, size)
	}
	// A token put again, under new keys, keeps its one slot.
	src.version.Store(2)
	c.put("more-29999", claims, now, now.Add(time.Hour), from.versioned, 2)
	if n := c.len(); n != size || len(c.ring) != size {
		t.Fatalf("%d entries, ring %d", n, len(c.ring))
	}
	if _, ok := c.get("more-29999", now); !ok {
		t.Fatal("the entry was not updated")
	}
}
