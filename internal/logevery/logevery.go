// Package logevery bounds how often a log line is written: a line whose
// event a caller can repeat at will (a client asking in a loop, every
// request while a store is down) is written at most once per interval,
// with the count of the events held back since, so that nobody can fill
// the log, and the operator still learns how often it happened.
package logevery

import (
	"sync/atomic"
	"time"
)

// Interval is the least time between two lines of one Limiter.
const Interval = 10 * time.Second

// Limiter lets one line be written at most once per Interval. The zero
// value is ready; it is safe for concurrent use.
type Limiter struct {
	last atomic.Int64  // Unix nanoseconds of the last line; 0: none yet
	held atomic.Uint64 // events since the last line, not logged
}

// Allow reports whether the event at now gets its line, and how many
// events were held back since the last one.
func (l *Limiter) Allow(now time.Time) (bool, uint64) {
	last := l.last.Load()
	if now.UnixNano()-last < int64(Interval) || !l.last.CompareAndSwap(last, now.UnixNano()) {
		l.held.Add(1)
		return false, 0
	}
	return true, l.held.Swap(0)
}
