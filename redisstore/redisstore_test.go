package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/limit/limittest"
	"github.com/idsauth/idsauth/redisstore"
)

// The Redis store keeps every rule of package limit, as limit.Memory does.
func TestStoreKeepsTheRules(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			rdb := k.start(t).client(t)
			n := 0
			limittest.Run(t, func(t *testing.T) limit.Store {
				n++
				return decidedByRedis(t, redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("rules%d:", n)}))
			})
		})
	}
}

// Every key has the store's prefix and one fixed length, holds no
// subject or address as text, and expires: buckets and failure marks
// within the window, trusts within the budget's Trust; all but the store's
// clocks, which have no TTL so that volatile-* policies never evict them.
// On one Redis there is one clock; on a cluster, one per hash tag, and
// every key carries a tag of 6 bytes.
func TestKeysAreFixedSizeAndExpire(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testKeysAreFixedSizeAndExpire(t, k) })
	}
}

func testKeysAreFixedSizeAndExpire(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	const prefix = "idsauth:token:"
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	budget := limit.Budget{PerSubject: 3, PerAddress: 5, Window: time.Minute, Trust: 24 * time.Hour}
	long := strings.Repeat("L", 100) // the longest client ID the issuer takes
	subjects := []string{"payroll", long, "", "acme\x00tenant"}
	addrs := []string{"203.0.113.9", "2001:db8::/64", "198.51.100.7"}
	for _, sub := range subjects {
		for i, addr := range addrs {
			res, err := store.Reserve(context.Background(), limit.Request{Subject: sub, Address: addr, Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				res.Succeeded()
			} else {
				res.Failed()
			}
		}
	}
	ctx := context.Background()
	keys := srv.keys(t, "*")
	size := redisstore.KeyBytes(len(prefix))
	clocks, tags := 1, map[string]bool{}
	if kind.cluster {
		size += len("{0123}")
		for _, k := range keys {
			tags[tag(k)] = true
		}
		clocks = len(tags)
	}
	// Buckets of 3 addresses and 4 subjects, 12 pair marks, and the
	// clocks: one, or one per tag.
	if len(keys) != 3+4+12+clocks {
		t.Fatalf("%d keys: %q", len(keys), keys)
	}
	if kind.cluster && clocks < 2 {
		t.Fatalf("%d tags for 3 addresses and 4 subjects: %q", clocks, keys)
	}
	var usage int64
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) || len(k) != size {
			t.Errorf("key %q: want the prefix and %d bytes", k, size)
		}
		if kind.cluster && len(tag(k)) != len("{0123}") {
			t.Errorf("key %q: want a hash tag of 4 hex digits", k)
		}
		for _, text := range append(subjects[:2:2], "acme", "203.0.113", "2001:db8", "198.51") {
			if strings.Contains(k, text) {
				t.Errorf("key %q holds %q", k, text)
			}
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		u, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if k[len(prefix)] == 'c' { // a clock: no TTL, so that volatile-* policies keep it
			if ttl >= 0 {
				t.Errorf("the clock %q has PTTL %v, want none", k, ttl)
			}
			if u > 256 {
				t.Errorf("a clock costs Redis %d bytes (MEMORY USAGE): the package doc says about 150", u)
			}
			continue
		}
		v, _ := rdb.Get(ctx, k).Int64()
		limit := budget.Window
		if v < 0 { // a trust
			limit = 24 * time.Hour
		}
		if ttl <= 0 || ttl > limit {
			t.Errorf("key %q (%d) has PTTL %v, want within (0, %v]", k, v, ttl, limit)
		}
		usage = max(usage, u)
	}
	t.Logf("a key of %d bytes costs Redis %d bytes (MEMORY USAGE), plus its expiry entry", size, usage)
	if usage > 128 {
		t.Errorf("MEMORY USAGE %d: the package doc says about 100 bytes a key", usage)
	}
}

// A store whose Redis does not answer: FailOpen falls back to its own
// limit.Memory with every rule intact; FailClosed refuses with
// limit.ErrUnavailable. After the first failure Redis is skipped for the
// retry interval, so a dead Redis costs one call, not one per request;
// once it answers again the store uses it again.
func TestUnreachableRedis(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testUnreachableRedis(t, k) })
	}
}

