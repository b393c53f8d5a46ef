package limit

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// testLimiter is a limiter that reserves with one budget.
type testLimiter struct {
	*limiter
	budget Budget
}

func (l testLimiter) Reserve(subject, addr string, now time.Time) (*reservation, Refusal) {
	return l.limiter.reserve(l.budget, subject, addr, now)
}

func newTestLimiter(perSubject, perAddress, maxBytes int) testLimiter {
	return testLimiter{newLimiter(maxBytes), Budget{PerSubject: perSubject, PerAddress: perAddress, Window: time.Minute, Trust: trustFor}}
}

func newTest(perSubject, perAddress int) testLimiter {
	return newTestLimiter(perSubject, perAddress, 1<<20)
}

func TestAddressBudget(t *testing.T) {
	l := newTest(100, 3)
	for i := range 3 {
		r, no := l.Reserve(fmt.Sprint("client-", i), "198.51.100.7", t0)
		if r == nil {
			t.Fatalf("attempt %d refused: %+v", i, no)
		}
		r.Failed()
	}
	r, no := l.Reserve("client-x", "198.51.100.7", t0)
	if r != nil || no.Limit != Address || no.RetryAfter != 20*time.Second {
		t.Fatalf("4th attempt: %v %+v, want refused by address for 20s", r, no)
	}
	if r, _ := l.Reserve("client-x", "198.51.100.8", t0); r == nil {
		t.Fatal("another address is refused too")
	}
	if r, _ := l.Reserve("client-x", "198.51.100.7", t0.Add(20*time.Second)); r == nil {
		t.Fatal("still refused once one failure has refilled")
	}
}

// The lockout: wrong secrets from X spend the client's budget; the
// right secret from Y, which has not failed, still gets through, and so
// does every later request from Y; X stays refused.
func TestFailuresElsewhereNeverLockOutTheClient(t *testing.T) {
	l := newTest(10, 100)
	for i := range 15 {
		r, no := l.Reserve("payroll", "203.0.113.9", t0)
		switch {
		case i < 10 && r == nil:
			t.Fatalf("attempt %d from X refused early: %+v", i, no)
		case i >= 10 && (r != nil || no.Limit != SubjectAddress || no.RetryAfter <= 0):
			t.Fatalf("attempt %d from X: %v %+v, want refused", i, r, no)
		}
		if r != nil {
			r.Failed()
		}
	}
	for i := range 20 {
		r, no := l.Reserve("payroll", "198.51.100.7", t0)
		if r == nil {
			t.Fatalf("request %d from Y refused: %+v", i, no)
		}
		r.Succeeded()
	}
	if r, _ := l.Reserve("payroll", "203.0.113.9", t0); r != nil {
		t.Fatal("X is no longer refused")
	}
}

// However many arrive at once, one address gets at most the budget.
func TestConcurrentGuessesTakeAtMostTheBudget(t *testing.T) {
	l := newTest(10, 100)
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			if r, _ := l.Reserve("payroll", "203.0.113.9", t0); r != nil {
				granted.Add(1)
				r.Failed()
			}
		})
	}
	close(start)
	wg.Wait()
	if g := granted.Load(); g != 10 {
		t.Fatalf("%d of 64 concurrent guesses were granted, want the budget, 10", g)
	}
}

// Over one window, N failing addresses get at most the subject's budget
// plus one verification each.
func TestVerificationsPerSubjectAreBounded(t *testing.T) {
	const budget, addrs = 10, 50
	l := newTest(budget, 1000)
	granted := 0
	for round := range 20 {
		now := t0.Add(time.Duration(round) * time.Second) // 20 s of a 60 s window
		for a := range addrs {
			if r, _ := l.Reserve("payroll", fmt.Sprint("203.0.113.", a), now); r != nil {
				granted++
				r.Failed()
			}
		}
	}
	// 20 s of refill is 3 more subject tokens (one per 6 s, at 0, 6, 12 and 18 s after the burst).
	if limit := budget + 3 + addrs; granted > limit {
		t.Fatalf("%d verifications, want at most %d", granted, limit)
	}
	if granted < addrs {
		t.Fatalf("only %d verifications: an address that had not failed was refused", granted)
	}
}

