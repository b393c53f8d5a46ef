package tokenstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
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
	tokenstoretest.Run(t, func(*testing.T) tokenstore.Store { return &tokenstore.Memory{} })
}

// TestMemoryFullRefusesAndForgetsNothing: a client that holds a quarter
// of the bytes is refused (ErrClientFull) while the others still get in;
// a full store refuses every grant with ErrFull and still holds every live
// one; once they have expired, a Put drops them and fits.
func TestMemoryFullRefusesAndForgetsNothing(t *testing.T) {
	m := &tokenstore.Memory{MaxBytes: 64 << 10}
	now := time.Unix(1_800_000_000, 0)
	var kept []tokenstore.Key
	fill := func(client string) error {
		for i := 0; i < 10000; i++ {
			k := newKey(t)
			if err := m.Put(ctx, k, grant(client, now, time.Hour, i)); err != nil {
				return err
			}
			kept = append(kept, k)
		}
		t.Fatal("64 KiB never filled")
		return nil
	}
	if err := fill("greedy"); !errors.Is(err, tokenstore.ErrClientFull) || !errors.Is(err, tokenstore.ErrFull) {
		t.Fatalf("one client alone: %v, want ErrClientFull", err)
	}
	if _, bytes := m.Stats(); bytes > 16<<10 || bytes < 15<<10 {
		t.Fatalf("one client holds %d bytes, want about a quarter of 64 KiB", bytes)
	}
	// The other clients fill the rest, a quarter at most each, until the
	// store itself is full.
	full := false
	for c := 0; c < 10 && !full; c++ {
		err := fill(fmt.Sprint("client-", c))
		switch {
		case errors.Is(err, tokenstore.ErrClientFull):
		case errors.Is(err, tokenstore.ErrFull):
			full = true
		default:
			t.Fatalf("client %d: %v", c, err)
		}
	}
	if !full {
		t.Fatal("ten clients never filled the store")
	}
	if _, bytes := m.Stats(); bytes < 60<<10 {
		t.Fatalf("full at %d bytes of 64 KiB", bytes)
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
	if err := m.Put(ctx, newKey(t), grant("greedy", later, time.Hour, -1)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if n, _ := m.Stats(); n != 1 {
		t.Fatalf("%d grants held after all but one expired", n)
	}
}

// TestMemoryRevokeFreesAtOnce: revoking gives back a grant's bytes, its
// queue place included, at once: an issue-and-revoke loop never fills
// the store.
func TestMemoryRevokeFreesAtOnce(t *testing.T) {
	m := &tokenstore.Memory{MaxBytes: 64 << 10}
	now := time.Unix(1_800_000_000, 0)
	for i := range 100000 {
		k := newKey(t)
		if err := m.Put(ctx, k, grant("reporting", now, time.Hour, i)); err != nil {
			t.Fatalf("after %d issue-and-revoke rounds: %v", i, err)
		}
		if revoked, _ := m.Revoke(ctx, k, "reporting"); !revoked {
			t.Fatal("not revoked")
		}
	}
	if n, bytes := m.Stats(); n != 0 || bytes != 0 {
		t.Fatalf("%d grants, %d bytes left after revoking every one", n, bytes)
	}
}

// TestMemoryFailedReplaceChargesNothing: a Put under a key already held
// that does not fit changes nothing, and charges stay the real ones.
func TestMemoryFailedReplaceChargesNothing(t *testing.T) {
	m := &tokenstore.Memory{MaxBytes: 4000}
	now := time.Unix(1_800_000_000, 0)
	k := newKey(t)
	if err := m.Put(ctx, k, grant("c", now, time.Hour, 1)); err != nil {
		t.Fatal(err)
	}
	_, before := m.Stats()
	huge := grant("c", now, time.Hour, 2)
	huge.Scopes = []string{strings.Repeat("s", 5000)}
	for range 10 {
		if err := m.Put(ctx, k, huge); !errors.Is(err, tokenstore.ErrFull) {
			t.Fatalf("err = %v", err)
		}
	}
	if g, ok, _ := m.Get(ctx, k, now); !ok || g.ID != grant("c", now, time.Hour, 1).ID {
		t.Fatal("a refused replace changed the grant")
	}
	if n, after := m.Stats(); n != 1 || after != before {
		t.Fatalf("%d grants, %d bytes charged, want 1 and %d", n, after, before)
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
	m := &tokenstore.Memory{MaxBytes: 1 << 30}
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
	// No client holds more than a quarter of the bytes: a million grants
	// (about 313 MB charged) are spread over eight clients, each within
	// its share of the 1 GiB store.
	var clients [8]string
	for i := range clients {
		clients[i] = fmt.Sprint("reporting-", i)
	}
	for _, live := range []int{10_000, 1_000_000} {
		m := &tokenstore.Memory{MaxBytes: 1 << 30}
		keys := make([]tokenstore.Key, live)
		for i := range keys {
			keys[i] = newKey(b)
			if err := m.Put(ctx, keys[i], grant(clients[i%len(clients)], now, time.Hour, i)); err != nil {
				b.Fatalf("grant %d of %d: %v", i, live, err)
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
			g := grant(clients[0], now, time.Hour, 0)
			for b.Loop() {
				if err := m.Put(ctx, k, g); err != nil {
					b.Fatal(err)
				}
				m.Revoke(ctx, k, clients[0])
			}
		})
	}
}
