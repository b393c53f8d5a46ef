package issuer

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/secret"
)

// repeatWays is the number of entries per set of a repeatTable, and
// repeatEntryBytes what one entry costs.
const (
	repeatWays       = 4
	repeatEntryBytes = 16
)

// repeatTable remembers, for a window, which credentials failed from which
// address, so that the same credential failing again from the same
// address is not charged again. A caller that sends a wrong secret twice
// (x/oauth2's AuthStyleAutoDetect tries the Authorization header, then the
// body) or runs again with the same wrong secret learns nothing new from
// the second failure, and should not spend a budget meant to count
// guesses.
//
// A credential is kept as an HMAC-SHA256, under a key made at random for
// each repeatTable, of the subject, the secret hashes it was checked
// against, the secret and the address, truncated to 96 bits: a change of
// the subject's secrets (a reload, a registry's change, a subject that
// comes to exist) makes its remembered failures no repeats, so the table
// outlives every change of the issuer's state. It is never the secret, never the secret, and nothing that can be matched without the
// key. The address is part of it so that a repeat says nothing about what
// was sent from elsewhere: a secret that failed from another address is
// charged as any guess.
//
// Memory is fixed in bytes: entries of repeatEntryBytes in a set-associative
// table allocated once. When a set is full, the entry that expires first
// is replaced: a forgotten failure is charged again when repeated, so
// fullness never makes a guess free. It is safe for concurrent use.
//
// Beside the table, a filter of 4 bytes per entry says, for a subject and
// an address, until when some secret of theirs is remembered as failed
// (the latest such time of every pair hashed to the same slot, by a
// seeded maphash). An Attempt reads it first: from a pair that failed
// nothing within the window, which is every request of a client that
// gives its right secret, the secret is not hashed at all. The filter
// only ever answers "maybe" for a pair whose failure the table holds, so
// it changes no answer, only who pays for the HMAC.
type repeatTable struct {
	key  [32]byte
	macs sync.Pool // of *repeatMAC
	seed maphash.Seed
	// pairs is the filter: until when (Unix seconds) a pair hashed to
	// each slot may have a failure in the table. Written under mu, read
	// without it.
	pairs []atomic.Uint32
	// marks counts the HMACs computed, for tests that count work.
	marks atomic.Int64

	mu      sync.Mutex
	entries []repeatEntry
	setMask uint64
}

// repeat is one failed credential: 96 bits of its HMAC, and until when,
// in Unix seconds, it counts as failed. An entry with until <= now is
// free. 16 bytes.
type repeatEntry struct {
	key   uint64
	check uint32
	until uint32
}

// repeatMAC is an HMAC and the buffers one Mark needs, reused so that a
// Mark allocates nothing.
type repeatMAC struct {
	mac hash.Hash
	in  []byte
	sum []byte
}

// credential is a credential as repeatTable keys it. The zero credential is
// never Failed.
type credential struct {
	key   uint64
	check uint32
}

// newRepeatTable returns a repeatTable whose table holds bytes, rounded down to a
// power of two; at least one set.
func newRepeatTable(bytes int) *repeatTable {
	sets := max(1, bytes/(repeatEntryBytes*repeatWays))
	sets = 1 << (bits.Len(uint(sets)) - 1)
	r := &repeatTable{entries: make([]repeatEntry, sets*repeatWays), setMask: uint64(sets - 1), seed: maphash.MakeSeed(), pairs: make([]atomic.Uint32, sets*repeatWays)}
	_, _ = rand.Read(r.key[:]) // never fails (crypto/rand)
	r.macs.New = func() any {
		return &repeatMAC{mac: hmac.New(sha256.New, r.key[:]), sum: make([]byte, 0, sha256.Size)}
	}
	return r
}

// Bytes is the memory of the table, fixed at newRepeatTable; its filter
// takes a quarter of that again.
func (r *repeatTable) Bytes() int { return len(r.entries) * repeatEntryBytes }

// Marks is how many credentials Mark has hashed: the HMACs computed.
func (r *repeatTable) Marks() int64 { return r.marks.Load() }

// repeatAttempt is one secret given for a subject from an address, as the table
// sees it: its credential is computed only when needed. Use one per
// check of a secret, on the stack.
type repeatAttempt struct {
	r                     *repeatTable
	subject, secret, addr string
	against               []secret.Hash // the subject's hashes, nil for none
	slot                  uint32        // in the filter
	cred                  credential
}

