// Package tokenstoretest checks that a tokenstore.Store keeps the rules of
// package tokenstore, for the stores of this module and any other: call
// Run from a test with a function that makes an empty store.
package tokenstoretest

import (
	"context"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/idsauth/idsauth/tokenstore"
)

// Run checks the rules of tokenstore.Store on stores newStore makes: a
// grant is found, as it was put (its Epoch too), until its exp; only its
// own client revokes it; a revoked or unknown grant is not found; and,
// for a store that is a tokenstore.Epochs, that an epoch is advanced only
// from the one recorded. The grants expire
// a minute after the wall clock's now, so a store that expires them on
// its own clock (as Redis does) sees them live.
func Run(t *testing.T, newStore func(t *testing.T) tokenstore.Store) {
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	grant := tokenstore.Grant{
		ClientID:  "reporting",
		Scopes:    []string{"pd_AdminWebApi", "pd_ConnectWebApi"},
		Audience:  []string{"https://host/ids/resources"},
		IssuedAt:  now,
		ExpiresAt: now.Add(time.Minute),
		ID:        "0123456789abcdef0123456789abcdef",
		JKT:       "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs",
		X5T:       "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2",
		Epoch:     1<<53 - 1,
	}
	t.Run("put and get", func(t *testing.T) {
		s := newStore(t)
		k := newKey(t)
		if err := s.Put(ctx, k, grant); err != nil {
			t.Fatal(err)
		}
		g, ok, err := s.Get(ctx, k, now)
		if err != nil || !ok {
			t.Fatalf("Get: %v %v", ok, err)
		}
		if g.ClientID != grant.ClientID || g.ID != grant.ID || g.JKT != grant.JKT || g.X5T != grant.X5T || g.Epoch != grant.Epoch || !g.IssuedAt.Equal(grant.IssuedAt) || !g.ExpiresAt.Equal(grant.ExpiresAt) ||
			!slices.Equal(g.Scopes, grant.Scopes) || !slices.Equal(g.Audience, grant.Audience) {
			t.Fatalf("got %+v, put %+v", g, grant)
		}
		if _, ok, _ := s.Get(ctx, newKey(t), now); ok {
			t.Fatal("an unknown key was found")
		}
		if _, ok, _ := s.Get(ctx, k, grant.ExpiresAt); ok {
			t.Fatal("found at its exp")
		}
	})
	t.Run("revoke", func(t *testing.T) {
		s := newStore(t)
		k := newKey(t)
		if err := s.Put(ctx, k, grant); err != nil {
			t.Fatal(err)
		}
		if revoked, err := s.Revoke(ctx, k, "someone-else"); err != nil || revoked {
			t.Fatalf("another client revoked it: %v %v", revoked, err)
		}
		if _, ok, _ := s.Get(ctx, k, now); !ok {
			t.Fatal("another client's revocation forgot it")
		}
		if revoked, err := s.Revoke(ctx, k, grant.ClientID); err != nil || !revoked {
			t.Fatalf("its client could not revoke it: %v %v", revoked, err)
		}
		if _, ok, _ := s.Get(ctx, k, now); ok {
			t.Fatal("found after its revocation")
		}
		if revoked, err := s.Revoke(ctx, k, grant.ClientID); err != nil || revoked {
			t.Fatalf("revoked twice: %v %v", revoked, err)
		}
		if revoked, err := s.Revoke(ctx, newKey(t), grant.ClientID); err != nil || revoked {
			t.Fatalf("an unknown key revoked: %v %v", revoked, err)
		}
	})
	t.Run("epochs", func(t *testing.T) {
		s, ok := newStore(t).(tokenstore.Epochs)
		if !ok {
			t.Skip("not a tokenstore.Epochs")
		}
		a, b := "reporting", "Reporting \x00\n{tag}"
		read := func() []uint64 {
			t.Helper()
			e, err := s.Epochs(ctx, []string{a, b, "never"})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		if e := read(); !slices.Equal(e, []uint64{0, 0, 0}) {
			t.Fatalf("before any: %v", e)
		}
		for _, step := range []struct {
			id       string
			from, to uint64
		}{{a, 0, 5}, {a, 0, 6}, {b, 0, 1<<53 - 1}, {a, 5, 7}, {a, 5, 8}} {
			if err := s.AdvanceEpoch(ctx, step.id, step.from, step.to); err != nil {
				t.Fatal(err)
			}
		}
		if e := read(); !slices.Equal(e, []uint64{7, 1<<53 - 1, 0}) {
			t.Fatalf("advanced only from the epoch recorded: %v, want [7 %d 0]", e, uint64(1<<53-1))
		}
	})
}

func newKey(t *testing.T) tokenstore.Key {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return tokenstore.KeyOf(string(b[:]))
}
