package limit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/limit/limittest"
)

func TestMemoryKeepsTheRules(t *testing.T) {
	limittest.Run(t, func(*testing.T) limit.Store { return limit.NewMemory(limit.DefaultMemoryBytes) })
}

// The budget comes with each request, so a reload applies at once; what
// is charged is time (a failure costs Window/PerAddress), so failures
// charged under a smaller budget refill at their own pace.
func TestMemoryTakesTheBudgetOfEachRequest(t *testing.T) {
	m := limit.NewMemory(64 << 10)
	now := time.Unix(1_800_000_000, 0)
	req := limit.Request{Subject: "payroll", Address: "198.51.100.7", Now: now, Budget: limit.Budget{PerSubject: 100, PerAddress: 2, Window: time.Minute}}
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
