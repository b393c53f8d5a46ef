package tokenstore

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// DefaultMemoryBytes is the size of the issuer's own Memory when none is
// configured: 64 MiB, room for about 200,000 live grants (see Memory).
const DefaultMemoryBytes = 64 << 20

// Memory is the Store of one process. Its memory is bounded in bytes:
// each grant is charged what it holds (its strings and slices) plus a
// fixed overhead for the map entry and the expiry queue: about 310 bytes
// for a grant of the issuer's (one scope, one audience), which takes
// about 275 bytes of heap (TestMemoryChargesWhatItHolds measures both). A grant that finds no room after the expired
// ones are dropped is refused with ErrFull; a live grant is never
// forgotten. Expired grants are dropped by Put, oldest first, from a
// queue ordered by expiry: each Put drops what has expired by its grant's
// IssuedAt, so the work is paid by the Puts, a grant once, and no timer
// scans the store. Revoke drops a grant at once; its place in the queue
// (entryOverhead counts it) is given back when it would have expired.
type Memory struct {
	mu       sync.Mutex
	grants   map[Key]*entry
	queue    expiryQueue
	bytes    int // charged now
	maxBytes int
}

// entry is one grant in the store.
type entry struct {
	g     Grant
	bytes int
}

// entryOverhead is what a grant costs beside its own strings: the map's
// slot (key, pointer, and its share of buckets), the entry, the Grant's
// fixed fields and its place in the expiry queue.
const entryOverhead = 200

// NewMemory returns a Memory that holds at most maxBytes of grants; zero
// or less means DefaultMemoryBytes.
func NewMemory(maxBytes int) *Memory {
	if maxBytes <= 0 {
		maxBytes = DefaultMemoryBytes
	}
	return &Memory{grants: make(map[Key]*entry), maxBytes: maxBytes}
}

// grantBytes is what g is charged.
func grantBytes(g *Grant) int {
	n := entryOverhead + len(g.ClientID) + len(g.ID)
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
	e := &entry{g: g, bytes: grantBytes(&g)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropExpired(g.IssuedAt)
	if old, ok := m.grants[k]; ok { // the same token again: replaced
		m.bytes -= old.bytes - entryOverhead // its queue place stays charged
	}
	if m.bytes+e.bytes > m.maxBytes {
		return ErrFull
	}
	m.grants[k] = e
	m.bytes += e.bytes
	heap.Push(&m.queue, queued{exp: g.ExpiresAt, key: k})
	return nil
}

// dropExpired drops the grants that expired at or before now, and gives
// back the queue places of revoked ones.
func (m *Memory) dropExpired(now time.Time) {
	for len(m.queue) > 0 && !m.queue[0].exp.After(now) {
		q := heap.Pop(&m.queue).(queued)
		if e, ok := m.grants[q.key]; ok && e.g.ExpiresAt.Equal(q.exp) {
			delete(m.grants, q.key)
			m.bytes -= e.bytes
		} else {
			m.bytes -= entryOverhead // revoked or replaced: only its place was left
		}
	}
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, k Key, now time.Time) (Grant, bool, error) {
	m.mu.Lock()
	e, ok := m.grants[k]
	m.mu.Unlock()
	if !ok || !now.Before(e.g.ExpiresAt) {
		return Grant{}, false, nil
	}
	return e.g, true, nil
}

// Revoke implements Store.
func (m *Memory) Revoke(_ context.Context, k Key, clientID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.grants[k]
	if !ok || e.g.ClientID != clientID {
		return false, nil
	}
	delete(m.grants, k)
	m.bytes -= e.bytes - entryOverhead // its queue place stays charged until it expires
	return true, nil
}

// Stats reports the grants held and the bytes charged for them.
func (m *Memory) Stats() (grants, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.grants), m.bytes
}

// queued is a grant's place in the expiry queue.
type queued struct {
	exp time.Time
	key Key
}

// expiryQueue is a min-heap of grants by expiry.
type expiryQueue []queued

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].exp.Before(q[j].exp) }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *expiryQueue) Push(x any)        { *q = append(*q, x.(queued)) }
func (q *expiryQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
