package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// A key is the Prefix, a kind, ':', and the first hashBytes of a SHA-256
// of the kind and what the key counts, in hex:
//
//	a  an address's bucket        SHA-256(a, "", address)
//	s  a subject's bucket         SHA-256(s, subject, "")
//	p  a subject and address pair SHA-256(p, subject, address)
//	r  a remembered jti           SHA-256(r, subject, jti)
//	c  the store's clock          SHA-256(c, "", "")
//
// On a Redis Cluster whose keys the store spreads (see New) each key also
// carries a hash tag after the ':', so that every key one script touches
// is on one slot: "{", four hex digits, "}". The digits are tagBits of
// the SHA-256 of the address's bucket for the address's bucket and the
// clock the address's script reads; of the subject's bucket for s, p, r
// and the clock the subject's script reads. So all of one client's data
// (its bucket, its pair marks, its jtis) is on one slot, one master;
// each address's bucket is on the slot of its own tag; and each tag has
// a clock of its own: 2^tagBits clocks per store at most.
const (
	hashBytes = 16
	tagBits   = 14
)

// KeyBytes is the length of every key of a Store with a prefix of n
// bytes. On a Redis Cluster whose keys the store spreads (see New) each
// key carries a hash tag of 6 bytes more: KeyBytes(n) + 6.
func KeyBytes(n int) int { return n + 2 + hex.EncodedLen(hashBytes) }

// sum is the hash a key of kind names.
func sum(kind byte, subject, addr string) [hashBytes]byte {
	h := sha256.New()
	var n [1 + binary.MaxVarintLen64]byte
	n[0] = kind
	h.Write(binary.AppendUvarint(n[:1], uint64(len(subject))))
	h.Write([]byte(subject))
	h.Write([]byte(addr))
	var full [sha256.Size]byte
	var s [hashBytes]byte
	copy(s[:], h.Sum(full[:0]))
	return s
}

// tagOf is the hash tag of what the hash h names: tagBits of it, in hex.
func tagOf(h [hashBytes]byte) string {
	v := binary.BigEndian.Uint16(h[:2]) >> (16 - tagBits)
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return hex.EncodeToString(b[:])
}

// key is the key of kind for the hash h, with the hash tag tag ("" for
// none).
func (s *Store) key(kind byte, tag string, h [hashBytes]byte) string {
	var b strings.Builder
	b.Grow(KeyBytes(len(s.prefix)) + len(tag) + 2)
	b.WriteString(s.prefix)
	b.WriteByte(kind)
	b.WriteByte(':')
	if tag != "" {
		b.WriteByte('{')
		b.WriteString(tag)
		b.WriteByte('}')
	}
	var x [2 * hashBytes]byte
	hex.Encode(x[:], h[:])
	b.Write(x[:])
	return b.String()
}

// keys are the keys of one reservation.
type keys struct {
	addr, subject, pair string
	// The clocks the address's script and the subject's read: one key,
	// unless the store spreads its keys over a Cluster.
	addrClock, subjectClock string
}

// keysOf returns the keys of a reservation of subject from addr: fixed in
// size, and the text of neither.
func (s *Store) keysOf(subject, addr string) keys {
	a, sub := sum('a', "", addr), sum('s', subject, "")
	var atag, stag string
	if s.spread {
		atag, stag = tagOf(a), tagOf(sub)
	}
	return keys{
		addr:         s.key('a', atag, a),
		subject:      s.key('s', stag, sub),
		pair:         s.key('p', stag, sum('p', subject, addr)),
		addrClock:    s.clockOf(atag),
		subjectClock: s.clockOf(stag),
	}
}

// replayKey is the key of a jti of subject.
func (s *Store) replayKey(subject, id string) string {
	tag := ""
	if s.spread {
		tag = tagOf(sum('s', subject, ""))
	}
	return s.key('r', tag, sum('r', subject, id))
}

// clockOf is the key of the clock of the keys tagged tag.
func (s *Store) clockOf(tag string) string {
	return s.key('c', tag, clockSum)
}

// clockSum names the store's clocks.
var clockSum = sum('c', "", "")

// hasHashTag reports whether every key starting with prefix hashes to one
// slot: it holds "{", then at least one byte, then "}" (Redis Cluster's
// rule, which go-redis's Ring follows too).
func hasHashTag(prefix string) bool {
	_, rest, ok := strings.Cut(prefix, "{")
	end := strings.IndexByte(rest, '}')
	return ok && end > 0
}
