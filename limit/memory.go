package limit

import (
	"context"
	"sync"
	"time"

	"github.com/idsauth/idsauth/internal/replay"
)

// entryBytes is what Memory pays for one remembered subject, address or
// pair.
const entryBytes = 16

// Memory is the in-memory Store, the default: the budgets of one process.
// Behind a load balancer, N replicas with a Memory each allow N times the
// budgets; share a Store between them instead. The zero value is a Memory
// of 1 MiB.
//
// Its memory is fixed in bytes, whatever the subjects look like: keys are
// hashed with a per-process random seed to 64 bits, and entries (16 bytes
// each) live in two set-associative tables allocated once, at its first
// use, one for the budgets and one for the pair marks, half the bytes
// each. When a set is full, the budget entry that frees up soonest is
// forgotten, so a flood of new keys forgets single failures before it
// forgets a locked-out key. A pair mark that still means something is
// never forgotten: when its set is full, a new address is refused (the
// subject's budget being spent) rather than a failure forgotten. So an
// attacker with more addresses than the table holds gets no more tries,
// only refusals.
//
// Memory is a ReplayStore: Remember keeps IDs in a third table, of a
// quarter of MaxBytes (at least 4 KiB), allocated at the first Remember
// so that a Memory that never remembers pays nothing for it. An ID that
// has not expired is never forgotten: when its set is full, Remember
// refuses.
type Memory struct {
	// MaxBytes is the memory of the budgets' tables, rounded down to a
	// power of two; at least 128. Zero means 1 MiB. It is read at the
	// first use: set it before.
	MaxBytes int

	once       sync.Once
	l          *limiter
	replayOnce sync.Once
	replay     *replay.Cache
}

// tables makes m's tables at its first use.
func (m *Memory) tables() *limiter {
	m.once.Do(func() { m.l = newLimiter(m.maxBytes()) })
	return m.l
}

func (m *Memory) maxBytes() int {
	if m.MaxBytes == 0 {
		return 1 << 20
	}
	return m.MaxBytes
}

// Bytes is the memory of m's budgets; Remember's table is ReplayBytes
// more.
func (m *Memory) Bytes() int { return m.tables().bytes() }

// ReplayBytes is the memory of Remember's table (16 bytes an ID),
// allocated at the first Remember.
func (m *Memory) ReplayBytes() int { return replay.BytesFor(m.replayBytes()) }

func (m *Memory) replayBytes() int { return max(4<<10, m.maxBytes()/4) }

func (m *Memory) replays() *replay.Cache {
	m.replayOnce.Do(func() { m.replay = replay.New(m.replayBytes()) })
	return m.replay
}

// Remember implements ReplayStore at r.Now; ctx is not used. Its only
// error is a *Refusal when r.ID's set holds only IDs that have not
// expired.
func (m *Memory) Remember(_ context.Context, r Replay) (bool, error) {
	fresh, full := m.replays().Add(r.Subject, r.ID, r.Until, r.Now)
	if fresh && full > 0 {
		return false, &Refusal{Limit: Replays, RetryAfter: full}
	}
	return fresh, nil
}

var _ ReplayStore = (*Memory)(nil)

// Reserve implements Store at r.Now (zero: time.Now); ctx is not used.
// Its only errors are a *Refusal, and Budget.Check's.
func (m *Memory) Reserve(_ context.Context, r Request) (Reservation, error) {
	if err := r.Budget.Check(); err != nil {
		return nil, err
	}
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	res, no := m.tables().reserve(r.Budget, r.Subject, r.Address, r.Now)
	if res == nil {
		return nil, &Refusal{Limit: no.Limit, RetryAfter: no.RetryAfter} // only a refusal allocates one
	}
	return res, nil
}
