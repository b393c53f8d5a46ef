// Package limittest checks that a limit.Store keeps the rules of package
// limit: run it from a test of your own store, as the tests of
// limit.Memory and of the Redis store do.
package limittest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/limit"
)

// window is the budgets' window in every case: long enough that nothing
// refills while a case runs; trust is their trust.
const (
	window = time.Minute
	trust  = 24 * time.Hour
)

// Run runs every case as a subtest, each on a store from newStore that
// shares no budget with another's.
func Run(t *testing.T, newStore func(t *testing.T) limit.Store) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, tester{t: t, s: newStore(t)}) })
	}
}

type tester struct {
	t *testing.T
	s limit.Store
}

// reserve reserves for subject from addr with budgets of perSubject and
// perAddress; it returns nil and the refusal, or the reservation.
func (x tester) reserve(perSubject, perAddress int, subject, addr string) (limit.Reservation, *limit.Refusal) {
	x.t.Helper()
	res, err := x.s.Reserve(context.Background(), limit.Request{
		Subject: subject, Address: addr, Now: time.Now(),
		Budget: limit.Budget{PerSubject: perSubject, PerAddress: perAddress, Window: window, Trust: trust},
	})
	var no *limit.Refusal
	switch {
	case err == nil && res != nil:
		return res, nil
	case errors.As(err, &no) && res == nil:
		if no.RetryAfter <= 0 || no.RetryAfter > window {
			x.t.Fatalf("refused with RetryAfter %v, want within (0, %v]", no.RetryAfter, window)
		}
		return nil, no
	default:
		x.t.Fatalf("Reserve = %v, %v: want a reservation or a *limit.Refusal", res, err)
		return nil, nil
	}
}

