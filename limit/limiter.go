package limit

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// ways is the number of entries per set.
const ways = 4

// steps returns the window and the time each budget's token takes to
// refill, in nanoseconds.
func (b Budget) steps() (window, subjectStep, addressStep int64) {
	w := int64(b.Window)
	return w, max(1, w/int64(b.PerSubject)), max(1, w/int64(b.PerAddress))
}

// Key kinds, so that a subject and an address with the same text differ.
const (
	kindAddress byte = iota + 1
	kindSubject
	kindPair
)

// limiter holds the budgets of a Memory. It is safe for concurrent use.
//
// Each budget is a GCRA bucket (a token bucket stored as one timestamp)
// that refills evenly over the window. The buckets and the pair marks
// live in two set-associative tables of fixed size: keys are hashed with
// per-process random seeds to 64 bits, entries are entryBytes each, and
// when a set is full the entry holding the least information (the one
// that frees up soonest) is replaced, so a flood of new keys forgets
// single failures before it forgets a locked-out key. A pair mark that
// still means something is never replaced: when its set is full, a new
// address is refused rather than a failure forgotten.
type limiter struct {
	seeds [kindPair + 1]maphash.Seed // by kind

	mu      sync.Mutex
	buckets table // per address and per subject
	pairs   table // per subject and address
	// The limiter's clock (see clock): when newLimiter ran, and, in Unix
	// nanoseconds, the latest time it gave and how far it runs ahead of
	// readings without a monotonic reading since their clock stepped back.
	start         time.Time
	latest, ahead int64
}

// table is a set-associative array of entries.
type table struct {
	entries []entry
	setMask uint64
}

func newTable(bytes int) table {
	sets := max(1, bytes/(entryBytes*ways))
	sets = 1 << (bits.Len(uint(sets)) - 1) // a power of two, at most asked
	return table{entries: make([]entry, sets*ways), setMask: uint64(sets - 1)}
}

// entry is one key's state. until is a GCRA theoretical arrival time in
// Unix nanoseconds (a bucket is full when until <= now) or, for a pair, the
// end of its failure mark. An entry with until <= now holds nothing.
type entry struct {
	key   uint64
	until int64
}

// newLimiter returns a limiter whose tables hold maxBytes; at least one
// set of each is kept.
func newLimiter(maxBytes int) *limiter {
	return &limiter{
		seeds:   [kindPair + 1]maphash.Seed{kindAddress: maphash.MakeSeed(), kindSubject: maphash.MakeSeed(), kindPair: maphash.MakeSeed()},
		buckets: newTable(maxBytes / 2),
		pairs:   newTable(maxBytes / 2),
		start:   time.Now(),
	}
}

// bytes is the memory the tables hold, fixed at newLimiter: at most the
// maxBytes asked, and at least 128.
func (l *limiter) bytes() int {
	return (len(l.buckets.entries) + len(l.pairs.entries)) * entryBytes
}

// reservation is a budget taken for one verification: a Memory's
// Reservation.
type reservation struct {
	l           *limiter
	now         int64
	window      int64
	subjectStep int64
	addressStep int64
	subject     uint64
	address     uint64
	pair        uint64
	tookSubject bool
	good        bool          // the address was trusted for the subject
	trust       time.Duration // how long a success trusts the address
}

