package issuer

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// failureLimiter counts failed authentications per key (a client ID or a
// remote address) with a token bucket each: a key may fail burst times,
// and the allowance comes back evenly over the window. A key whose bucket
// is empty is locked out until it refills.
//
// Memory is bounded: buckets live in two generations of at most max
// entries each; when the current one fills, the older is dropped. An
// attacker cycling through random keys can push out old buckets, which
// forgets their failures early, but can never grow the limiter. A bucket
// costs about 150 bytes with its map entry.
type failureLimiter struct {
	every rate.Limit
	burst int
	max   int

	mu       sync.Mutex
	cur, old map[string]*rate.Limiter
}

func newFailureLimiter(burst int, window time.Duration, max int) *failureLimiter {
	return &failureLimiter{
		every: rate.Limit(float64(burst) / window.Seconds()),
		burst: burst,
		max:   max,
		cur:   make(map[string]*rate.Limiter),
		old:   make(map[string]*rate.Limiter),
	}
}

// lookup returns the bucket of key, creating it when create is set.
func (l *failureLimiter) lookup(key string, create bool) *rate.Limiter {
	if b, ok := l.cur[key]; ok {
		return b
	}
	b, ok := l.old[key]
	if !ok && !create {
		return nil
	}
	if ok {
		delete(l.old, key)
	} else {
		b = rate.NewLimiter(l.every, l.burst)
	}
	if len(l.cur) >= l.max {
		l.old, l.cur = l.cur, make(map[string]*rate.Limiter, len(l.cur))
	}
	l.cur[key] = b
	return b
}

// retryAfter is how long key stays locked out: zero when it is not.
func (l *failureLimiter) retryAfter(key string, now time.Time) time.Duration {
	l.mu.Lock()
	b := l.lookup(key, false)
	l.mu.Unlock()
	if b == nil {
		return 0
	}
	tokens := b.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(l.every) * float64(time.Second))
}

// fail records a failed attempt for key.
func (l *failureLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	b := l.lookup(key, true)
	l.mu.Unlock()
	b.AllowN(now, 1)
}

// size is the number of keys remembered.
func (l *failureLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.cur) + len(l.old)
}

// retryAfterSeconds rounds d up to whole seconds, at least 1, for the
// Retry-After header.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
