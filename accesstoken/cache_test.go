package accesstoken_test

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// countingKeys is an in-process key source that counts key lookups, that
// is, full validations.
type countingKeys struct {
	mu      sync.Mutex
	keys    map[string]*keys.Key
	version atomic.Uint64
	lookups atomic.Int64
}

func newCountingKeys(ks ...*keys.Key) *countingKeys {
	c := &countingKeys{}
	c.set(ks...)
	return c
}

func (c *countingKeys) set(ks ...*keys.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = map[string]*keys.Key{}
	for _, k := range ks {
		c.keys[k.KID] = k
	}
	c.version.Add(1)
}

func (c *countingKeys) VerificationKeys(_ context.Context, kid, _ string) ([]crypto.PublicKey, error) {
	c.lookups.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[kid]
	if !ok {
		return nil, accesstoken.ErrUnknownKey
	}
	return []crypto.PublicKey{k.Public()}, nil
}

func (c *countingKeys) KeysVersion() uint64 { return c.version.Load() }

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.t.Load()) }
func (c *clock) set(t time.Time)     { c.t.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) { c.t.Add(int64(d)) }
func newClock(t time.Time) *clock    { c := &clock{}; c.set(t); return c }

const iss = "https://ids.example/ids"

func TestCacheSkipsRepeatedValidation(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	for range 100 {
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.lookups.Load(); n != 1 {
		t.Fatalf("%d full validations for one token seen 100 times, want 1", n)
	}
	off := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: -1})
	before := src.lookups.Load()
	for range 10 {
		if _, err := off.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.lookups.Load() - before; n != 10 {
		t.Fatalf("cache off: %d full validations of 10, want 10", n)
	}
}

func TestCachedTokenLeavesAtItsExp(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	start := time.Now().Truncate(time.Second)
	clk := newClock(start)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), Now: clk.now, CacheMaxAge: time.Hour})
	exp := start.Add(time.Minute)
	tok := jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "iat", start.Unix(), "nbf", start.Unix(), "exp", exp.Unix()))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
	clk.set(exp.Add(29 * time.Second)) // within the 30 s leeway
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("inside the leeway: %v", err)
	}
	clk.set(exp.Add(31 * time.Second))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrExpired) {
		t.Fatalf("past exp+leeway: %v, want ErrExpired", err)
	}
}

func TestCacheMaxAge(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	src := newCountingKeys(k)
	clk := newClock(time.Now())
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, Now: clk.now, CacheMaxAge: time.Minute})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	for _, step := range []time.Duration{0, 30 * time.Second, 31 * time.Second} {
		clk.add(step)
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.lookups.Load(); n != 2 {
		t.Fatalf("%d full validations, want 2 (the entry ages out after a minute)", n)
	}
}

func TestCacheNeverAcceptsAnotherToken(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 0x01 // one bit of one byte
		if _, err := v.Validate(context.Background(), string(b), accesstoken.Presentation{}); err == nil {
			t.Fatalf("a token differing at byte %d was accepted", i)
		}
	}
	if _, err := v.Validate(context.Background(), tok+"A", accesstoken.Presentation{}); err == nil {
		t.Fatal("a token with one more byte was accepted")
	}
}

func TestCacheDropsTokensOfARemovedKey(t *testing.T) {
	t.Run("in-process source", func(t *testing.T) {
		k1, k2 := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
		src := newCountingKeys(k1, k2)
		v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src})
		tok := jwktest.Sign(t, k1, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
		src.set(k2)
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Fatalf("after the key was removed: %v", err)
		}
	})
	t.Run("JWKS, within one refresh", func(t *testing.T) {
		k1, k2 := jwktest.NewKey(t, "RS256"), jwktest.NewKey(t, "RS256")
		jwks := jwktest.NewJWKS(t, k1, k2)
		v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: jwks.JWKSURL(), RefreshInterval: 20 * time.Millisecond})})
		tok := jwktest.Sign(t, k1, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
		jwks.SetKeys(k2)
		for hits := jwks.Hits(); jwks.Hits() < hits+2; {
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Fatalf("after the JWKS dropped the key: %v", err)
		}
	})
}

func TestCacheConcurrentHits(t *testing.T) {
	k := jwktest.NewKey(t, "EdDSA")
	src := newCountingKeys(k)
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: src, CacheSize: 64})
	toks := make([]string, 200)
	for i := range toks {
		toks[i] = jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour), "jti", fmt.Sprint(i)))
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				tok := toks[(i*7+g)%len(toks)]
				if i%3 == 0 {
					tok = toks[0] // a hot token
				}
				c, err := v.Validate(context.Background(), tok, accesstoken.Presentation{})
				if err != nil || c.ClientID != "test-client" {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d validations failed", failed.Load())
	}
}

// TestCacheHitAllocatesNothing: the warm path stays allocation-free.
func TestCacheHitAllocatesNothing(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)})
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	ctx := context.Background()
	if _, err := v.Validate(ctx, tok, accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = v.Validate(ctx, tok, accesstoken.Presentation{}) }); n != 0 {
		t.Fatalf("%v allocations per cached validation, want 0", n)
	}
}