func testUnreachableRedis(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	budget := limit.Budget{PerSubject: 3, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}
	open := redisstore.New(rdb, redisstore.Options{Prefix: "open:", RetryInterval: time.Hour})
	closed := redisstore.New(rdb, redisstore.Options{Prefix: "closed:", OnUnavailable: redisstore.FailClosed, RetryInterval: time.Hour})
	srv.kill()
	granted := 0
	for range 10 {
		res, err := open.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "203.0.113.9", Budget: budget, Now: time.Now()})
		var no *limit.Refusal
		switch {
		case err == nil:
			granted++
			res.Failed()
		case !errors.As(err, &no):
			t.Fatalf("FailOpen: %v", err)
		}
	}
	if granted != 3 {
		t.Fatalf("FailOpen granted %d of 10 guesses, want the budget, 3: the fallback keeps the rules", granted)
	}
	if st := open.Stats(); st != (redisstore.Stats{Fallback: 10, Errors: 1}) {
		t.Fatalf("FailOpen stats %+v, want 10 decided by the fallback after 1 failed call", st)
	}
	for range 10 {
		res, err := closed.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "198.51.100.7", Budget: budget, Now: time.Now()})
		if res != nil || !errors.Is(err, limit.ErrUnavailable) {
			t.Fatalf("FailClosed: %v, %v", res, err)
		}
	}
	if st := closed.Stats(); st != (redisstore.Stats{Unavailable: 10, Errors: 1}) {
		t.Fatalf("FailClosed stats %+v", st)
	}
}

// A hung Redis (stopped: its port takes connections, nothing answers)
// holds a request at most the store's Timeout, even with a client that
// would wait for ever; once Redis answers again, the store uses it again.
func TestHungRedisIsGivenUpAndRetried(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testHungRedisIsGivenUpAndRetried(t, k) })
	}
}

func testHungRedisIsGivenUpAndRetried(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.clientWith(t, redis.UniversalOptions{ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: false}) // no timeouts of its own
	store := redisstore.New(rdb, redisstore.Options{Prefix: "hung:", Timeout: 100 * time.Millisecond, RetryInterval: 50 * time.Millisecond, OnUnavailable: redisstore.FailClosed})
	req := limit.Request{Subject: "payroll", Address: "203.0.113.9", Budget: limit.Budget{PerSubject: 3, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}}
	if res, err := store.Reserve(context.Background(), req); err != nil {
		t.Fatal(err)
	} else {
		res.Succeeded()
	}
	srv.pause(t)
	answered := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := store.Reserve(context.Background(), req)
			answered <- err
		}()
	}
	for range 5 {
		select {
		case err := <-answered:
			if !errors.Is(err, limit.ErrUnavailable) {
				t.Fatalf("while Redis is hung: %v", err)
			}
		case <-time.After(30 * time.Second): // a failure bound only, far above Timeout
			t.Fatal("a reservation is held by a hung Redis")
		}
	}
	srv.resume(t)
	for i := 0; ; i++ {
		res, err := store.Reserve(context.Background(), req)
		if err == nil {
			res.Succeeded()
			break
		}
		if i == 200 {
			t.Fatalf("Redis answers again, the store does not use it: %v %+v", err, store.Stats())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if st := store.Stats(); st.Errors == 0 || st.Unavailable < 5 || st.Redis < 2 {
		t.Fatalf("stats %+v", st)
	}
}

// The Redis store remembers jtis as limit.Memory does.
func TestStoreRemembers(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testStoreRemembers(t, k) })
	}
}

func testStoreRemembers(t *testing.T, kind kind) {
	rdb := kind.start(t).client(t)
	n := 0
	limittest.RunReplay(t, func(t *testing.T) limit.ReplayStore {
		n++
		return decidedByRedis(t, redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("replay%d:", n)}))
	})
}

// decidedByRedis returns s, and fails t at its end unless Redis decided
// everything s was asked: a fallback keeps the rules too, and would hide
// a script that Redis refuses.
func decidedByRedis(t *testing.T, s *redisstore.Store) *redisstore.Store {
	t.Cleanup(func() {
		if st := s.Stats(); st.Errors != 0 || st.Fallback != 0 {
			t.Errorf("stats %+v: Redis did not decide everything", st)
		}
	})
	return s
}