// Attempt returns the attempt of secret for subject, whose secret hashes
// are against, from addr. It hashes the subject and the address (a seeded
// maphash), never the secret.
func (r *repeatTable) Attempt(subject string, against []secret.Hash, secret, addr string) repeatAttempt {
	var h maphash.Hash
	h.SetSeed(r.seed)
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(subject)))) // no two pairs hash the same text
	h.WriteString(subject)
	h.WriteString(addr)
	return repeatAttempt{r: r, subject: subject, against: against, secret: secret, addr: addr, slot: uint32(h.Sum64() % uint64(len(r.pairs)))}
}

// Repeated reports whether the attempt's secret failed for its subject
// from its address within the window, at now, as Failed does. Unless some
// secret of that subject from that address may have failed within it, it
// computes no HMAC.
func (a *repeatAttempt) Repeated(now time.Time) bool {
	if a.r.pairs[a.slot].Load() <= unixSeconds(now) {
		return false
	}
	return a.r.Failed(a.credential(), now)
}

// Failed records that the attempt's secret failed, until until, as
// Remember does, and marks its subject and address in the filter.
func (a *repeatAttempt) Failed(until time.Time) {
	c := a.credential()
	if c == (credential{}) {
		return
	}
	u := unixSeconds(until)
	a.r.mu.Lock()
	defer a.r.mu.Unlock()
	a.r.remember(c, u)
	if p := &a.r.pairs[a.slot]; p.Load() < u {
		p.Store(u)
	}
}

// credential is the attempt's credential, computed once.
func (a *repeatAttempt) credential() credential {
	if a.cred == (credential{}) {
		a.cred = a.r.Mark(a.subject, a.against, a.secret, a.addr)
	}
	return a.cred
}

// Mark returns the credential of secret for subject, checked against its
// hashes, from addr. The buffer it hashes is cleared before it is reused:
// it held the secret.
func (r *repeatTable) Mark(subject string, against []secret.Hash, secret, addr string) credential {
	r.marks.Add(1)
	m := r.macs.Get().(*repeatMAC)
	defer r.macs.Put(m)
	// Each part's length first, so that no two triples hash the same text.
	in := binary.AppendUvarint(m.in[:0], uint64(len(against)))
	for _, h := range against {
		in = binary.AppendUvarint(in, uint64(len(h.String())))
		in = append(in, h.String()...)
	}
	for _, s := range [...]string{subject, secret, addr} {
		in = binary.AppendUvarint(in, uint64(len(s)))
		in = append(in, s...)
	}
	m.mac.Reset()
	m.mac.Write(in)
	clear(in)
	m.in = in
	m.sum = m.mac.Sum(m.sum[:0])
	c := credential{key: binary.LittleEndian.Uint64(m.sum), check: binary.LittleEndian.Uint32(m.sum[8:])}
	clear(m.sum)
	if c == (credential{}) {
		c.check = 1 // the zero credential is no credential
	}
	return c
}

// Failed reports whether c failed within its window, at now.
func (r *repeatTable) Failed(c credential, now time.Time) bool {
	if c == (credential{}) {
		return false
	}
	t := unixSeconds(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.set(c.key) {
		if e.key == c.key && e.check == c.check && e.until > t {
			return true
		}
	}
	return false
}

// Remember records that c failed, until until (when it failed, and the
// window): the same credential failing again before then is a repeat. In
// a full set it replaces the entry that expires first. It writes the
// table only, for Failed: an Attempt learns of a failure by its Failed.
func (r *repeatTable) Remember(c credential, until time.Time) {
	if c == (credential{}) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remember(c, unixSeconds(until))
}

// remember is Remember, under r.mu.
func (r *repeatTable) remember(c credential, u uint32) {
	set := r.set(c.key)
	victim := 0
	for i := range set {
		if set[i].key == c.key && set[i].check == c.check {
			set[i].until = max(set[i].until, u)
			return
		}
		if set[i].until < set[victim].until {
			victim = i
		}
	}
	set[victim] = repeatEntry{key: c.key, check: c.check, until: u}
}

func (r *repeatTable) set(key uint64) []repeatEntry {
	i := (key >> 32 & r.setMask) * repeatWays
	return r.entries[i : i+repeatWays]
}

// unixSeconds is t in whole Unix seconds, clamped to what a uint32 holds.
func unixSeconds(t time.Time) uint32 {
	return uint32(min(max(t.Unix(), 0), 1<<32-1))
}