var cases = []struct {
	name string
	run  func(*testing.T, tester)
}{
	{"an address is refused once its budget is spent, for any subject", func(t *testing.T, x tester) {
		for i := range 3 {
			res, no := x.reserve(100, 3, fmt.Sprint("client-", i), "198.51.100.7")
			if res == nil {
				t.Fatalf("attempt %d refused: %+v", i, no)
			}
			res.Failed()
		}
		if res, no := x.reserve(100, 3, "client-x", "198.51.100.7"); res != nil || no.Limit != limit.Address {
			t.Fatalf("4th attempt: %v %+v, want refused by the address budget", res, no)
		}
		if res, _ := x.reserve(100, 3, "client-x", "198.51.100.8"); res == nil {
			t.Fatal("another address is refused too")
		}
	}},
	{"failures from one address never lock the subject out of another", func(t *testing.T, x tester) {
		for i := range 15 {
			res, no := x.reserve(10, 100, "payroll", "203.0.113.9")
			switch {
			case i < 10 && res == nil:
				t.Fatalf("attempt %d from X refused early: %+v", i, no)
			case i >= 10 && (res != nil || no.Limit != limit.SubjectAddress):
				t.Fatalf("attempt %d from X: %v %+v, want refused by subject+address", i, res, no)
			}
			if res != nil {
				res.Failed()
			}
		}
		for i := range 20 {
			res, no := x.reserve(10, 100, "payroll", "198.51.100.7")
			if res == nil {
				t.Fatalf("request %d from Y refused: %+v", i, no)
			}
			res.Succeeded()
		}
		if res, _ := x.reserve(10, 100, "payroll", "203.0.113.9"); res != nil {
			t.Fatal("X is no longer refused")
		}
	}},
	{"concurrent guesses take exactly the budget", func(t *testing.T, x tester) {
		var granted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 64 {
			wg.Go(func() {
				<-start
				res, err := x.s.Reserve(context.Background(), limit.Request{
					Subject: "payroll", Address: "203.0.113.9", Now: time.Now(),
					Budget: limit.Budget{PerSubject: 10, PerAddress: 100, Window: window, Trust: trust},
				})
				if res != nil {
					granted.Add(1)
					res.Failed()
				} else if no := (*limit.Refusal)(nil); !errors.As(err, &no) {
					t.Errorf("Reserve: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if g := granted.Load(); g != 10 {
			t.Fatalf("%d of 64 concurrent guesses were granted, want the budget, 10", g)
		}
	}},
	{"each failing address gets one try once the subject's budget is spent", func(t *testing.T, x tester) {
		// The first ten addresses spend the budget, the forty others try
		// once each; after that every address has failed for it.
		const budget, addrs = 10, 50
		granted := 0
		for range 3 {
			for a := range addrs {
				if res, _ := x.reserve(budget, 1000, "payroll", fmt.Sprint("203.0.113.", a)); res != nil {
					granted++
					res.Failed()
				}
			}
		}
		if granted != addrs {
			t.Fatalf("%d verifications from %d addresses in three rounds, want %d", granted, addrs, addrs)
		}
	}},
	{"success charges nothing", func(t *testing.T, x tester) {
		for i := range 100 {
			res, no := x.reserve(2, 2, "payroll", "198.51.100.7")
			if res == nil {
				t.Fatalf("success %d refused: %+v", i, no)
			}
			res.Succeeded()
		}
	}},
	{"a trusted address skips the spent budget until it fails", func(t *testing.T, x tester) {
		res, _ := x.reserve(3, 100, "payroll", "198.51.100.7")
		res.Succeeded()
		for range 3 {
			res, _ := x.reserve(3, 100, "payroll", "203.0.113.9")
			res.Failed()
		}
		var inFlight []limit.Reservation
		for i := range 20 {
			res, no := x.reserve(3, 100, "payroll", "198.51.100.7")
			if res == nil {
				t.Fatalf("concurrent request %d from the trusted address refused: %+v", i, no)
			}
			inFlight = append(inFlight, res)
		}
		for _, res := range inFlight {
			res.Succeeded()
		}
		res, _ = x.reserve(3, 100, "payroll", "198.51.100.7")
		res.Failed()
		if res, no := x.reserve(3, 100, "payroll", "198.51.100.7"); res != nil || no.Limit != limit.SubjectAddress {
			t.Fatalf("a trusted address that failed is still trusted: %v %+v", res, no)
		}
	}},
	{"subjects and addresses with the same text are apart", func(t *testing.T, x tester) {
		for range 2 {
			res, _ := x.reserve(2, 100, "198.51.100.7", "203.0.113.9")
			res.Failed()
		}
		if res, no := x.reserve(2, 100, "203.0.113.9", "198.51.100.7"); res == nil {
			t.Fatalf("a subject named as the failing address was refused: %+v", no)
		}
		if res, no := x.reserve(2, 100, "198.51.100.7", "203.0.113.99"); res == nil {
			t.Fatalf("the subject's spent budget refused an address that has not failed: %+v", no)
		}
	}},
	{"a budget spent under a longer window stays spent under a shorter one", func(t *testing.T, x tester) {
		// Replicas on two configurations, or SCIM and the issuer on one
		// store: a request with the shorter window must not take what the
		// longer one charged for a clock that went back.
		reserve := func(w time.Duration) (limit.Reservation, error) {
			return x.s.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "198.51.100.7", Now: time.Now(),
				Budget: limit.Budget{PerSubject: 100, PerAddress: 3, Window: w, Trust: trust}})
		}
		for i := range 3 {
			res, err := reserve(10 * window)
			if err != nil {
				t.Fatalf("attempt %d: %v", i, err)
			}
			res.Failed()
		}
		var no *limit.Refusal
		if res, err := reserve(window); res != nil || !errors.As(err, &no) {
			t.Fatalf("under the shorter window: %v, %v; want refused", res, err)
		}
	}},
	{"a budget that is not positive is an error, not a refusal", func(t *testing.T, x tester) {
		for _, b := range []limit.Budget{{}, {PerSubject: 1, PerAddress: 1, Trust: trust}, {PerSubject: -1, PerAddress: 1, Window: window, Trust: trust}, {PerSubject: 1, PerAddress: 1, Window: window}} {
			res, err := x.s.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "198.51.100.7", Budget: b, Now: time.Now()})
			var no *limit.Refusal
			if res != nil || err == nil || errors.As(err, &no) || errors.Is(err, limit.ErrUnavailable) {
				t.Errorf("budget %+v: %v, %v; want Budget.Check's error", b, res, err)
			}
		}
	}},
}
