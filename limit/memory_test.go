package limit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/limit/limittest"
)

func TestMemoryKeepsTheRules(t *testing.T) {
	limittest.Run(t, func(*testing.T) limit.Store { return &limit.Memory{} })
}

func TestMemoryRemembers(t *testing.T) {
	limittest.RunReplay(t, func(*testing.T) limit.ReplayStore { return &limit.Memory{} })
}

// Remember's table is fixed in bytes: more live IDs than it holds are
// refused with a *Refusal (Limit Replays) and a Retry-After, never made
// room for by forgetting a live one; once they expire, there is room.
func TestMemoryRememberIsFixedInBytes(t *testing.T) {
	m := &limit.Memory{MaxBytes: 16 << 10}
	if got := m.ReplayBytes(); got != 4096 {
		t.Fatalf("ReplayBytes = %d, want a quarter of 16 KiB", got)
	}
	now := time.Unix(1_800_000_000, 0)
	until := now.Add(5 * time.Minute)
	var kept []string
	refused := 0
	for i := range 400 { // 4096 bytes hold 256 IDs
		id := fmt.Sprint("jti-", i)
		fresh, err := m.Remember(context.Background(), limit.Replay{Subject: "payroll", ID: id, Until: until, Now: now})
		var no *limit.Refusal
		switch {
		case fresh && err == nil:
			kept = append(kept, id)
		case !fresh && errors.As(err, &no) && no.Limit == limit.Replays && no.RetryAfter == 5*time.Minute:
			refused++
		default:
			t.Fatalf("ID %d: %v, %v; want fresh, or refused until the first entry of its set frees", i, fresh, err)
		}
	}
	if len(kept) > 256 || refused == 0 || len(kept)+refused != 400 {
		t.Fatalf("%d remembered and %d refused of 400, want at most 256 remembered", len(kept), refused)
	}
	for _, id := range kept {
		if fresh, err := m.Remember(context.Background(), limit.Replay{Subject: "payroll", ID: id, Until: until, Now: now.Add(time.Minute)}); fresh || err != nil {
			t.Fatalf("%s was forgotten to make room: %v, %v", id, fresh, err)
		}
	}
	later := until.Add(time.Second)
	for _, id := range kept {
		if fresh, err := m.Remember(context.Background(), limit.Replay{Subject: "payroll", ID: id, Until: later.Add(time.Minute), Now: later}); !fresh || err != nil {
			t.Fatalf("%s once its Until has passed: %v, %v; want fresh", id, fresh, err)
		}
	}
	if got := m.ReplayBytes(); got != 4096 {
		t.Fatalf("ReplayBytes grew to %d", got)
	}
}

// The budget comes with each request, so a reload applies at once; what
// is charged is time (a failure costs Window/PerAddress), so failures
// charged under a smaller budget refill at their own pace.
func TestMemoryTakesTheBudgetOfEachRequest(t *testing.T) {
	m := &limit.Memory{MaxBytes: 64 << 10}
	now := time.Unix(1_800_000_000, 0)
	req := limit.Request{Subject: "payroll", Address: "198.51.100.7", Now: now, Budget: limit.Budget{PerSubject: 100, PerAddress: 2, Window: time.Minute, Trust: 24 * time.Hour}}
	for range 2 {
		res, err := m.Reserve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		res.Failed()
	}
	_, err := m.Reserve(context.Background(), req)
	var no *limit.Refusal
	if !errors.As(err, &no) || no.Limit != limit.Address || no.RetryAfter != 30*time.Second || no.RetryAfterSeconds() != 30 {
		t.Fatalf("3rd attempt with a budget of 2: %v, want refused by the address for 30s", err)
	}
	req.Budget.PerAddress = 3
	if _, err := m.Reserve(context.Background(), req); !errors.As(err, &no) || no.RetryAfter != 20*time.Second {
		t.Fatalf("3rd attempt with a budget of 3: %v, want refused for 20s (60s charged, a failure is 20s)", err)
	}
	if _, err := m.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "198.51.100.8", Now: now, Budget: req.Budget}); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestRefusalIsAnError(t *testing.T) {
	var err error = &limit.Refusal{Limit: limit.SubjectAddress, RetryAfter: 1500 * time.Millisecond}
	if err.Error() != "limit: too many failed attempts (subject+address), retry after 1.5s" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if s := err.(*limit.Refusal).RetryAfterSeconds(); s != 2 {
		t.Fatalf("RetryAfterSeconds = %d", s)
	}
}

// A zero Now is time.Now: budgets charged with it refill as time passes.
// (Counted as no clock's reading, it would hold the clock still: nothing
// would ever refill.)
func TestMemoryZeroNowIsNow(t *testing.T) {
	m := &limit.Memory{}
	b := limit.Budget{PerSubject: 100, PerAddress: 1, Window: 20 * time.Millisecond, Trust: 24 * time.Hour}
	reserve := func() (limit.Reservation, error) {
		return m.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "198.51.100.7", Budget: b})
	}
	res, err := reserve()
	if err != nil {
		t.Fatal(err)
	}
	res.Failed()
	if _, err := reserve(); err == nil {
		t.Fatal("the spent address was not refused")
	}
	deadline := time.Now().Add(10 * time.Second) // the budget refills after 20 ms; allow a loaded machine
	for {
		time.Sleep(5 * time.Millisecond)
		if res, err := reserve(); err == nil {
			res.Failed()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a budget charged with a zero Now never refilled")
		}
	}
}

// TestReserveAllocatesOnlyItsReservation: a reservation that is granted
// costs the Reservation it returns, nothing more; only a refusal makes a
// *Refusal (the token endpoint's allocations are counted: see benchmarks).
func TestReserveAllocatesOnlyItsReservation(t *testing.T) {
	m := &limit.Memory{}
	req := limit.Request{Subject: "payroll", Address: "198.51.100.7", Budget: limit.Config{}.Budget(), Now: time.Unix(1_800_000_000, 0)}
	if n := testing.AllocsPerRun(100, func() {
		res, err := m.Reserve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		res.Succeeded()
	}); n != 1 {
		t.Errorf("a granted reservation made %v allocations, want 1", n)
	}
}
