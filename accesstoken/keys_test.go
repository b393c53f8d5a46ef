package accesstoken_test

import (
	"context"
	"crypto"
	"errors"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

// unversioned is a KeySource without KeysVersion: the validator cannot
// follow its key removals, so it must not cache.
type unversioned struct{ keys *countingKeys }

func (u unversioned) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	return u.keys.VerificationKeys(ctx, kid, alg)
}

// ctxKeys records the context it is asked with.
type ctxKeys struct {
	*countingKeys
	got context.Context
}

func (c *ctxKeys) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	c.got = ctx
	return c.countingKeys.VerificationKeys(ctx, kid, alg)
}

func TestKeySource(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))

	t.Run("an unversioned source turns the cache off", func(t *testing.T) {
		src := unversioned{newCountingKeys(k)}
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src})
		for range 5 {
			if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
				t.Fatal(err)
			}
		}
		if n := src.keys.lookups.Load(); n != 5 {
			t.Fatalf("%d key lookups for 5 validations, want 5", n)
		}
	})

	t.Run("the source gets the request's context", func(t *testing.T) {
		src := &ctxKeys{countingKeys: newCountingKeys(k)}
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1})
		type key struct{}
		ctx := context.WithValue(context.Background(), key{}, "request")
		if _, err := v.Validate(ctx, tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
		if src.got == nil || src.got.Value(key{}) != "request" {
			t.Fatal("VerificationKeys did not get Validate's context")
		}
	})

	t.Run("a source's own error counts as an unknown key", func(t *testing.T) {
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: failingKeys{errors.New("database down: secret details")}})
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Fatalf("err = %v, want ErrUnknownKey", err)
		}
		v = newValidator(t, accesstoken.Config{Issuer: iss, Keys: failingKeys{accesstoken.ErrKeysUnavailable}})
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrKeysUnavailable) {
			t.Fatalf("err = %v, want ErrKeysUnavailable", err)
		}
	})
}

type failingKeys struct{ err error }

func (f failingKeys) VerificationKeys(context.Context, string, string) ([]crypto.PublicKey, error) {
	return nil, f.err
}
