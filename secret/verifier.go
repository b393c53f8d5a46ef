package secret

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// MinComparisons is the number of fast-hash comparisons every
// verification does at least, padding with comparisons that cannot match,
// so that a subject with one hash, one with several (a secret being
// rotated) and an unknown subject cost the same.
const MinComparisons = 4

// VerifierConfig configures a Verifier. Zero values are the defaults.
type VerifierConfig struct {
	// CacheTTL is how long a successful check against a slow hash is
	// remembered, so that a caller who knows the secret does not pay
	// bcrypt on every request. Zero means 5 minutes; negative, no cache.
	CacheTTL time.Duration
	// CacheEntries bounds the remembered successes (about 80 bytes each;
	// only a right secret adds one). Zero means 4096.
	CacheEntries int
	// MaxConcurrentSlow bounds the slow-hash checks running at once in
	// this Verifier; the others wait (while their request lasts), so a
	// flood of guesses cannot take every core. Zero means half the CPUs
	// (GOMAXPROCS), at least one. Give several SCIMAuth middlewares one
	// Verifier (middleware.SCIMLimits.Verifier) to bound them together.
	MaxConcurrentSlow int
	// FailureFloor is the least time a failed verification takes: a
	// failure returns no sooner than this after Verify was called,
	// waiting (not computing) for what is left. Zero means automatic:
	// none while only fast hashes have been seen, else twice the time
	// that Prime measured for the costliest subject's slow hashes.
	// Negative means none.
	FailureFloor time.Duration
}

// Verifier checks a secret against the hashes of one subject (a client or
// a tenant) so that neither the answer's time nor the work done tells an
// unknown subject, a wrong secret and a subject with several hashes apart:
//
//   - fast hashes: every check does the same number of comparisons, at
//     least MinComparisons and at least the most hashes of any subject
//     given to Prime, padding with comparisons that cannot match;
//   - slow hashes (bcrypt): an unknown subject burns no bcrypt; instead
//     every failure waits until the failure floor (see
//     VerifierConfig.FailureFloor), which covers the slowest subject's
//     work. A failure that takes longer than the floor, because slow
//     checks are queued behind MaxConcurrentSlow, answers later and so
//     shows load, not which subject was asked for.
//
// Successes against slow hashes are remembered for a short time as an
// HMAC, under a key made at random for this Verifier, of the hash and the
// secret: the secret itself is never kept. A Verifier is safe for
// concurrent use.
type Verifier struct {
	ttl   time.Duration
	max   int
	key   [32]byte
	slow  chan struct{}
	fixed time.Duration // FailureFloor when set

	mu       sync.Mutex
	seen     map[[32]byte]time.Time
	pad      int                   // fast comparisons per check
	costTime map[int]time.Duration // measured bcrypt time per cost
	floor    time.Duration         // automatic floor

	fast, slowCount, hits, floors atomic.Uint64
	running, peak                 atomic.Int64
}

// NewVerifier returns a Verifier configured by c.
func NewVerifier(c VerifierConfig) *Verifier {
	v := &Verifier{
		ttl:      c.CacheTTL,
		max:      c.CacheEntries,
		fixed:    c.FailureFloor,
		seen:     make(map[[32]byte]time.Time),
		pad:      MinComparisons,
		costTime: make(map[int]time.Duration),
	}
	if v.ttl == 0 {
		v.ttl = 5 * time.Minute
	}
	if v.max <= 0 {
		v.max = 4096
	}
	n := c.MaxConcurrentSlow
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	v.slow = make(chan struct{}, n)
	_, _ = rand.Read(v.key[:])
	return v
}

// Prime prepares v for the given subjects' hashes (every client, or every
// tenant): it pads fast checks to the longest list, and measures one check
// of each bcrypt cost it has not seen (so a cost-12 hash makes Prime take
// about a quarter of a second) to set the automatic failure floor. Call
// it at start and on every reload; the floor and padding only grow.
func (v *Verifier) Prime(subjects ...[]Hash) {
	for _, hashes := range subjects {
		var slow time.Duration
		for _, h := range hashes {
			if h.Slow() {
				slow += v.measure(h)
			}
		}
		v.mu.Lock()
		v.pad = max(v.pad, len(hashes))
		v.floor = max(v.floor, 2*slow)
		v.mu.Unlock()
	}
}