// A jti's key has the store's prefix and the fixed length of every key,
// holds neither the client ID nor the jti as text, and expires at the
// Until it was given, counted from Now.
func TestReplayKeysAreFixedSizeAndExpire(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplayKeysAreFixedSizeAndExpire(t, k) })
	}
}

func testReplayKeysAreFixedSizeAndExpire(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	const prefix = "idsauth:token:"
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	long := strings.Repeat("J", 1000)
	now := time.Now()
	ids := map[string]time.Duration{"4f1c0a9e-jti": time.Minute, long: 6 * time.Minute, "": time.Second}
	for id, life := range ids {
		if fresh, err := store.Remember(context.Background(), limit.Replay{Subject: "payroll", ID: id, Until: now.Add(life), Now: now}); !fresh || err != nil {
			t.Fatalf("Remember(%.20q): %v, %v", id, fresh, err)
		}
	}
	ctx := context.Background()
	keys := srv.keys(t, "*")
	if len(keys) != len(ids) {
		t.Fatalf("%d keys for %d jtis: %q", len(keys), len(ids), keys)
	}
	size := redisstore.KeyBytes(len(prefix))
	if kind.cluster {
		size += len("{0123}")
	}
	var longest time.Duration
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix+"r:") || len(k) != size {
			t.Errorf("key %q: want the prefix, kind r and %d bytes", k, size)
		}
		if kind.cluster && tag(k) != tag(keys[0]) {
			t.Errorf("key %q: want the subject's tag, as %q", k, keys[0])
		}
		for _, text := range []string{"payroll", "4f1c", "JJJJ"} {
			if strings.Contains(k, text) {
				t.Errorf("key %q holds %q", k, text)
			}
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > 6*time.Minute {
			t.Errorf("key %q has PTTL %v, want within (0, its life]", k, ttl)
		}
		longest = max(longest, ttl)
	}
	if longest <= time.Minute {
		t.Errorf("the longest PTTL is %v: the 6-minute jti does not keep its Until", longest)
	}
}

// While Redis cannot answer, Remember follows the store's choice:
// FailOpen remembers in the replica's own memory (a replay at this
// replica is still refused); FailClosed returns limit.ErrUnavailable.
func TestRememberWhenRedisCannotAnswer(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testRememberWhenRedisCannotAnswer(t, k) })
	}
}

func testRememberWhenRedisCannotAnswer(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	open := redisstore.New(rdb, redisstore.Options{Prefix: "open:", RetryInterval: time.Hour})
	closed := redisstore.New(rdb, redisstore.Options{Prefix: "closed:", OnUnavailable: redisstore.FailClosed, RetryInterval: time.Hour})
	srv.kill()
	now := time.Now()
	use := limit.Replay{Subject: "payroll", ID: "jti-1", Until: now.Add(time.Minute), Now: now}
	for i, want := range []bool{true, false, false} {
		if fresh, err := open.Remember(context.Background(), use); fresh != want || err != nil {
			t.Fatalf("FailOpen, use %d: %v, %v; want %v", i+1, fresh, err, want)
		}
	}
	if st := open.Stats(); st != (redisstore.Stats{Fallback: 3, Errors: 1}) {
		t.Fatalf("FailOpen stats %+v, want 3 decided by the fallback after 1 failed call", st)
	}
	for range 3 {
		if fresh, err := closed.Remember(context.Background(), use); fresh || !errors.Is(err, limit.ErrUnavailable) {
			t.Fatalf("FailClosed: %v, %v", fresh, err)
		}
	}
	if st := closed.Stats(); st != (redisstore.Stats{Unavailable: 3, Errors: 1}) {
		t.Fatalf("FailClosed stats %+v", st)
	}
}

// A Redis whose clock went back an hour (its host stepped by NTP, say)
// neither refuses, for the hour, everyone who asked in the hour it
// repeats, nor forgives anything, as limit.Memory: every value here is
// rewritten as if Redis's clock had read later when it was written, the
// store's clock included; then the client with the right secret, and an
// address that spent its budget, ask again: after a step of 30 s, then of
// an hour. The clock carries on, ahead of TIME by the steps. Lost after
// them, it goes back by them, and a Retry-After still says a window at
// most.
func TestClockGoneBackRefusesNoLonger(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testClockGoneBackRefusesNoLonger(t, k) })
	}
}

