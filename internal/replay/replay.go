// Package replay remembers the IDs of one-time credentials (the jti of a
// client assertion) in memory fixed in bytes, until each expires, so that
// each is accepted once (RFC 7523 §3, item 7). The issuer keeps one of its
// own; limit.Memory keeps one for its Remember.
package replay

import (
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
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
//
// A subject's IDs go to a window of an eighth of the sets, chosen by the
// subject: a client that holds its key and asks as fast as it can fills
// its own window, and refuses itself, but not the table, so the other
// clients keep getting tokens (those whose window overlaps its own lose
// only the overlap).
//
// Resize changes the table's size and forgets nothing either: what the
// new table has no room for is carried beside it until it expires.
type Cache struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries []entry
	setMask uint64
	// carried are the live entries a Resize had no room for, sorted by
	// key and only read, until carriedUntil, when the last one expires.
	carried      []entry
	carriedUntil uint32
}

// entry is one remembered ID: its hash, its subject's hash (to find its
// window again when the cache is resized), and until when, in whole Unix
// seconds rounded up, it must be refused. An entry with until <= now is
// free. 16 bytes.
type entry struct {
	key     uint64
	subject uint32
	until   uint32
}

// windowSets is how many sets a subject's IDs may use: an eighth of the
// table, at least one.
func (c *Cache) windowSets() uint64 { return max(1, (c.setMask+1)/8) }

// seconds is t in whole Unix seconds, rounded up: a remembered ID is never
// forgotten early. Times before 1970 or after 2106 are clamped.
func seconds(t int64) uint32 {
	s := (t + 999_999_999) / 1_000_000_000
	return uint32(min(max(s, 0), 1<<32-1))
}

// New returns a cache of at most bytes (at least one set).
func New(bytes int) *Cache {
	n := sets(bytes)
	return &Cache{seed: maphash.MakeSeed(), entries: make([]entry, n*ways), setMask: uint64(n - 1)}
}

// sets is the number of sets of a cache of bytes: a power of two, at most
// asked, at least one.
func sets(bytes int) int {
	n := max(1, bytes/(EntryBytes*ways))
	return 1 << (bits.Len(uint(n)) - 1)
}

// BytesFor is the memory New(bytes) allocates.
func BytesFor(bytes int) int { return sets(bytes) * ways * EntryBytes }

// Bytes is the memory the cache holds: its table, fixed by New or
// Resize, and the entries a Resize carried beside it until they expire.
func (c *Cache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (len(c.entries) + len(c.carried)) * EntryBytes
}

// Resize gives the cache a table of bytes (as New rounds them), for a
// reload that changes the size, and forgets no live ID: one accepted
// before is refused after, until it expires. The live IDs the new table
// has no room for (it is smaller, or a subject's window shrank) are
// carried beside it, read-only, EntryBytes each, until the last of them
// expires (at most the longest life of a credential); new IDs go into
// the table only. So a reload never fails for the IDs it must keep, and
// the cache holds the new size plus at most what the old one held, until
// those IDs expire.
//
// An Add while it runs waits for it, so that no ID lands in the old table
// once its entries are moved.
func (c *Cache) Resize(bytes int, now time.Time) {
	n := sets(bytes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n*ways == len(c.entries) {
		return
	}
	t := nowSeconds(now)
	old, carried := c.entries, c.carried
	live := 0
	for _, from := range [][]entry{old, carried} {
		for _, e := range from {
			if e.until > t {
				live++
			}
		}
	}
	c.entries, c.setMask = make([]entry, n*ways), uint64(n-1)
	left := make([]entry, 0, live)
	for _, from := range [][]entry{old, carried} {
		for _, e := range from {
			if e.until > t && c.put(e, t) > 0 {
				left = append(left, e)
			}
		}
	}
	c.carried, c.carriedUntil = nil, 0
	if len(left) > 0 {
		c.carried = make([]entry, len(left)) // no more than is carried: live may be far more
		copy(c.carried, left)
		slices.SortFunc(c.carried, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
		for _, e := range c.carried {
			c.carriedUntil = max(c.carriedUntil, e.until)
		}
	}
}

// isCarried reports whether key is among the carried entries live at
// now, with c.mu held. It lets the carried entries go once every one has
// expired.
func (c *Cache) isCarried(key uint64, now uint32) bool {
	if c.carriedUntil <= now {
		c.carried, c.carriedUntil = nil, 0
		return false
	}
	i, _ := slices.BinarySearchFunc(c.carried, key, func(e entry, k uint64) int { return cmp.Compare(e.key, k) })
	for ; i < len(c.carried) && c.carried[i].key == key; i++ {
		if c.carried[i].until > now {
			return true
		}
	}
	return false
}

// nowSeconds is now in whole Unix seconds, rounded down: an entry whose
// until is in this second is still live.
func nowSeconds(now time.Time) uint32 {
	return uint32(min(max(now.Unix(), 0), 1<<32-1))
}

// Live counts the entries that have not expired at now.
func (c *Cache) Live(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, t := 0, nowSeconds(now)
	for _, from := range [][]entry{c.entries, c.carried} {
		for _, e := range from {
			if e.until > t {
				n++
			}
		}
	}
	return n
}

// hash returns the key of subject's id, and the hash of subject that
// places its window.
func (c *Cache) hash(subject, id string) (key uint64, subj uint32) {
	var h maphash.Hash
	h.SetSeed(c.seed)
	// The subject's length first, so that no two pairs hash the same text.
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(subject))))
	h.WriteString(subject)
	subj = uint32(h.Sum64() >> 32)
	h.WriteString(id)
	return h.Sum64(), subj
}

// Add remembers subject's id until until. It reports whether the id was
// new (false: a replay); when the id is new but its set has no free
// entry, full is how long until one frees, and nothing is remembered.
func (c *Cache) Add(subject, id string, until, now time.Time) (fresh bool, full time.Duration) {
	key, subj := c.hash(subject, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	t := nowSeconds(now)
	for _, set := range c.sets(key, subj) {
		for _, e := range set {
			if e.key == key && e.until > t {
				return false, 0
			}
		}
	}
	if c.carried != nil && c.isCarried(key, t) {
		return false, 0
	}
	if wait := c.put(entry{key: key, subject: subj, until: seconds(until.UnixNano())}, t); wait > 0 {
		return true, time.Duration(wait) * time.Second
	}
	return true, 0
}

// put stores e in a free entry of the emptier of its two sets, or returns
// how long until the first entry frees (seconds, at least 1) when neither
// has one.
func (c *Cache) put(e entry, now uint32) uint32 {
	var best []entry
	bestFree, soonest := 0, uint32(0)
	for _, set := range c.sets(e.key, e.subject) {
		free := 0
		for i := range set {
			if set[i].until <= now {
				free++
			} else if soonest == 0 || set[i].until < soonest {
				soonest = set[i].until
			}
		}
		if free > bestFree {
			best, bestFree = set, free
		}
	}
	if best == nil {
		return max(1, soonest-now)
	}
	for i := range best {
		if best[i].until <= now {
			best[i] = e
			break
		}
	}
	return 0
}

// sets returns the two sets key may be in, within the window of its
// subject: two choices keep the fullest set of a window close to the
// window's average, so a subject meets a full set only when its window
// nearly is.
func (c *Cache) sets(key uint64, subj uint32) [2][]entry {
	w := c.windowSets()
	at := func(offset uint64) []entry {
		i := ((uint64(subj) + offset%w) & c.setMask) * ways
		return c.entries[i : i+ways]
	}
	return [2][]entry{at(key), at(key >> 32)}
}
