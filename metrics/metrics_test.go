package metrics_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/metrics"
	"github.com/idsauth/idsauth/observe"
)

// TestObserveWhileWriting counts from many goroutines while the metrics
// are written (run with -race), and the totals come out exact.
func TestObserveWhileWriting(t *testing.T) {
	m := metrics.New()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				m.Observe(context.Background(), observe.Event{Kind: observe.TokenIssued, ClientID: "c", Scopes: []string{"pd_AdminWebApi"}, Duration: time.Millisecond})
				m.Observe(context.Background(), observe.Event{Kind: observe.TokenRefused, Reason: "slow_down", Status: 429, Limit: "address"})
			}
		}()
	}
	for i := 0; i < 20; i++ {
		var b strings.Builder
		if _, err := m.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	var b strings.Builder
	m.WriteTo(&b)
	out := b.String()
	for _, want := range []string{
		`idsauth_tokens_issued_total{client_id="c",scope="pd_AdminWebApi"} 4000`,
		`idsauth_tokens_refused_total{client_id="",reason="slow_down",status="429"} 4000`,
		`idsauth_limiter_refusals_total{endpoint="token",limit="address"} 4000`,
		`idsauth_token_request_duration_seconds_bucket{outcome="issued",le="0.001"} 4000`,
		`idsauth_token_request_duration_seconds_bucket{outcome="issued",le="0.0005"} 0`,
		`idsauth_token_request_duration_seconds_count{outcome="issued"} 4000`,
		`idsauth_token_request_duration_seconds_sum{outcome="issued"} 4`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	// A family without a series is not written: no validator here.
	if strings.Contains(out, "idsauth_validations_total") || strings.Contains(out, "idsauth_jwks_keys") {
		t.Errorf("families with no series were written:\n%s", out)
	}
}
