package issuer

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// replayEntryBytes is what one remembered jti costs.
const replayEntryBytes = 16

// replayWays is the number of entries per set of the replay cache.
const replayWays = 8

// replayCache remembers the jti of each accepted client assertion until
// the assertion expires, so that it is accepted once (RFC 7523 §3, item
// 7). Its memory is fixed in bytes: a client ID and jti are hashed with a
// per-cache random seed to 64 bits, and entries live in a set-associative
// table allocated once. An entry is added only after the assertion's
// signature and claims have been checked, so someone without a client's
// key cannot add any. An entry is never dropped before it expires: when
// its set is full, the assertion is refused (the caller may retry once an
// entry frees), rather than a live jti forgotten and a replay let in.
type replayCache struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries []replayEntry
	setMask uint64
}

// replayEntry is one remembered jti: its hash, and until when (Unix
// nanoseconds) it must be refused. An entry with until <= now is free.
type replayEntry struct {
	key   uint64
	until int64
}

// newReplayCache returns a cache of at most bytes (at least one set).
func newReplayCache(bytes int) *replayCache {
	return newReplayCacheSeed(bytes, maphash.MakeSeed())
}

func newReplayCacheSeed(bytes int, seed maphash.Seed) *replayCache {
	sets := max(1, bytes/(replayEntryBytes*replayWays))
	sets = 1 << (bits.Len(uint(sets)) - 1) // a power of two, at most asked
	return &replayCache{seed: seed, entries: make([]replayEntry, sets*replayWays), setMask: uint64(sets - 1)}
}

// Bytes is the memory of the table, fixed at creation.
func (c *replayCache) Bytes() int { return len(c.entries) * replayEntryBytes }

// resized returns a cache of bytes holding c's live entries, for a reload
// that changes the size: a jti accepted before it is still refused after.
// Entries that do not fit are dropped only when the new cache is smaller
// than what is live in their set.
func (c *replayCache) resized(bytes int, now time.Time) *replayCache {
	n := newReplayCacheSeed(bytes, c.seed)
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
func (c *replayCache) Live(now time.Time) int {
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

func (c *replayCache) hash(client, jti string) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(client)
	h.WriteByte(0)
	h.WriteString(jti)
	return h.Sum64()
}

// add remembers client's jti until until. It reports whether the jti was
// new (false: a replay); when the jti is new but its set has no free
// entry, full is how long until one frees, and nothing is remembered.
func (c *replayCache) add(client, jti string, until, now time.Time) (fresh bool, full time.Duration) {
	key := c.hash(client, jti)
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
func (c *replayCache) put(key uint64, until, now int64) int64 {
	set := c.set(key)
	soonest := int64(0)
	for i := range set {
		if set[i].until <= now {
			set[i] = replayEntry{key: key, until: until}
			return 0
		}
		if soonest == 0 || set[i].until < soonest {
			soonest = set[i].until
		}
	}
	return soonest - now
}

func (c *replayCache) set(key uint64) []replayEntry {
	i := (key & c.setMask) * replayWays
	return c.entries[i : i+replayWays]
}
