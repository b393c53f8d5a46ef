package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// BenchmarkCacheAtCapacity measures a cache miss when the verified-token
// cache is full (the validation plus an insert that evicts the oldest
// entry) next to a cold validation of the same token with the cache off.
// Each iteration validates one token both ways, interleaved, and reports
// full-miss-ns/op, cold-ns/op and their ratio (target: at most 1.1).
//
// The tokens are capacity+1 distinct ES256 tokens taken in a cycle: with
// the oldest entry evicted first, each one has just left the cache when
// its turn comes, so every validation is a miss on a full cache.
func BenchmarkCacheAtCapacity(b *testing.B) {
	for _, capacity := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dk", capacity/1000), func(b *testing.B) {
			k := jwktest.NewKey(b, "ES256")
			j := jwktest.NewJWKS(b, k)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			newValidator := func(size int) *accesstoken.Validator {
				v, err := accesstoken.New(ctx, accesstoken.Config{
					Issuer: j.Issuer(), Audience: []string{j.Issuer() + "/resources"},
					CacheSize: size, CacheMaxAge: time.Hour,
				})
				if err != nil {
					b.Fatal(err)
				}
				return v
			}
			full, cold := newValidator(capacity), newValidator(-1)
			tokens := signMany(b, k, j.Issuer(), capacity+1)
			for _, tok := range tokens[:capacity] { // fill the cache
				if _, err := full.Validate(ctx, tok, accesstoken.Presentation{}); err != nil {
					b.Fatal(err)
				}
			}
			var miss, plain time.Duration
			i := capacity
			b.ResetTimer()
			for b.Loop() {
				tok := tokens[i%len(tokens)]
				i++
				t0 := time.Now()
				_, err1 := full.Validate(ctx, tok, accesstoken.Presentation{})
				t1 := time.Now()
				_, err2 := cold.Validate(ctx, tok, accesstoken.Presentation{})
				t2 := time.Now()
				if err1 != nil || err2 != nil {
					b.Fatal(err1, err2)
				}
				miss += t1.Sub(t0)
				plain += t2.Sub(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(miss.Nanoseconds())/n, "full-miss-ns/op")
			b.ReportMetric(float64(plain.Nanoseconds())/n, "cold-ns/op")
			b.ReportMetric(float64(miss)/float64(plain), "miss/cold")
		})
	}
}

// signMany signs n distinct tokens for issuer with k, on every core.
func signMany(b *testing.B, k *keys.Key, issuer string, n int) []string {
	tokens := make([]string, n)
	claims := jwktest.Claims(issuer, scope.AdminWebAPI, 24*time.Hour)
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += workers {
				t := jwt.NewWithClaims(jwt.GetSigningMethod(k.Alg), jwt.MapClaims(jwktest.With(claims, "jti", fmt.Sprintf("%022d", i))))
				t.Header["kid"], t.Header["typ"] = k.KID, "at+jwt"
				tokens[i], errs[w] = t.SignedString(k.Private)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return tokens
}
