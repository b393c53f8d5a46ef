package issuer

import (
	"fmt"
	"testing"
	"time"
)

func TestFailureLimiterLocksOutAndRecovers(t *testing.T) {
	l := newFailureLimiter(3, time.Minute, 100)
	now := time.Now()
	for i := range 3 {
		if d := l.retryAfter("c", now); d != 0 {
			t.Fatalf("locked after %d failures", i)
		}
		l.fail("c", now)
	}
	d := l.retryAfter("c", now)
	if d <= 0 || d > 20*time.Second {
		t.Fatalf("retryAfter = %v, want up to one refill (20s)", d)
	}
	if l.retryAfter("other", now) != 0 {
		t.Fatal("another key is locked too")
	}
	if l.retryAfter("c", now.Add(d)) != 0 {
		t.Fatal("still locked once the allowance came back")
	}
	if got := retryAfterSeconds(1500 * time.Millisecond); got != 2 {
		t.Fatalf("Retry-After for 1.5s = %d", got)
	}
}

func TestFailureLimiterMemoryIsBounded(t *testing.T) {
	const bound = 1000
	l := newFailureLimiter(10, time.Minute, bound)
	now := time.Now()
	for i := range 100_000 {
		l.fail(fmt.Sprint("random-client-", i), now)
		if n := l.size(); n > 2*bound {
			t.Fatalf("after %d keys the limiter holds %d, bound %d", i+1, n, 2*bound)
		}
	}
	// A key that keeps failing stays tracked and locked.
	for range 10 {
		l.fail("target", now)
	}
	for i := range 5 * bound {
		l.fail(fmt.Sprint("noise-", i), now)
		if i%bound == 0 {
			l.fail("target", now)
		}
	}
	if l.retryAfter("target", now) == 0 {
		t.Fatal("a key that keeps failing was forgotten")
	}
}
