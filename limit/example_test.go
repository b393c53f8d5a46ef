package limit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/limit"
)

func ExampleMemory() {
	store := &limit.Memory{}                                     // 1 MiB: pass to issuer.WithLimiterStore or SCIMConfig.Store
	budget := limit.Config{FailedAttemptsPerAddress: 2}.Budget() // as the issuer and SCIMAuth send it
	for range 3 {
		res, err := store.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: "203.0.113.9", Budget: budget, Now: time.Now()})
		var no *limit.Refusal
		if errors.As(err, &no) {
			fmt.Println("refused by", no.Limit, "for", no.RetryAfterSeconds(), "s")
			continue
		}
		res.Failed() // the secret was wrong
		fmt.Println("verified")
	}
	fmt.Println(store.Bytes(), "bytes")
	// Output:
	// verified
	// verified
	// refused by address for 30 s
	// 1048576 bytes
}

// counting is a Store of your own: here, one that counts what another
// decides, for a metric.
type counting struct {
	limit.Store
	refused atomic.Uint64
}

func (c *counting) Reserve(ctx context.Context, r limit.Request) (limit.Reservation, error) {
	res, err := c.Store.Reserve(ctx, r)
	if err != nil {
		c.refused.Add(1)
	}
	return res, err
}

func ExampleStore() {
	store := &counting{Store: &limit.Memory{MaxBytes: 64 << 10}}
	budget := limit.Budget{PerSubject: 1, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}
	for _, addr := range []string{"203.0.113.9", "203.0.113.9", "198.51.100.7"} {
		res, err := store.Reserve(context.Background(), limit.Request{Subject: "payroll", Address: addr, Budget: budget, Now: time.Now()})
		if err != nil {
			continue
		}
		if addr == "198.51.100.7" {
			res.Succeeded() // the right secret, from an address that had not failed
		} else {
			res.Failed()
		}
	}
	fmt.Println(store.refused.Load(), "refused")
	// Output: 1 refused
}

func ExampleMemory_Remember() {
	store := &limit.Memory{MaxBytes: 64 << 10}
	now := time.Now()
	use := limit.Replay{Subject: "payroll", ID: "4f1c0a9e", Until: now.Add(5 * time.Minute), Now: now}
	for range 2 {
		fresh, err := store.Remember(context.Background(), use)
		fmt.Println(fresh, err)
	}
	// Output:
	// true <nil>
	// false <nil>
}
