package tokenstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idsauth/idsauth/tokenstore"
)

// A grant is kept under its token's SHA-256, found until it expires or its
// own client revokes it; no client holds more than a quarter of the bytes.
func ExampleMemory() {
	ctx := context.Background()
	m := &tokenstore.Memory{MaxBytes: 4 << 10}
	now := time.Unix(1_800_000_000, 0)
	k := tokenstore.KeyOf("an opaque token")
	_ = m.Put(ctx, k, tokenstore.Grant{ClientID: "reporting", Scopes: []string{"pd_AdminWebApi"}, IssuedAt: now, ExpiresAt: now.Add(time.Hour), ID: "j1"})

	g, ok, _ := m.Get(ctx, k, now)
	fmt.Println(g.ClientID, g.Scopes, ok)
	revoked, _ := m.Revoke(ctx, k, "someone-else")
	fmt.Println("another client revokes it:", revoked)
	revoked, _ = m.Revoke(ctx, k, "reporting")
	_, ok, _ = m.Get(ctx, k, now)
	fmt.Println("its client revokes it:", revoked, ok)

	var err error
	for i := 0; err == nil; i++ {
		err = m.Put(ctx, tokenstore.KeyOf(fmt.Sprint("t", i)), tokenstore.Grant{ClientID: "greedy", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	}
	fmt.Println(errors.Is(err, tokenstore.ErrClientFull), errors.Is(err, tokenstore.ErrFull))
	// Output:
	// reporting [pd_AdminWebApi] true
	// another client revokes it: false
	// its client revokes it: true false
	// true true
}