func testClockGoneBackRefusesNoLonger(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	ctx := context.Background()
	const prefix = "back:"
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	budget := limit.Budget{PerSubject: 10, PerAddress: 3, Window: time.Minute, Trust: 24 * time.Hour}
	reserve := func(addr string) (limit.Reservation, error) {
		return store.Reserve(ctx, limit.Request{Subject: "payroll", Address: addr, Budget: budget})
	}
	res, err := reserve("198.51.100.7")
	if err != nil {
		t.Fatal(err)
	}
	res.Succeeded()
	trusted := srv.keys(t, prefix+"a:*") // the bucket of 198.51.100.7
	for range 3 {
		res, err := reserve("203.0.113.9")
		if err != nil {
			t.Fatal(err)
		}
		res.Failed()
	}
	// The clock the spent address's reservations read: the store's one,
	// or on a cluster the one of its bucket's tag.
	var spentTag string
	for _, k := range srv.keys(t, prefix+"a:*") {
		if !slices.Contains(trusted, k) {
			spentTag = tag(k)
		}
	}
	// refusal returns how long the spent address is refused for.
	refusal := func(when string) time.Duration {
		t.Helper()
		_, err := reserve("203.0.113.9")
		var no *limit.Refusal
		if !errors.As(err, &no) || no.Limit != limit.Address {
			t.Fatalf("%s, the spent address: %v, want refused", when, err)
		}
		return no.RetryAfter
	}
	before := refusal("before any step")
	keys := srv.keys(t, prefix+"*")
	clock, clocks := "", 0
	for _, k := range keys {
		if k[len(prefix)] == 'c' {
			clocks++
			if tag(k) == spentTag {
				clock = k
			}
		}
	}
	if clock == "" || (!kind.cluster && clocks != 1) {
		t.Fatalf("no clock of the tag %q, or not one clock, in %q", spentTag, keys)
	}
	// shift rewrites every value as if written d later on Redis's clock,
	// and keeps it past then.
	shift := func(d time.Duration) map[byte]int {
		shifted := map[byte]int{}
		for _, k := range keys {
			kb := k[len(prefix)]
			shifted[kb]++
			if kb == 'c' {
				latest, err := rdb.HGet(ctx, k, "latest").Int64()
				if err != nil {
					t.Fatal(err)
				}
				if err := rdb.HSet(ctx, k, "latest", latest+d.Microseconds()).Err(); err != nil {
					t.Fatal(err)
				}
				continue
			}
			v, err := rdb.Get(ctx, k).Int64()
			if err != nil {
				t.Fatal(err)
			}
			if v < 0 {
				v -= d.Microseconds() // a trust: minus its end
			} else {
				v += d.Microseconds()
			}
			if err := rdb.Set(ctx, k, v, 2*time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return shifted
	}
	ahead := func() time.Duration {
		us, err := rdb.HGet(ctx, clock, "ahead").Int64()
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(us) * time.Microsecond
	}
	if shifted := shift(30 * time.Second); shifted['a'] != 2 || shifted['p'] != 2 || shifted['c'] != clocks {
		t.Fatalf("shifted %v: want 2 address buckets, 2 pair marks and the %d clocks", shifted, clocks)
	}
	if d := refusal("30 s back"); d > before || d < before-time.Second {
		t.Errorf("after a step of 30 s: refused for %v, want as before, %v", d, before)
	}
	if a := ahead(); a < 30*time.Second-time.Second || a > 30*time.Second {
		t.Errorf("after a step of 30 s, the clock runs %v ahead", a)
	}
	shift(time.Hour)
	if _, err := reserve("198.51.100.7"); err != nil {
		t.Fatalf("after the clock went back an hour, the client with the right secret is refused: %v", err)
	}
	if d := refusal("an hour back"); d > before || d < before-2*time.Second {
		t.Errorf("after the clock went back an hour, the spent address is refused for %v, want as before, %v", d, before)
	}
	if a := ahead(); a < time.Hour+29*time.Second || a > time.Hour+30*time.Second {
		t.Errorf("after steps of 30 s and an hour, the clock runs %v ahead", a)
	}
	if err := rdb.Del(ctx, clock).Err(); err != nil {
		t.Fatal(err)
	}
	if d := refusal("the clock lost"); d > budget.Window {
		t.Errorf("with the clock lost after the steps, the spent address is refused for %v, more than a window", d)
	}
}
