package accesstoken_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// kidlessWorld is a JWKS on loopback with n ES256 keys and a validator
// of its tokens, its cache off so that every validation checks.
func kidlessWorld(tb testing.TB, n int) (*jwktest.JWKS, []*keys.Key, *accesstoken.Validator) {
	tb.Helper()
	ks := make([]*keys.Key, n)
	for i := range ks {
		ks[i] = jwktest.NewKey(tb, "ES256")
	}
	j := jwktest.NewJWKS(tb, ks...)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer: j.Issuer(), Keys: newJWKS(tb, accesstoken.JWKSConfig{URL: j.JWKSURL()}), Audience: []string{j.Issuer() + "/resources"}, CacheSize: -1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return j, ks, v
}

// TestSignatureChecksPerToken counts the signature checks of one token
// (issue 32): whatever the JWKS holds, a token costs at most two. A
// forged token without kid against 1, 10 and 100 keys of its alg costs
// one check, then none: with more than two keys that fit, it is refused
// before any (ErrAmbiguousKey, errors.Is ErrUnknownKey); a genuine token
// without kid is accepted with one key, and with two (a key rotation);
// a token with kid costs one check at 100 keys.
func TestSignatureChecksPerToken(t *testing.T) {
	for _, n := range []int{1, 2, 10, 100} {
		t.Run(fmt.Sprintf("%d keys", n), func(t *testing.T) {
			j, ks, v := kidlessWorld(t, n)
			claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
			forger := jwktest.NewKey(t, "ES256")
			checks := func(token string) (uint64, error) {
				before := accesstoken.SignatureChecks(v)
				_, err := v.Validate(context.Background(), token, accesstoken.Presentation{})
				return accesstoken.SignatureChecks(v) - before, err
			}

			got, err := checks(jwktest.Sign(t, forger, map[string]any{"kid": nil}, claims))
			switch {
			case n <= 2 && (got != uint64(n) || !errors.Is(err, accesstoken.ErrSignature)):
				t.Errorf("a forged token without kid: %d checks, %v; want %d, a bad signature", got, err, n)
			case n > 2 && (got != 0 || !errors.Is(err, accesstoken.ErrAmbiguousKey) || !errors.Is(err, accesstoken.ErrUnknownKey)):
				t.Errorf("a forged token without kid: %d checks, %v; want none, ErrAmbiguousKey", got, err)
			}

			got, err = checks(jwktest.Sign(t, ks[n-1], map[string]any{"kid": nil}, claims))
			switch {
			case n <= 2 && (err != nil || got > uint64(n)):
				t.Errorf("a genuine token without kid: %d checks, %v; want it accepted", got, err)
			case n > 2 && (got != 0 || !errors.Is(err, accesstoken.ErrAmbiguousKey)):
				t.Errorf("a genuine token without kid: %d checks, %v; want none, ErrAmbiguousKey", got, err)
			}

			if got, err = checks(jwktest.Sign(t, ks[n-1], nil, claims)); err != nil || got != 1 {
				t.Errorf("a token with kid: %d checks, %v; want 1, accepted", got, err)
			}
			if got, err = checks(jwktest.Sign(t, forger, map[string]any{"kid": ks[0].KID}, claims)); got != 1 || !errors.Is(err, accesstoken.ErrSignature) {
				t.Errorf("a forged token naming a key: %d checks, %v; want 1, a bad signature", got, err)
			}
		})
	}
}

// BenchmarkForgedTokenWithoutKid: what a forged token without kid costs
// against a JWKS of 1, 10 and 100 keys of its alg, beside a genuine token
// with kid, the cache off. sigchecks/op is the count of signature checks;
// ns/op shows the rest stays flat too.
func BenchmarkForgedTokenWithoutKid(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		j, ks, v := kidlessWorld(b, n)
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		forged := jwktest.Sign(b, jwktest.NewKey(b, "ES256"), map[string]any{"kid": nil}, claims)
		genuine := jwktest.Sign(b, ks[0], nil, claims)
		for _, c := range []struct{ name, token string }{{"forged without kid", forged}, {"genuine with kid", genuine}} {
			b.Run(fmt.Sprintf("%s/keys=%d", c.name, n), func(b *testing.B) {
				before := accesstoken.SignatureChecks(v)
				for b.Loop() {
					_, _ = v.Validate(context.Background(), c.token, accesstoken.Presentation{})
				}
				b.ReportMetric(float64(accesstoken.SignatureChecks(v)-before)/float64(b.N), "sigchecks/op")
			})
		}
	}
}

// TestKidlessLookupFollowsTheKeySet: what a token without kid is checked
// with is remembered per alg, and forgotten when the JWKS changes: after
// a fetch that brings another key, the old key's tokens without kid are
// refused and the new key's accepted, and a third key makes them all
// ambiguous.
func TestKidlessLookupFollowsTheKeySet(t *testing.T) {
	j, ks, v := kidlessWorld(t, 1)
	claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
	old, next, third := ks[0], jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
	validate := func(k *keys.Key, kid string) error {
		header := map[string]any{"kid": nil}
		if kid != "" {
			header["kid"] = kid
		}
		_, err := v.Validate(context.Background(), jwktest.Sign(t, k, header, claims), accesstoken.Presentation{})
		return err
	}
	if err := validate(old, ""); err != nil {
		t.Fatalf("the old key, no kid: %v", err)
	}
	j.SetKeys(next)
	if err := validate(next, next.KID); err != nil { // an unknown kid: the JWKS is fetched again
		t.Fatalf("the new key, its kid: %v", err)
	}
	if err := validate(old, ""); !errors.Is(err, accesstoken.ErrSignature) {
		t.Fatalf("the old key, no kid, after the change: %v", err)
	}
	if err := validate(next, ""); err != nil {
		t.Fatalf("the new key, no kid: %v", err)
	}
	j.SetKeys(old, next, third)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: j.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: j.JWKSURL()}), Audience: []string{j.Issuer() + "/resources"}, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(context.Background(), jwktest.Sign(t, next, map[string]any{"kid": nil}, claims), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAmbiguousKey) {
		t.Fatalf("three keys, no kid: %v", err)
	}
}
