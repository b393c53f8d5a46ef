package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetryAfterHoldsBackAtMostTheBound: after a 429 with Retry-After:
// 315360000, no token request is made while the client's clock is within
// MaxRetryAfter of it, and the first call after the bound asks again (and
// gets its token). Counted in token requests, on a clock the test moves.
func TestRetryAfterHoldsBackAtMostTheBound(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "315360000")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":"slow_down"}`)
			return
		}
		io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
	}))
	defer srv.Close()
	cfg := Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: srv.URL}
	tk := cfg.newTokens(context.Background(), nil)
	now := time.Unix(1_800_000_000, 0)
	tk.now = func() time.Time { return now }

	if _, err := tk.current(context.Background()); err == nil {
		t.Fatal("the 429 gave a token")
	}
	for _, after := range []time.Duration{time.Second, time.Minute, MaxRetryAfter - time.Second} {
		now = time.Unix(1_800_000_000, 0).Add(after)
		if _, err := tk.current(context.Background()); err == nil {
			t.Fatalf("%v after the 429: a token, want the remembered failure", after)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d token requests within MaxRetryAfter of the 429, want 1", n)
	}
	now = time.Unix(1_800_000_000, 0).Add(MaxRetryAfter + time.Second)
	if tok, err := tk.current(context.Background()); err != nil || tok.AccessToken != "tok" {
		t.Fatalf("after MaxRetryAfter: %v, %v; want a new request and its token", tok, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d token requests in all, want 2", n)
	}
}
