package dpop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/keys"
)

// TestKeysReadOncePerKey: a key is read and hashed until a proof by it
// verifies, then found by the very JSON of its jwk, with the same key
// and thumbprint; the same key written otherwise is read again; a slot
// holds the last key that verified in it; a JWK past the size bound is
// never kept.
func TestKeysReadOncePerKey(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	j, _ := keys.PublicJWKOf(k.Public())
	jwk, _ := json.Marshal(j)
	cache := NewKeys()
	pub, jkt, known, err := cache.read(jwk)
	if err != nil || known {
		t.Fatalf("first read: %v %v", known, err)
	}
	if _, _, known, _ := cache.read(jwk); known {
		t.Fatal("known before a proof by it verified")
	}
	cache.remember(jwk, pub, jkt)
	pub2, jkt2, known, err := cache.read(jwk)
	if err != nil || !known || jkt2 != jkt || !pub2.(*ecdsa.PublicKey).Equal(pub) {
		t.Fatalf("after: %v %v %q", known, err, jkt2)
	}
	reordered := []byte(`{"y":"` + j.Y + `","x":"` + j.X + `","kty":"EC","crv":"P-256"}`)
	if _, jkt3, known, err := cache.read(reordered); known || err != nil || jkt3 != jkt {
		t.Fatalf("the same key written otherwise: %v %v %q", known, err, jkt3)
	}
	if n := testingAllocs(func() { _, _, _, _ = cache.read(jwk) }); n != 0 {
		t.Errorf("a known key costs %v allocations", n)
	}
	big := append(append([]byte(nil), jwk[:len(jwk)-1]...), []byte(`,"pad":"`+strings.Repeat("p", maxKnownJWK)+`"}`)...)
	cache.remember(big, pub, jkt)
	if e := cache.slot(big).Load(); e != nil && e.jwk == string(big) {
		t.Fatal("a JWK past the bound was kept")
	}
}

func testingAllocs(f func()) float64 { return testing.AllocsPerRun(100, f) }
