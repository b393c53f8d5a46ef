package tokenstore

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is the Store of one process; the zero value is a Memory of
// 64 MiB, room for about 200,000 live grants. Its memory is bounded in bytes:
// each grant is charged what it holds (its strings and slices) plus a
// fixed overhead for the map entry and the expiry queue: about 310 bytes
// for a grant of the issuer's (one scope, one audience), which takes
// about 275 bytes of heap (TestMemoryChargesWhatItHolds measures both).
//
// A grant that finds no room after the expired ones are dropped is
// refused with ErrFull; a live grant is never forgotten. No client holds
// more than a quarter of the bytes (ErrClientFull), so that one client
// asking for tokens as fast as it can, or in a loop by mistake, leaves
// the other three quarters to the others. The share is a registration's
// (a client ID under one Grant.Epoch): a client registered again, or
// left with none of its secrets, has a share of its own at once, while
// the grants of the one that ended, which never answer active again,
// are charged to the store until they expire.
//
// Expired grants are dropped by Put, oldest first, from a queue ordered
// by expiry: each Put drops what has expired by its grant's IssuedAt, so
// the work is paid by the Puts, a grant once, and no timer scans the
// store. Revoke drops a grant and its place in the queue at once.
type Memory struct {
	// MaxBytes bounds the grants held, in bytes charged. Zero means
	// 64 MiB.
	MaxBytes int

	mu        sync.Mutex
	grants    map[Key]*entry
	queue     expiryQueue
	bytes     int           // charged now
	perClient map[share]int // charged now, by registration
	epochs    map[string]uint64
}

// entry is one grant in the store, and its place in the queue.
type entry struct {
	g     Grant
	key   Key
	bytes int
	index int // in the queue
}

// share is whose share a grant is charged to: its client's registration.
type share struct {
	client string
	epoch  uint64
}

func shareOf(g *Grant) share { return share{g.ClientID, g.Epoch} }

// entryOverhead is what a grant costs beside its own strings: the map's
// slot (key, pointer, and its share of buckets), the entry, the Grant's
// fixed fields and its place in the expiry queue.
const entryOverhead = 200

// ErrClientFull is the error of a Put for a client (under its epoch)
// that holds a quarter of a Memory's bytes already. errors.Is(ErrClientFull, ErrFull) holds.
var ErrClientFull = fmt.Errorf("%w: the client holds its share (a quarter)", ErrFull)

// grantBytes is what g is charged.
func grantBytes(g *Grant) int {
	n := entryOverhead + len(g.ClientID) + len(g.ID) + len(g.JKT) + len(g.X5T)
	for _, s := range g.Scopes {
		n += 16 + len(s)
	}
	for _, s := range g.Audience {
		n += 16 + len(s)
	}
	return n
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, k Key, g Grant) error {
	e := &entry{g: g, key: k, bytes: grantBytes(&g)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grants == nil {
		m.grants, m.perClient = make(map[Key]*entry), make(map[share]int)
	}
	maxBytes := m.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	m.dropExpired(g.IssuedAt)
	old := m.grants[k] // the same token again: replaced, if the new one fits
	freed, freedClient := 0, 0
	if old != nil {
		freed = old.bytes
		if shareOf(&old.g) == shareOf(&g) {
			freedClient = old.bytes
		}
	}
	switch {
	case m.bytes-freed+e.bytes > maxBytes:
		return ErrFull
	case m.perClient[shareOf(&g)]-freedClient+e.bytes > maxBytes/4:
		return ErrClientFull
	}
	if old != nil {
		m.remove(old)
	}
	m.grants[k] = e
	m.charge(shareOf(&g), e.bytes)
	heap.Push(&m.queue, e)
	return nil
}

// charge adds n bytes (or takes them back, n < 0) to share s.
func (m *Memory) charge(s share, n int) {
	m.bytes += n
	if m.perClient[s] += n; m.perClient[s] == 0 {
		delete(m.perClient, s)
	}
}

// remove forgets e, its queue place and its bytes.
func (m *Memory) remove(e *entry) {
	delete(m.grants, e.key)
	heap.Remove(&m.queue, e.index)
	m.charge(shareOf(&e.g), -e.bytes)
}

// dropExpired drops the grants that expired at or before now.
func (m *Memory) dropExpired(now time.Time) {
	for len(m.queue) > 0 && !m.queue[0].g.ExpiresAt.After(now) {
		m.remove(m.queue[0])
	}
}

// Get implements Store. The grant's Scopes and Audience are the stored
// ones: read them, never change them.
func (m *Memory) Get(_ context.Context, k Key, now time.Time) (Grant, bool, error) {
	m.mu.Lock()
	e, ok := m.grants[k]
	var g Grant
	if ok {
		g = e.g
	}
	m.mu.Unlock()
	if !ok || !now.Before(g.ExpiresAt) {
		return Grant{}, false, nil
	}
	return g, true, nil
}

// Revoke implements Store.
func (m *Memory) Revoke(_ context.Context, k Key, clientID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.grants[k]
	if !ok || e.g.ClientID != clientID {
		return false, nil
	}
	m.remove(e)
	return true, nil
}

// Epochs implements Epochs. The epochs are those of the issuer's clients,
// named by its configuration: they are not charged to MaxBytes.
func (m *Memory) Epochs(_ context.Context, ids []string) ([]uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = m.epochs[id]
	}
	return out, nil
}

// AdvanceEpoch implements Epochs.
func (m *Memory) AdvanceEpoch(_ context.Context, id string, from, to uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.epochs[id] != from {
		return nil
	}
	if m.epochs == nil {
		m.epochs = make(map[string]uint64)
	}
	m.epochs[id] = to
	return nil
}

// Stats reports the grants held and the bytes charged for them.
func (m *Memory) Stats() (grants, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.grants), m.bytes
}

// expiryQueue is a min-heap of grants by expiry; each entry knows its
// index, so that a revoked one leaves at once.
type expiryQueue []*entry

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].g.ExpiresAt.Before(q[j].g.ExpiresAt) }
func (q expiryQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *expiryQueue) Push(x any) {
	e := x.(*entry)
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *expiryQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}
