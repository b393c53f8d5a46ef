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
	// MaxConcurrentSlow bounds the slow-hash checks running at once; the
	// others wait while their request lasts. Zero means half the CPUs
	// (GOMAXPROCS), at least one.
	MaxConcurrentSlow int
	// FailureFloor is the least time a failed Verify takes, waited, not
	// computed. Zero means automatic (none with fast hashes only, else twice
	// Prime's costliest slow hashes); negative means none.
	FailureFloor time.Duration
}

// Verifier checks a secret against the hashes of one subject (a client or
// a tenant) so that neither the answer's time nor the work done tells an
// unknown subject, a wrong secret and a subject with several hashes apart:
//
//   - fast hashes: every check computes the same digests of the secret
//     (SHA-256, and SHA-512 once any subject seen has a SHA-512 hash),
//     once each, and makes the same number of constant-time comparisons,
//     at least MinComparisons and at least the most hashes of any subject
//     seen, padding with comparisons that cannot match;
//   - slow hashes (bcrypt): once any has been seen (by Prime, or in a
//     check), every failing check, an unknown subject's included, waits
//     its turn among MaxConcurrentSlow, holds its turn for as long as the
//     costliest subject's slow hashes take (computing them, or waiting out
//     the rest without CPU), and returns no sooner than the failure floor
//     after it began. So the queue delays every failure alike, an unknown
//     subject burns no bcrypt, and a flood of guesses cannot take every
//     core.
//
// A check that has compared anything is a failure or a success, never an
// error: a caller charges a failure for it, so ending requests early
// cannot buy free guesses.
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
	with512  bool                  // every check computes SHA-512 too
	costTime map[int]time.Duration // measured bcrypt time per cost
	hold     time.Duration         // the costliest subject's slow work

	fast, digests, slowCount, hits, floors, queued atomic.Uint64
	running, peak                                  atomic.Int64
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
// about a quarter of a second) to set how long a failing check holds its
// turn and the automatic failure floor. Call it at start and on every
// reload; what it sets only grows. A check of hashes that Prime has not
// seen primes them first.
func (v *Verifier) Prime(subjects ...[]Hash) {
	for _, hashes := range subjects {
		var slow time.Duration
		with512 := false
		for _, h := range hashes {
			if h.Slow() {
				slow += v.measure(h)
			}
			with512 = with512 || h.kind == SHA512
		}
		v.mu.Lock()
		v.pad = max(v.pad, len(hashes))
		v.hold = max(v.hold, slow)
		v.with512 = v.with512 || with512
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

// Floor returns the failure floor in force: FailureFloor when set, else
// twice the costliest subject's slow work (zero with fast hashes only).
func (v *Verifier) Floor() time.Duration {
	floor, _ := v.timing()
	return floor
}

// timing returns the failure floor and how long a failing check holds its
// turn; both zero when failures are not timed.
func (v *Verifier) timing() (floor, hold time.Duration) {
	v.mu.Lock()
	hold = v.hold
	v.mu.Unlock()
	switch {
	case v.fixed < 0:
		return 0, 0
	case v.fixed > 0:
		return v.fixed, hold
	}
	return 2 * hold, hold
}

// Counts are what a Verifier has done since it was made, for tests and
// metrics: the count of work, not its time.
type Counts struct {
	Fast      uint64 // fast-hash comparisons, padding included
	Digests   uint64 // digests of the secret computed (SHA-256, SHA-512)
	Slow      uint64 // slow-hash (bcrypt) checks run
	CacheHits uint64 // slow checks answered from the success cache
	Floors    uint64 // failures held until the failure floor
	Queued    uint64 // failures that took a turn among the slow checks
	SlowPeak  int64  // the most turns ever held at once
}

// Counts returns v's counters.
func (v *Verifier) Counts() Counts {
	return Counts{Fast: v.fast.Load(), Digests: v.digests.Load(), Slow: v.slowCount.Load(), CacheHits: v.hits.Load(), Floors: v.floors.Load(), Queued: v.queued.Load(), SlowPeak: v.peak.Load()}
}

// dummy is what padding compares against: no secret hashes to it.
var dummy = Hash{kind: SHA256, sum: make([]byte, sha256.Size)}

// Verify reports whether secret matches any of hashes (none: an unknown
// subject). It compares every fast hash, with no early exit. A failure
// returns no sooner than the failure floor after the call. When ctx ends
// while the check waits for its turn among the slow checks, the answer is
// false: what was compared before is charged like any failure.
func (v *Verifier) Verify(ctx context.Context, hashes []Hash, secret string) bool {
	start := time.Now()
	pad, with512 := v.learn(hashes)
	// The same digests for every subject: SHA-256, and SHA-512 once any
	// subject has a SHA-512 hash.
	var d digests
	d.compute(secret, with512)
	v.digests.Add(1)
	if with512 {
		v.digests.Add(1)
	}
	match, fast := false, 0
	for _, h := range hashes {
		if h.Slow() {
			continue
		}
		match = d.match(h) || match
		fast++
	}
	for ; fast < pad; fast++ {
		d.match(dummy)
	}
	v.fast.Add(uint64(fast))
	if match {
		return true
	}
	var slow []Hash
	for _, h := range hashes {
		if h.Slow() {
			if v.cached(h, secret) {
				return true
			}
			slow = append(slow, h)
		}
	}
	floor, hold := v.timing()
	if (len(slow) > 0 || hold > 0) && v.slowChecks(ctx, slow, secret, hold) {
		return true
	}
	v.holdFailure(ctx, start, floor)
	return false
}

// slowChecks waits for a turn among the slow checks, checks secret against
// slow, and, failing, keeps the turn until hold has passed, so that every
// failure holds it alike. It reports a match.
func (v *Verifier) slowChecks(ctx context.Context, slow []Hash, secret string, hold time.Duration) bool {
	select {
	case v.slow <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	taken := time.Now()
	n := v.running.Add(1)
	for peak := v.peak.Load(); n > peak && !v.peak.CompareAndSwap(peak, n); peak = v.peak.Load() {
	}
	defer func() {
		v.running.Add(-1)
		<-v.slow
	}()
	for _, h := range slow {
		v.slowCount.Add(1)
		if h.Verify(secret) {
			v.remember(h, secret)
			return true
		}
	}
	v.queued.Add(1)
	sleep(ctx, time.Until(taken.Add(hold)))
	return false
}

// HoldFailure waits, without computing, until the failure floor after
// start, or until ctx ends (the caller is gone; the answer is moot). Verify
// does it for every failure; call it for a failure of another kind of
// credential checked beside secrets (a signed client assertion, say), so
// that it answers in the same time as a wrong secret.
func (v *Verifier) HoldFailure(ctx context.Context, start time.Time) {
	floor, _ := v.timing()
	v.holdFailure(ctx, start, floor)
}

// holdFailure is HoldFailure with the floor already read.
func (v *Verifier) holdFailure(ctx context.Context, start time.Time, floor time.Duration) {
	if floor <= 0 {
		return
	}
	v.floors.Add(1)
	sleep(ctx, time.Until(start.Add(floor)))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// learn primes v with hashes it has not seen the like of: a longer list,
// a SHA-512 hash, or a bcrypt cost not yet measured. It returns what
// every check does then: its comparisons, and whether it computes
// SHA-512.
func (v *Verifier) learn(hashes []Hash) (pad int, with512 bool) {
	v.mu.Lock()
	fresh := len(hashes) > v.pad
	for _, h := range hashes {
		fresh = fresh || (h.kind == SHA512 && !v.with512)
		if h.Slow() {
			cost, _ := bcrypt.Cost(h.sum)
			_, known := v.costTime[cost]
			fresh = fresh || !known
		}
	}
	pad, with512 = v.pad, v.with512
	v.mu.Unlock()
	if fresh {
		v.Prime(hashes)
		v.mu.Lock()
		pad, with512 = v.pad, v.with512
		v.mu.Unlock()
	}
	return pad, with512
}

// macKey is the success cache's key for h and secret.
func (v *Verifier) macKey(h Hash, secret string) [32]byte {
	var k [32]byte
	mac := hmac.New(sha256.New, v.key[:])
	mac.Write([]byte(h.text))
	mac.Write([]byte{0})
	mac.Write([]byte(secret))
	mac.Sum(k[:0])
	return k
}

// cached reports whether secret matched h recently.
func (v *Verifier) cached(h Hash, secret string) bool {
	if v.ttl <= 0 {
		return false
	}
	k := v.macKey(h, secret)
	now := time.Now()
	v.mu.Lock()
	exp, hit := v.seen[k]
	v.mu.Unlock()
	if hit && now.Before(exp) {
		v.hits.Add(1)
		return true
	}
	return false
}

// remember records that secret matched h.
func (v *Verifier) remember(h Hash, secret string) {
	if v.ttl <= 0 {
		return
	}
	k := v.macKey(h, secret)
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
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
}