func TestSuccessChargesNothing(t *testing.T) {
	l := newTest(2, 2)
	for i := range 1000 {
		r, no := l.Reserve("payroll", "198.51.100.7", t0)
		if r == nil {
			t.Fatalf("success %d refused: %+v", i, no)
		}
		r.Succeeded()
	}
}

// An address that gave the right secret keeps getting through while
// someone else has spent the subject's budget, with many requests in
// flight at once, until it fails once.
func TestTrustedAddressSkipsTheSpentBudget(t *testing.T) {
	l := newTest(3, 100)
	r, _ := l.Reserve("payroll", "198.51.100.7", t0)
	r.Succeeded()
	for range 3 {
		r, _ := l.Reserve("payroll", "203.0.113.9", t0)
		r.Failed()
	}
	var inFlight []*reservation
	for i := range 20 {
		r, no := l.Reserve("payroll", "198.51.100.7", t0)
		if r == nil {
			t.Fatalf("concurrent request %d from the trusted address refused: %+v", i, no)
		}
		inFlight = append(inFlight, r)
	}
	for _, r := range inFlight {
		r.Succeeded()
	}
	r, _ = l.Reserve("payroll", "198.51.100.7", t0)
	r.Failed()
	if r, no := l.Reserve("payroll", "198.51.100.7", t0); r != nil || no.Limit != SubjectAddress {
		t.Fatalf("a trusted address that failed is still trusted: %v %+v", r, no)
	}
	if r, _ := l.Reserve("payroll", "198.51.100.7", t0.Add(trustFor+2*time.Minute)); r == nil {
		t.Fatal("refused once everything has refilled")
	}
}

// TestTrustLastsTheBudgetsTrust: an address is trusted for as long as
// the budget's Trust says, no longer: within it, with the subject's
// budget spent, it may have several requests in flight; past it, it is an
// address like another, which may try once.
func TestTrustLastsTheBudgetsTrust(t *testing.T) {
	l := newTest(1, 100)
	l.budget.Trust = time.Hour
	r, _ := l.Reserve("payroll", "198.51.100.7", t0)
	r.Succeeded()
	inFlight := func(at time.Time) int {
		spent, _ := l.Reserve("payroll", "203.0.113.9", at)
		spent.Failed()
		n := 0
		for range 2 {
			if r, _ := l.Reserve("payroll", "198.51.100.7", at); r != nil {
				n++
				defer r.Succeeded()
			}
		}
		return n
	}
	if n := inFlight(t0.Add(59 * time.Minute)); n != 2 {
		t.Fatalf("within the trust, %d of 2 requests in flight admitted", n)
	}
	if n := inFlight(t0.Add(2 * time.Hour)); n != 1 {
		t.Fatalf("past the trust, %d of 2 requests in flight admitted, want 1", n)
	}
}

// More addresses than the pair table holds get no more tries than it can
// remember: live marks are never evicted, so the surplus is refused.
func TestPairTableOverflowRefusesInsteadOfForgetting(t *testing.T) {
	const budget = 5
	l := newTestLimiter(budget, 1000, 8<<10) // 256 pair marks
	marks := len(l.pairs.entries)
	granted := 0
	for round := range 10 {
		now := t0.Add(time.Duration(round) * time.Millisecond)
		for a := range 4 * marks {
			if r, _ := l.Reserve("payroll", fmt.Sprintf("2001:db8:%x::/64", a), now); r != nil {
				granted++
				r.Failed()
			}
		}
	}
	if granted > budget+marks {
		t.Fatalf("%d verifications from %d addresses, want at most %d (budget + %d marks)", granted, 4*marks, budget+marks, marks)
	}
	if granted < marks/2 {
		t.Fatalf("only %d verifications: the table held far fewer marks than it has room for", granted)
	}
}

