package tokenstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/idsauth/idsauth/tokenstore"
	"github.com/idsauth/idsauth/tokenstore/tokenstoretest"
)

var ctx = context.Background()

func newKey(t testing.TB) tokenstore.Key {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return tokenstore.KeyOf(fmt.Sprintf("%x", b))
}

func grant(client string, now time.Time, ttl time.Duration, jti int) tokenstore.Grant {
	return tokenstore.Grant{
		ClientID:  client,
		Scopes:    []string{"pd_AdminWebApi"},
		Audience:  []string{"https://host/ids/resources"},
		IssuedAt:  now,
		ExpiresAt: now.Add(ttl),
		ID:        fmt.Sprintf("%032x", jti),
	}
}

// TestMemoryKeepsTheRules runs the rules every Store keeps.
func TestMemoryKeepsTheRules(t *testing.T) {
	tokenstoretest.Run(t, func(*testing.T) tokenstore.Store { return tokenstore.NewMemory(0) })
}

// TestMemoryFullRefusesAndForgetsNothing: a full store refuses the next
// grant with ErrFull and still holds every live one; once they have
// expired, a Put drops them and fits.
func TestMemoryFullRefusesAndForgetsNothing(t *testing.T) {
	m := tokenstore.NewMemory(64 << 10)
	now := time.Unix(1_800_000_000, 0)
	var kept []tokenstore.Key
	for i := 0; ; i++ {
		k := newKey(t)
		err := m.Put(ctx, k, grant("reporting", now, time.Hour, i))
		if errors.Is(err, tokenstore.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, k)
		if i > 10000 {
			t.Fatal("64 KiB never filled")
		}
	}
	if len(kept) < 100 {
		t.Fatalf("only %d grants fit in 64 KiB", len(kept))
	}
	for _, k := range kept {
		if _, ok, _ := m.Get(ctx, k, now.Add(time.Minute)); !ok {
			t.Fatal("a full store forgot a live grant")
		}
	}
	if _, bytes := m.Stats(); bytes > 64<<10 {
		t.Fatalf("charged %d bytes, over the bound", bytes)
	}
	// An hour later every grant has expired: the next Put drops them.
	later := now.Add(time.Hour)
	if err := m.Put(ctx, newKey(t), grant("reporting", later, time.Hour, -1)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if n, _ := m.Stats(); n != 1 {
		t.Fatalf("%d grants held after all but one expired", n)
	}
}

// TestMemoryRevokedPlacesComeBack: revoking frees a grant's bytes at once
// but for its queue place, which comes back at its expiry: a revoke-and-
// issue loop cannot grow the store past its bound.
func TestMemoryRevokedPlacesComeBack(t *testing.T) {
	m := tokenstore.NewMemory(64 << 10)
	now := time.Unix(1_800_000_000, 0)
	issued := 0
	for i := range 100000 {
		k := newKey(t)
		if err := m.Put(ctx, k, grant("reporting", now, time.Hour, i)); err != nil {
			break
		}
		issued++
		m.Revoke(ctx, k, "reporting")
	}
	if issued == 100000 {
		t.Fatal("revoked grants cost nothing: the queue grows without bound")
	}
	if _, bytes := m.Stats(); bytes > 64<<10 {
		t.Fatalf("charged %d bytes", bytes)
	}
	if err := m.Put(ctx, newKey(t), grant("reporting", now.Add(time.Hour), time.Hour, 0)); err != nil {
		t.Fatalf("the places did not come back at expiry: %v", err)
	}
}

// TestMemoryChargesWhatItHolds: the bytes charged are at least the heap
// the grants take (measured after a GC), so that the bound in bytes is a
// bound on memory.
func TestMemoryChargesWhatItHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100,000 grants")
	}
	const n = 100000
	now := time.Unix(1_800_000_000, 0)
	keys := make([]tokenstore.Key, n)
	for i := range keys {
		keys[i] = newKey(t)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := tokenstore.NewMemory(1 << 30)
	scopes, aud := []string{"pd_AdminWebApi"}, []string{"https://host/ids/resources"}
	for i, k := range keys {
		g := grant("reporting", now, time.Hour, i)
		g.ID = fmt.Sprintf("%032x", i) // each grant's own string, as the issuer's
		g.Scopes, g.Audience = scopes, aud
		if err := m.Put(ctx, k, g); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int(after.HeapAlloc) - int(before.HeapAlloc)
	_, charged := m.Stats()
	t.Logf("%d grants: heap %d bytes (%d each), charged %d (%d each)", n, held, held/n, charged, charged/n)
	if held > charged {
		t.Fatalf("the grants take %d bytes of heap but are charged %d", held, charged)
	}
	runtime.KeepAlive(m)
}

// BenchmarkMemory: Put and Get cost the same at 10,000 and at 1,000,000
// live grants (go test -bench Memory ./tokenstore).
func BenchmarkMemory(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	for _, live := range []int{10_000, 1_000_000} {
		m := tokenstore.NewMemory(1 << 30)
		keys := make([]tokenstore.Key, live)
		for i := range keys {
			keys[i] = newKey(b)
			if err := m.Put(ctx, keys[i], grant("reporting", now, time.Hour, i)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("Get/%d", live), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, ok, _ := m.Get(ctx, keys[i%live], now); !ok {
					b.Fatal("not found")
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("PutRevoke/%d", live), func(b *testing.B) {
			k := newKey(b)
			g := grant("reporting", now, time.Hour, 0)
			for b.Loop() {
				if err := m.Put(ctx, k, g); err != nil {
					b.Fatal(err)
				}
				m.Revoke(ctx, k, "reporting")
			}
		})
	}
}
