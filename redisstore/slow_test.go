package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strings"
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
// a bounded deadline for a run of successes in a row. On a cluster, each
// master is behind a proxy of its own, which the cluster announces
// (cluster-announce-port) as the master's address: the client's first
// call also loads the slots (CLUSTER SLOTS) and connects to each master
// through its proxy, and a reservation is two calls.
func TestStoresRecoverBehindASlowRedis(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testStoresRecoverBehindASlowRedis(t, k) })
	}
}

func testStoresRecoverBehindASlowRedis(t *testing.T, kind kind) {
	srv := kind.start(t)
	var proxies []*redistest.Proxy
	for _, n := range srv.nodes {
		proxies = append(proxies, redistest.StartProxy(t, n.Addr))
	}
	if kind.cluster {
		announce(t, srv, proxies)
	}
	for _, c := range []struct {
		name string
		// op makes one call of the store and reports whether it answered.
		op func(rdb redis.UniversalClient) func(i int) error
	}{
		{"token store: Put then Get", func(rdb redis.UniversalClient) func(int) error {
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
		{"limiter store (closed): Reserve", func(rdb redis.UniversalClient) func(int) error {
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
			setDelay := func(d time.Duration) {
				for _, p := range proxies {
					p.SetDelay(d)
				}
			}
			setDelay(80 * time.Millisecond)
			o := redis.UniversalOptions{Addrs: []string{proxies[0].Addr}, ContextTimeoutEnabled: true}
			var rdb redis.UniversalClient = redis.NewClient(o.Simple())
			if kind.cluster {
				rdb = redis.NewClusterClient(o.Cluster())
			}
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

			setDelay(2 * time.Second)
			failed := 0
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); i++ {
				if op(i) != nil {
					failed++
				}
			}
			if failed == 0 {
				t.Fatal("no call failed during the spike: the proxy delays nothing")
			}
			setDelay(80 * time.Millisecond)
			recovers("after a 2 s spike, back at 80 ms")
		})
	}
}

// announce makes each master of srv's cluster announce its proxy's port
// as its own, so that a client that asks the cluster for its slots
// connects through the proxies; and waits, counting, until the first
// master knows them all.
func announce(t *testing.T, srv *redisServer, proxies []*redistest.Proxy) {
	t.Helper()
	var ports []string
	for i, n := range srv.nodes {
		_, port, _ := net.SplitHostPort(proxies[i].Addr)
		if _, err := n.Do("CONFIG", "SET", "cluster-announce-port", port); err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ":"+port+"@")
	}
	for i := 0; ; i++ {
		nodes, err := srv.nodes[0].Do("CLUSTER", "NODES")
		if err != nil {
			t.Fatal(err)
		}
		known := 0
		for _, p := range ports {
			if strings.Contains(nodes, p) {
				known++
			}
		}
		if known == len(ports) {
			return
		}
		if i == 400 {
			t.Fatalf("the masters do not announce their proxies' ports %q:\n%s", ports, nodes)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