// The table never grows, whatever the keys look like; a flood of single
// failures forgets them before it forgets a locked-out key.
func TestMemoryIsFixedAndLockoutsSurviveFloods(t *testing.T) {
	l := newTestLimiter(5, 5, 64<<10)
	if l.bytes() != 64<<10 {
		t.Fatalf("Bytes = %d", l.bytes())
	}
	for range 5 {
		r, _ := l.Reserve("payroll", "203.0.113.9", t0)
		r.Failed()
	}
	long := strings.Repeat("x", 1<<10)
	for i := range 40_000 {
		if r, _ := l.Reserve(fmt.Sprint(long, i), fmt.Sprint("198.51.", i>>8&255, ".", i&255), t0); r != nil {
			r.Failed()
		}
	}
	if n := len(l.buckets.entries) + len(l.pairs.entries); n*entryBytes != 64<<10 {
		t.Fatalf("tables grew to %d entries", n)
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", t0); r != nil || no.Limit != Address {
		t.Fatalf("the locked-out address was forgotten: %v %+v", r, no)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, 20 * time.Second: 20} {
		if got := (&Refusal{RetryAfter: d}).RetryAfterSeconds(); got != want {
			t.Errorf("%v: %d, want %d", d, got, want)
		}
	}
}

func TestNewRoundsTheTableDown(t *testing.T) {
	for _, c := range []struct{ bytes, want int }{{0, 128}, {100, 128}, {1 << 20, 1 << 20}, {1<<20 + 1000, 1 << 20}, {3 << 20, 2 << 20}} {
		l := newLimiter(c.bytes)
		if l.bytes() != c.want {
			t.Errorf("MaxBytes %d: Bytes = %d, want %d", c.bytes, l.bytes(), c.want)
		}
	}
}

// A wall clock stepped back (by NTP, say) by an hour must not refuse,
// for an hour, everyone who asked in the hour it repeats, nor forgive
// anything: the client that gave its right secret still gets through,
// and an address that spent its budget is refused as it was just before
// the step, and no longer.
func TestClockGoneBackRefusesNoLonger(t *testing.T) {
	l := newTest(10, 3)
	later := t0.Add(time.Hour)
	r, no := l.Reserve("payroll", "198.51.100.7", later)
	if r == nil {
		t.Fatalf("refused: %+v", no)
	}
	r.Succeeded()
	for range 3 {
		r, _ := l.Reserve("payroll", "203.0.113.9", later)
		if r == nil {
			t.Fatal("a failure before the budget is spent was refused")
		}
		r.Failed()
	}
	_, before := l.Reserve("payroll", "203.0.113.9", later)
	if before.RetryAfter != 20*time.Second {
		t.Fatalf("the spent address: %+v, want refused for 20 s", before)
	}
	if r, no := l.Reserve("payroll", "198.51.100.7", t0); r == nil {
		t.Fatalf("after the clock went back an hour, the client with the right secret is refused: %+v", no)
	} else {
		r.Succeeded()
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", t0); r != nil || no != before {
		t.Fatalf("after the clock went back an hour, the spent address: %v %+v, want refused as before the step, %+v", r, no, before)
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", t0.Add(20*time.Second)); r == nil {
		t.Fatalf("20 s after the step, the address is still refused: %+v", no)
	}
}

