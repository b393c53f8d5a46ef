package secret_test

import (
	"errors"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/idsauth/idsauth/secret"
)

// TestEmptySecretHashIsRefused: a hash of the empty secret, of every kind,
// is refused by Parse (and so by every configuration that parses hashes),
// while a hash of any other secret is not.
func TestEmptySecretHashIsRefused(t *testing.T) {
	b, err := bcrypt.GenerateFromPassword([]byte(""), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	sha512 := "sha512:z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
	for _, h := range []string{secret.HashSHA256("").String(), sha512, "bcrypt:" + string(b)} {
		if _, err := secret.Parse(h); !errors.Is(err, secret.ErrEmptySecret) {
			t.Errorf("Parse(a hash of the empty secret, %.12s...) = %v, want ErrEmptySecret", h, err)
		}
	}
	for _, s := range []string{" ", "a", "\x00"} {
		if _, err := secret.Parse(secret.HashSHA256(s).String()); err != nil {
			t.Errorf("Parse(sha256 of %q) = %v", s, err)
		}
	}
}
