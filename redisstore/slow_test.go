package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/internal/redistest"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/tokenstore"
)

// TestStoresRecoverBehindASlowRedis: behind a proxy that delays each
// round trip by 80 ms (under the stores' 150 ms bound), a store that
// starts with no connection answers within a few calls, though a new
// connection takes several round trips (HELLO, CLIENT SETINFO, then
// EVALSHA and EVAL on NOSCRIPT); after a 2 s spike, when every call fails,
// it answers again. Calls are counted, never timed: each phase polls with
// a bounded deadline for a run of successes in a row.
func TestStoresRecoverBehindASlowRedis(t *testing.T) {
	srv := startRedis(t)
	for _, c := range []struct {
		name string
		// op makes one call of the store and reports whether it answered.
		op func(rdb *redis.Client) func(i int) error
	}{
		{"token store: Put then Get", func(rdb *redis.Client) func(int) error {
			ts := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "slow:ref:"})
			return func(i int) error {
				ctx := context.Background()
				k := tokenstore.KeyOf(fmt.Sprintf("token-%d", i))
				now := time.Now()
				if err := ts.Put(ctx, k, tokenstore.Grant{ClientID: "c", Scopes: []string{scope.AdminWebAPI}, IssuedAt: now, ExpiresAt: now.Add(time.Minute), ID: "j"}); err != nil {
					return err
				}
				if _, ok, err := ts.Get(ctx, k, now); err != nil || !ok {
					return fmt.Errorf("Get: %v, found %v", err, ok)
				}
				return nil
			}
		}},
		{"limiter store (closed): Reserve", func(rdb *redis.Client) func(int) error {
			st := redisstore.New(rdb, redisstore.Options{Prefix: "slow:lim:", OnUnavailable: redisstore.FailClosed, RetryInterval: 50 * time.Millisecond})
			return func(i int) error {
				res, err := st.Reserve(context.Background(), limit.Request{Subject: "c", Address: fmt.Sprintf("203.0.113.%d", i%200),
					Budget: limit.Budget{PerSubject: 1 << 20, PerAddress: 1 << 20, Window: time.Minute, Trust: 24 * time.Hour}})
				if err != nil {
					return err
				}
				res.Succeeded()
				return nil
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy := redistest.StartProxy(t, srv.addr)
			proxy.SetDelay(80 * time.Millisecond)
			rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true})
			t.Cleanup(func() { rdb.Close() })
			op := c.op(rdb)
			i := 0
			// recovers polls op until it answers 5 times in a row, and
			// fails the test when it has not within the deadline.
			recovers := func(phase string) {
				t.Helper()
				failed, inRow := 0, 0
				var last error
				for deadline := time.Now().Add(30 * time.Second); inRow < 5; i++ {
					if time.Now().After(deadline) {
						t.Fatalf("%s: %d calls failed and never 5 answered in a row; the last error: %v", phase, failed, last)
					}
					if last = op(i); last != nil {
						failed++
						inRow = 0
						time.Sleep(20 * time.Millisecond)
						continue
					}
					inRow++
				}
				t.Logf("%s: %d calls failed before 5 answered in a row", phase, failed)
			}
			recovers("starting at 80 ms a round trip")

			proxy.SetDelay(2 * time.Second)
			failed := 0
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); i++ {
				if op(i) != nil {
					failed++
				}
			}
			if failed == 0 {
				t.Fatal("no call failed during the spike: the proxy delays nothing")
			}
			proxy.SetDelay(80 * time.Millisecond)
			recovers("after a 2 s spike, back at 80 ms")
		})
	}
}