// Readings of the clock that lag others, as when a request read it before
// another but takes the lock after, count as the latest: a budget spent
// at a reading 30 s later is refused as at that reading, neither forgiven
// nor refused for the lag longer; and a lag never moves the limiter's
// clock ahead, so that many lags cannot refill budgets faster.
func TestLaggingReadingForgivesNothing(t *testing.T) {
	l := newTest(10, 3)
	for range 3 {
		r, _ := l.Reserve("payroll", "203.0.113.9", t0.Add(30*time.Second))
		r.Failed()
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", t0); r != nil || no.RetryAfter != 20*time.Second {
		t.Fatalf("a reading 30 s behind: %v %+v, want refused for 20 s", r, no)
	}
	for i := range 100 { // lags of 30 s, again and again
		l.Reserve("payroll", "198.51.100.1", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", t0.Add(49*time.Second)); r != nil || no.RetryAfter != time.Second {
		t.Fatalf("at 49 s, after many lagging readings: %v %+v, want refused for 1 s more", r, no)
	}
}

// A failure mark made before the clock went back lasts a window of the
// limiter's clock, which carries on from where it was: an address that
// failed once, while others keep the subject's budget spent, may try
// again a window on, not the step's length on.
func TestFailureMarkOutlastsNoWindowAfterTheClockWentBack(t *testing.T) {
	l := newTest(1, 100)
	later := t0.Add(time.Hour)
	r, _ := l.Reserve("payroll", "198.51.100.7", later)
	r.Failed() // the client's own address fails once (a mistyped secret)
	// The clock goes back an hour; an attacker keeps the budget spent.
	spend := func(at time.Time) {
		if r, _ := l.Reserve("payroll", fmt.Sprint("203.0.113.", at.Unix()%200), at); r != nil {
			r.Failed()
		}
	}
	spend(t0)
	if r, _ := l.Reserve("payroll", "198.51.100.7", t0.Add(time.Second)); r != nil {
		t.Fatal("the address that failed was not refused while the budget is spent")
	}
	spend(t0.Add(time.Minute))
	if r, no := l.Reserve("payroll", "198.51.100.7", t0.Add(time.Minute+time.Second)); r == nil {
		t.Fatalf("a window after, the address that failed once before the clock went back is still refused: %+v", no)
	}
}

// After a step back, the marks a reservation leaves are on the limiter's
// clock, which carries on from where it was: a trusted address that fails
// after the step is marked failing for a window from then, and refused
// while others keep the subject's budget spent.
func TestMarksAfterAStepAreOnTheLimitersClock(t *testing.T) {
	l := newTest(1, 100)
	later := t0.Add(time.Hour)
	r, _ := l.Reserve("payroll", "198.51.100.7", later)
	r.Succeeded() // trusted
	r, _ = l.Reserve("payroll", "203.0.113.9", later)
	r.Failed() // the subject's budget is spent
	// The clock goes back an hour; the trusted address fails once.
	r, no := l.Reserve("payroll", "198.51.100.7", t0)
	if r == nil {
		t.Fatalf("the trusted address was refused: %+v", no)
	}
	r.Failed()
	if r, no := l.Reserve("payroll", "198.51.100.7", t0.Add(time.Second)); r != nil || no.Limit != SubjectAddress {
		t.Fatalf("the address that failed, with the budget spent: %v %+v, want refused", r, no)
	}
}

// Readings centuries off, or zero (limit.Memory reads time.Now for a zero
// one; a caller of the Limiter itself might not), overflow nothing: after
// them a new address is let through and a spent one refused for a step,
// not for millions of hours.
func TestOutlandishReadingsOverflowNothing(t *testing.T) {
	l := newTest(10, 3)
	for _, at := range []time.Time{{}, time.Unix(0, 0), t0.AddDate(300, 0, 0), {}, t0.AddDate(-300, 0, 0), time.Unix(0, 0)} {
		l.Reserve("payroll", "198.51.100.1", at)
	}
	at := time.Now()
	if r, no := l.Reserve("payroll", "203.0.113.9", at); r == nil {
		t.Fatalf("a new address after outlandish readings: %+v", no)
	} else {
		r.Failed()
	}
	for range 2 {
		r, _ := l.Reserve("payroll", "203.0.113.9", at)
		r.Failed()
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", at); r != nil || no.RetryAfter <= 0 || no.RetryAfter > 20*time.Second {
		t.Fatalf("the spent address: %v %+v, want refused for at most a step (20 s)", r, no)
	}
}

// A reading with a monotonic clock reading (time.Now's) is counted on it:
// one that lagged for over a minute (a request stalled before the lock)
// counts as the latest time given, and moves the clock on not at all, as
// a reading of a clock without one would (TestClockGoneBackRefusesNoLonger).
func TestMonotonicReadingIsNoStep(t *testing.T) {
	l := newTest(10, 3)
	now := time.Now()
	l.Reserve("payroll", "198.51.100.1", now)
	l.Reserve("payroll", "198.51.100.1", now.Add(-2*time.Minute)) // Add keeps the monotonic reading
	if l.ahead != 0 {
		t.Fatalf("a monotonic reading two minutes behind moved the clock %v ahead", time.Duration(l.ahead))
	}
	// The same without one: a step of about 2 min (give or take the
	// nanoseconds between the wall and monotonic readings).
	l.Reserve("payroll", "198.51.100.1", now.Round(0).Add(-2*time.Minute))
	if l.ahead <= int64(steppedBack) {
		t.Fatalf("a reading two minutes behind, without a monotonic reading, moved the clock %v ahead, want a step", time.Duration(l.ahead))
	}
}

// A reading that is no clock's (zero, or centuries from now) counts as
// the latest time given: it neither steps the clock on nor forgives a
// spent budget.
func TestNoClocksReadingIsIgnored(t *testing.T) {
	l := newTest(10, 3)
	at := time.Now()
	for range 3 {
		r, _ := l.Reserve("payroll", "203.0.113.9", at)
		r.Failed()
	}
	for _, odd := range []time.Time{{}, at.AddDate(300, 0, 0), at.AddDate(-300, 0, 0), {}} {
		l.Reserve("payroll", "198.51.100.1", odd)
	}
	if l.ahead != 0 {
		t.Fatalf("readings of no clock moved it %v ahead", time.Duration(l.ahead))
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", at); r != nil || no.RetryAfter != 20*time.Second {
		t.Fatalf("the spent address after readings of no clock: %v %+v, want refused for 20 s", r, no)
	}
}

// Readings with and without a monotonic clock reading, taking turns after
// a step back (an issuer whose clock is time.Now().UTC() beside SCIMAuth's
// time.Now), count the step once: the clock is not moved on at every turn,
// which would forgive a spent budget a step at a time.
func TestTwoKindsOfReadingDoNotRatchet(t *testing.T) {
	l := newTest(10, 3)
	at := time.Now()
	wall := at.Round(0)
	l.Reserve("payroll", "198.51.100.1", wall)
	for range 3 {
		r, _ := l.Reserve("payroll", "203.0.113.9", at)
		r.Failed()
	}
	for range 5 {
		l.Reserve("payroll", "198.51.100.1", wall.Add(-time.Hour)) // stepped back an hour
		l.Reserve("payroll", "198.51.100.1", at)
	}
	if l.ahead > int64(time.Hour+time.Second) {
		t.Fatalf("five turns after one step of an hour moved the clock %v ahead", time.Duration(l.ahead))
	}
	if r, no := l.Reserve("payroll", "203.0.113.9", at); r != nil || no.RetryAfter < 19*time.Second {
		t.Fatalf("the spent address after the turns: %v %+v, want refused for about 20 s", r, no)
	}
}

// Two clocks decades apart taking turns (a misuse: one Limiter, one clock)
// overflow nothing: the lead stays within its bound and the clock goes on.
func TestAlternatingDecadesOverflowNothing(t *testing.T) {
	l := newTest(10, 3)
	for range 20 {
		l.Reserve("payroll", "198.51.100.1", time.Unix(0, 0))
		l.Reserve("payroll", "198.51.100.1", t0)
	}
	if l.ahead < 0 || l.ahead > int64(maxSpan) || l.latest < l.start.UnixNano() {
		t.Fatalf("after 20 turns of 1970 and %d: ahead %v, latest %d before New's %d", t0.Year(), time.Duration(l.ahead), l.latest, l.start.UnixNano())
	}
}
