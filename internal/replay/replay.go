// Package replay remembers the IDs of one-time credentials (the jti of a
// client assertion) in memory fixed in bytes, until each expires, so that
// each is accepted once (RFC 7523 §3, item 7). The issuer keeps one of its
// own; limit.Memory keeps one for its Remember.
package replay

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// EntryBytes is what one remembered ID costs.
const EntryBytes = 16

// ways is the number of entries per set.
const ways = 8

// Cache remembers IDs. Its memory is fixed in bytes: a subject and ID are
// hashed with a per-cache random seed to 64 bits, and entries live in a
// set-associative table allocated once. An entry is never dropped before
// it expires: when its set is full, the ID is refused (the caller may
// retry once an entry frees), rather than a live ID forgotten and a
// replay let in. Callers add an ID only once the credential it belongs to
// has been verified, so that someone without a key cannot add any.
type Cache struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries []entry
	setMask uint64
}

// entry is one remembered ID: its hash, and until when (Unix nanoseconds)
// it must be refused. An entry with until <= now is free.
type entry struct {
	key   uint64
	until int64
}

// New returns a cache of at most bytes (at least one set).
func New(bytes int) *Cache {
	return newSeed(bytes, maphash.MakeSeed())
}

func newSeed(bytes int, seed maphash.Seed) *Cache {
	n := sets(bytes)
	return &Cache{seed: seed, entries: make([]entry, n*ways), setMask: uint64(n - 1)}
}

// sets is the number of sets of a cache of bytes: a power of two, at most
// asked, at least one.
func sets(bytes int) int {
	n := max(1, bytes/(EntryBytes*ways))
	return 1 << (bits.Len(uint(n)) - 1)
}

// BytesFor is the memory New(bytes) allocates.
func BytesFor(bytes int) int { return sets(bytes) * ways * EntryBytes }

// Bytes is the memory of the table, fixed at creation.
func (c *Cache) Bytes() int { return len(c.entries) * EntryBytes }

// Resized returns a cache of bytes holding c's live entries, for a reload
// that changes the size: an ID accepted before it is still refused after.
// Entries that do not fit are dropped only when the new cache is smaller
// than what is live in their set.
func (c *Cache) Resized(bytes int, now time.Time) *Cache {
	n := newSeed(bytes, c.seed)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.until > now.UnixNano() {
			n.put(e.key, e.until, now.UnixNano())
		}
	}
	return n
}

// Live counts the entries that have not expired at now.
func (c *Cache) Live(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if e.until > now.UnixNano() {
			n++
		}
	}
	return n
}

func (c *Cache) hash(subject, id string) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	// The subject's length first, so that no two pairs hash the same text.
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(subject))))
	h.WriteString(subject)
	h.WriteString(id)
	return h.Sum64()
}

// Add remembers subject's id until until. It reports whether the id was
// new (false: a replay); when the id is new but its set has no free
// entry, full is how long until one frees, and nothing is remembered.
func (c *Cache) Add(subject, id string, until, now time.Time) (fresh bool, full time.Duration) {
	key := c.hash(subject, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	t := now.UnixNano()
	for _, e := range c.set(key) {
		if e.key == key && e.until > t {
			return false, 0
		}
	}
	if wait := c.put(key, until.UnixNano(), t); wait > 0 {
		return true, time.Duration(wait)
	}
	return true, 0
}

// put stores key in a free entry of its set, or returns how long until
// the first one frees (nanoseconds) when none is free.
func (c *Cache) put(key uint64, until, now int64) int64 {
	set := c.set(key)
	soonest := int64(0)
	for i := range set {
		if set[i].until <= now {
			set[i] = entry{key: key, until: until}
			return 0
		}
		if soonest == 0 || set[i].until < soonest {
			soonest = set[i].until
		}
	}
	return soonest - now
}

func (c *Cache) set(key uint64) []entry {
	i := (key & c.setMask) * ways
	return c.entries[i : i+ways]
}
