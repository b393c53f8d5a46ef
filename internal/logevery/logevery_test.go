package logevery

import (
	"testing"
	"time"
)

// TestAllow: the first event gets its line, the others within Interval
// are held back and counted, the first one after gets its line with the
// count.
func TestAllow(t *testing.T) {
	var l Limiter
	now := time.Unix(1_800_000_000, 0)
	if ok, held := l.Allow(now); !ok || held != 0 {
		t.Fatalf("the first: %v %d", ok, held)
	}
	for i := range 5 {
		if ok, _ := l.Allow(now.Add(time.Duration(i) * time.Second)); ok {
			t.Fatalf("event %d within the interval got its line", i)
		}
	}
	if ok, held := l.Allow(now.Add(Interval)); !ok || held != 5 {
		t.Fatalf("after the interval: %v %d, want true 5", ok, held)
	}
}
