package limittest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/limit"
)

// RunReplay runs every case of Remember as a subtest, each on a store
// from newStore that shares no ID with another's and has room for 1000
// IDs.
func RunReplay(t *testing.T, newStore func(t *testing.T) limit.ReplayStore) {
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, replayTester{t: t, s: newStore(t)}) })
	}
}

type replayTester struct {
	t *testing.T
	s limit.ReplayStore
}

// remember remembers subject's id for life on the real clock, and
// reports whether it was fresh; any error fails the test.
func (x replayTester) remember(subject, id string, life time.Duration) bool {
	x.t.Helper()
	now := time.Now()
	fresh, err := x.s.Remember(context.Background(), limit.Replay{Subject: subject, ID: id, Until: now.Add(life), Now: now})
	if err != nil {
		x.t.Fatalf("Remember(%q, %q): %v", subject, id, err)
	}
	return fresh
}

var replayCases = []struct {
	name string
	run  func(*testing.T, replayTester)
}{
	{"an ID is fresh once, then a replay", func(t *testing.T, x replayTester) {
		if !x.remember("payroll", "jti-1", time.Minute) {
			t.Fatal("a new ID is not fresh")
		}
		for i := range 3 {
			if x.remember("payroll", "jti-1", time.Minute) {
				t.Fatalf("use %d of a remembered ID is fresh", i+2)
			}
		}
	}},
	{"subjects keep their IDs apart, and subject and ID do not run together", func(t *testing.T, x replayTester) {
		for _, p := range [][2]string{{"payroll", "abc"}, {"billing", "abc"}, {"payrol", "labc"}, {"payrolla", "bc"}, {"", "payrollabc"}, {"payroll\x00", "abc"}} {
			if !x.remember(p[0], p[1], time.Minute) {
				t.Fatalf("(%q, %q) is taken for a replay of another pair", p[0], p[1])
			}
		}
	}},
	{"concurrent uses of one ID: exactly one is fresh", func(t *testing.T, x replayTester) {
		var fresh atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Go(func() {
				<-start
				now := time.Now()
				ok, err := x.s.Remember(context.Background(), limit.Replay{Subject: "payroll", ID: "jti-race", Until: now.Add(time.Minute), Now: now})
				if err != nil {
					t.Errorf("Remember: %v", err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := fresh.Load(); n != 1 {
			t.Fatalf("64 concurrent uses of one ID: %d fresh, want 1", n)
		}
	}},
	{"a thousand IDs are each fresh once", func(t *testing.T, x replayTester) {
		for round, want := range []bool{true, false} {
			for i := range 1000 {
				if got := x.remember("payroll", fmt.Sprint("jti-", i), time.Minute); got != want {
					t.Fatalf("round %d, ID %d: fresh %v, want %v", round+1, i, got, want)
				}
			}
		}
	}},
	{"an ID is remembered until Until, and only then forgotten", func(t *testing.T, x replayTester) {
		const life = 200 * time.Millisecond
		start := time.Now()
		if !x.remember("payroll", "jti-short", life) {
			t.Fatal("a new ID is not fresh")
		}
		for {
			fresh := x.remember("payroll", "jti-short", time.Minute)
			if fresh {
				if time.Since(start) < life {
					t.Fatalf("the ID was forgotten before its Until")
				}
				return
			}
			if time.Since(start) > 30*time.Second { // a failure bound only
				t.Fatal("the ID is still remembered 30 s after its Until")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}},
}