// Reserve takes one failure from the budgets b of subject and addr at now,
// before a secret is verified. It refuses when addr's budget is spent; or
// when the subject's is, unless addr is trusted for the subject (it gave
// the right secret within b.Trust and has not failed since) or has not
// failed for it within the window and there is room to remember that it
// now tries. Room matters: pair marks that still mean something are never
// forgotten to make room, so an attacker with more addresses than the
// table holds gets no more tries, only refusals.
func (l *limiter) reserve(b Budget, subject, addr string, now time.Time) (*reservation, Refusal) {
	window, subjectStep, addressStep := b.steps()
	r := &reservation{
		l:           l,
		window:      window,
		subjectStep: subjectStep,
		addressStep: addressStep,
		trust:       b.Trust,
	}
	r.address, r.subject, r.pair = l.keys(subject, addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.clock(now)
	r.now = t
	a := l.buckets.slot(r.address)
	if wait := wait(a, addressStep, window, t); wait > 0 {
		return nil, Refusal{Limit: Address, RetryAfter: time.Duration(wait)}
	}
	s := l.buckets.slot(r.subject, a)
	p := l.pairs.mark(r.pair, t)
	sWait := wait(s, subjectStep, window, t)
	switch {
	case p != nil && goodAt(p, t):
		r.good = true
	case sWait == 0:
		take(s, subjectStep, t)
		r.tookSubject = true
		if p != nil {
			p.until = max(p.until, t+window)
		}
	case p == nil: // no room to remember another address for it
		return nil, Refusal{Limit: SubjectAddress, RetryAfter: time.Duration(sWait)}
	case p.until > t: // this address failed for it within the window
		return nil, Refusal{Limit: SubjectAddress, RetryAfter: time.Duration(min(sWait, p.until-t))}
	default: // the subject's budget is spent; this address may try once
		p.until = t + window
	}
	take(a, addressStep, t)
	return r, Refusal{}
}

// Succeeded gives the reservation back: the secret was right, so nothing
// is charged, and the address is trusted for the subject for its trust.
func (r *reservation) Succeeded() {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.giveBack()
	if p := r.l.pairs.mark(r.pair, r.now); p != nil {
		p.until = -(r.now + int64(r.trust))
	}
}

// Failed keeps the reservation: the failure stays charged, and an address
// that was trusted for the subject no longer is.
func (r *reservation) Failed() {
	if !r.good {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if p := r.l.pairs.find(r.pair); p != nil {
		p.until = r.now + r.window
	}
}

func (r *reservation) giveBack() {
	if e := r.l.buckets.find(r.address); e != nil {
		e.until -= r.addressStep
	}
	if r.tookSubject {
		if e := r.l.buckets.find(r.subject); e != nil {
			e.until -= r.subjectStep
		}
	}
}

// maxSpan bounds how far from newLimiter a reading counts (one further off, a
// zero time say, is no clock's and counts as the latest time given), and
// how far ahead of the readings the clock runs: so that no sum of them
// overflows.
const maxSpan = 100 * 365 * 24 * time.Hour

// clock returns the limiter's time for reading now, in Unix nanoseconds,
// with l.mu held. It never goes back, so that the budgets stay what they
// were whatever the wall clock does:
//
//   - A reading with a monotonic clock reading (time.Now's) is counted on
//     it, from newLimiter: no step of the wall clock moves it. Behind the latest
//     time given (it lagged another reading while waiting for the lock),
//     it counts as that time.
//   - A reading without one (a clock of the caller's, or time.Now after
//     UTC, In or Truncate) behind the latest time given by less than
//     steppedBack counts as that time; further behind, the wall clock was
//     stepped back (by NTP, say), and the limiter's clock carries on from
//     where it was, running ahead of such readings by the step from then
//     on. Monotonic readings never run ahead: a caller of each kind on one
//     limiter cannot ratchet it on, step by step.
//
// A clock stepped back by an hour so neither refuses, for the hour,
// everyone who asked in the hour it repeats, nor forgives a spent budget.
// Every caller of one limiter must read the same clock: two clocks more
// than steppedBack apart, taking turns, would move it on at every turn.
func (l *limiter) clock(reading time.Time) int64 {
	d := reading.Sub(l.start)
	if d < -maxSpan || d > maxSpan {
		return max(l.latest, l.start.UnixNano())
	}
	now := l.start.UnixNano() + int64(d)
	// Round(0) strips a monotonic reading: unequal, the reading had one.
	monotonic := reading != reading.Round(0)
	if !monotonic {
		now += l.ahead // a monotonic reading was never stepped back
	}
	if behind := l.latest - now; behind > 0 {
		if !monotonic && behind > int64(steppedBack) {
			l.ahead = min(l.ahead+behind, int64(maxSpan))
		}
		now = l.latest
	}
	l.latest = now
	return now
}

// wait is how long until e's bucket has a token: 0 when it has one now.
func wait(e *entry, step, window, now int64) int64 {
	return max(0, max(e.until, now)+step-window-now)
}

func take(e *entry, step, now int64) { e.until = max(e.until, now) + step }

// keys returns the table keys of addr, subject and the pair of them:
// each kind hashed under its own seed, so that an address and a subject
// spelled alike are two keys, and the pair from the other two. None is 0,
// the empty slot's key.
func (l *limiter) keys(subject, addr string) (address, subj, pair uint64) {
	address = maphash.String(l.seeds[kindAddress], addr)
	subj = maphash.String(l.seeds[kindSubject], subject)
	pair = maphash.Comparable(l.seeds[kindPair], [2]uint64{subj, address})
	return address | 1, subj | 1, pair | 1
}

func (t *table) set(key uint64) []entry {
	i := (key >> 32 & t.setMask) * ways
	return t.entries[i : i+ways]
}

// find returns key's entry, or nil.
func (t *table) find(key uint64) *entry {
	set := t.set(key)
	for i := range set {
		if set[i].key == key {
			return &set[i]
		}
	}
	return nil
}

// goodAt reports whether pair mark e trusts its address at t. A pair's
// until is a failure mark when positive, and minus the end of a trust
// when negative.
func goodAt(e *entry, t int64) bool { return e.until < 0 && -e.until > t }

// liveAt reports whether pair mark e still means something at t.
func liveAt(e *entry, t int64) bool { return e.until > t || goodAt(e, t) }

// mark returns key's pair mark, making one in place of a mark of its set
// that no longer means anything; nil when every mark of the set does.
func (t *table) mark(key uint64, now int64) *entry {
	set := t.set(key)
	free := -1
	for i := range set {
		e := &set[i]
		if e.key == key {
			return e
		}
		if free < 0 && (e.key == 0 || !liveAt(e, now)) {
			free = i
		}
	}
	if free < 0 {
		return nil
	}
	set[free] = entry{key: key}
	return &set[free]
}

// slot returns key's entry, making one if needed in place of the entry of
// its set that frees up soonest, other than those in keep (entries the
// caller still holds).
func (t *table) slot(key uint64, keep ...*entry) *entry {
	set := t.set(key)
	victim := -1
	for i := range set {
		e := &set[i]
		if e.key == key {
			return e
		}
		if slices.Contains(keep, e) {
			continue
		}
		if victim < 0 || e.until < set[victim].until {
			victim = i
		}
	}
	set[victim] = entry{key: key}
	return &set[victim]
}