// measure returns the time of one check against h's cost, measuring it
// the first time that cost is seen.
func (v *Verifier) measure(h Hash) time.Duration {
	cost, _ := bcrypt.Cost(h.sum)
	v.mu.Lock()
	d, ok := v.costTime[cost]
	v.mu.Unlock()
	if ok {
		return d
	}
	start := time.Now()
	h.Verify("\x00not the secret")
	d = time.Since(start)
	v.mu.Lock()
	v.costTime[cost] = max(v.costTime[cost], d)
	d = v.costTime[cost]
	v.mu.Unlock()
	return d
}

// Floor returns the failure floor in force.
func (v *Verifier) Floor() time.Duration {
	switch {
	case v.fixed > 0:
		return v.fixed
	case v.fixed < 0:
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.floor
}

// Counts are what a Verifier has done since it was made, for tests and
// metrics: the count of work, not its time.
type Counts struct {
	Fast      uint64 // fast-hash comparisons, padding included
	Slow      uint64 // slow-hash (bcrypt) checks run
	CacheHits uint64 // slow checks answered from the success cache
	Floors    uint64 // failures held until the failure floor
	SlowPeak  int64  // the most slow checks that ever ran at once
}

// Counts returns v's counters.
func (v *Verifier) Counts() Counts {
	return Counts{Fast: v.fast.Load(), Slow: v.slowCount.Load(), CacheHits: v.hits.Load(), Floors: v.floors.Load(), SlowPeak: v.peak.Load()}
}

// dummy is what padding compares against: no secret hashes to it.
var dummy = Hash{kind: SHA256, sum: make([]byte, sha256.Size)}

// Verify reports whether secret matches any of hashes (none: an unknown
// subject). It compares every fast hash, with no early exit. A failure returns
// no sooner than the failure floor after the call. The error is ctx's,
// when ctx ended while a slow check waited for its turn: then no check
// was made and the answer says nothing.
func (v *Verifier) Verify(ctx context.Context, hashes []Hash, secret string) (bool, error) {
	start := time.Now()
	v.mu.Lock()
	pad := v.pad
	v.mu.Unlock()
	match, fast := false, 0
	for _, h := range hashes {
		if h.Slow() {
			continue
		}
		match = h.Verify(secret) || match
		fast++
	}
	for ; fast < pad; fast++ {
		dummy.Verify(secret)
	}
	v.fast.Add(uint64(fast))
	// Slow hashes stop at the first match: a success's time tells nothing
	// to someone who does not already hold the secret, and a failure
	// waits for the floor whatever it did.
	for _, h := range hashes {
		if match {
			break
		}
		if !h.Slow() {
			continue
		}
		ok, err := v.verifySlow(ctx, h, secret)
		if err != nil {
			return false, err
		}
		match = ok
	}
	if !match {
		v.holdFailure(ctx, start)
	}
	return match, nil
}

// holdFailure waits, without computing, until the failure floor after
// start, or until ctx ends (the caller is gone; the answer is moot).
func (v *Verifier) holdFailure(ctx context.Context, start time.Time) {
	floor := v.Floor()
	if floor <= 0 {
		return
	}
	v.floors.Add(1)
	wait := time.Until(start.Add(floor))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (v *Verifier) verifySlow(ctx context.Context, h Hash, secret string) (bool, error) {
	var k [32]byte
	if v.ttl > 0 {
		mac := hmac.New(sha256.New, v.key[:])
		mac.Write([]byte(h.text))
		mac.Write([]byte{0})
		mac.Write([]byte(secret))
		mac.Sum(k[:0])
		now := time.Now()
		v.mu.Lock()
		exp, hit := v.seen[k]
		v.mu.Unlock()
		if hit && now.Before(exp) {
			v.hits.Add(1)
			return true, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	select {
	case v.slow <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	v.slowCount.Add(1)
	n := v.running.Add(1)
	for peak := v.peak.Load(); n > peak && !v.peak.CompareAndSwap(peak, n); peak = v.peak.Load() {
	}
	ok := h.Verify(secret)
	v.running.Add(-1)
	<-v.slow
	if !ok || v.ttl <= 0 {
		return ok, nil
	}
	now := time.Now()
	v.mu.Lock()
	if len(v.seen) >= v.max {
		for key, e := range v.seen {
			if now.After(e) {
				delete(v.seen, key)
			}
		}
		if len(v.seen) >= v.max {
			clear(v.seen)
		}
	}
	v.seen[k] = now.Add(v.ttl)
	v.mu.Unlock()
	return true, nil
}
