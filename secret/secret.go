// Package secret stores and checks client secrets and SCIM tenant tokens as
// hashes, never as plain text ([the contract] §2 and §4).
//
// A hash is written as "<kind>:<value>":
//
//	sha256:<base64>   base64 of SHA-256 of the UTF-8 secret: the IdentityServer
//	                  form, so existing registrations carry over
//	sha512:<base64>   the same with SHA-512
//	bcrypt:<hash>     a bcrypt hash ("$2a$..."), for operators who must use
//	                  low-entropy secrets; slow on purpose
//
// The fast forms are right for the random secrets that Generate makes; a
// slow form is only worth its cost for secrets a person chose.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Kind is the algorithm of a Hash.
type Kind string

// The hash kinds Parse accepts.
const (
	SHA256 Kind = "sha256"
	SHA512 Kind = "sha512"
	Bcrypt Kind = "bcrypt"
)

var (
	// ErrPlainText means a value has no known "<kind>:" prefix, which is
	// what a secret pasted in plain text looks like.
	ErrPlainText = errors.New(`not a hash: want "sha256:", "sha512:" or "bcrypt:" followed by the hash (a plain-text secret is never accepted)`)
	// ErrMalformed means the value after the prefix is not a valid hash of
	// that kind.
	ErrMalformed = errors.New("malformed hash")
	// ErrEmptySecret means the value is a hash of the empty secret: the
	// client or tenant it registers would be let in with no secret at all,
	// as "curl -u me:" does. It is what a configuration built from an
	// unset environment variable holds.
	ErrEmptySecret = errors.New("the hash of an empty secret (an unset variable?): it would let anyone in with no secret")
)

// Hash is a parsed secret hash. The zero value matches nothing.
type Hash struct {
	kind Kind
	sum  []byte // sha256/sha512 digest, or the bcrypt hash text
	text string
}

// Parse reads a hash in the "<kind>:<value>" form. It refuses a hash of
// the empty secret (ErrEmptySecret), of any kind.
func Parse(s string) (Hash, error) {
	kind, value, ok := strings.Cut(s, ":")
	if !ok {
		return Hash{}, ErrPlainText
	}
	h := Hash{kind: Kind(kind), text: s}
	switch h.kind {
	case SHA256, SHA512:
		sum, err := base64.StdEncoding.DecodeString(value)
		want := sha256.Size
		if h.kind == SHA512 {
			want = sha512.Size
		}
		if err != nil || len(sum) != want {
			return Hash{}, fmt.Errorf("%w: %s wants the base64 of a %d-byte digest", ErrMalformed, kind, want)
		}
		h.sum = sum
	case Bcrypt:
		if _, err := bcrypt.Cost([]byte(value)); err != nil {
			return Hash{}, fmt.Errorf("%w: bcrypt: %v", ErrMalformed, err)
		}
		h.sum = []byte(value)
	default:
		return Hash{}, ErrPlainText
	}
	// One check of the empty secret, at load: for bcrypt it costs what a
	// login costs, once; a fast hash is compared with the empty secret's
	// digests, computed once (a registry's load parses 100,000 hashes).
	if h.kind == Bcrypt && h.Verify("") || h.kind != Bcrypt && emptyDigests.match(h) {
		return Hash{}, ErrEmptySecret
	}
	return h, nil
}

// emptyDigests are the fast digests of the empty secret.
var emptyDigests = func() (d digests) {
	d.compute("", true)
	return d
}()

// MustParse is Parse for hashes known at compile time; it panics on error.
func MustParse(s string) Hash {
	h, err := Parse(s)
	if err != nil {
		panic("secret: " + err.Error())
	}
	return h
}

// Kind returns the hash's algorithm.
func (h Hash) Kind() Kind { return h.kind }

// Slow reports whether checking a secret against h is deliberately slow.
func (h Hash) Slow() bool { return h.kind == Bcrypt }

// String returns the hash in the form Parse reads. It holds no secret.
func (h Hash) String() string { return h.text }

// MarshalText writes the hash in the form Parse reads.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.text), nil }

// UnmarshalText parses a hash, so a Hash can be a JSON field.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*h = p
	return nil
}

// Equal reports whether h and o are the same hash.
func (h Hash) Equal(o Hash) bool { return h.text == o.text }

// Verify reports whether secret matches h, in time that does not depend on
// how much of it matches.
func (h Hash) Verify(secret string) bool {
	switch h.kind {
	case SHA256, SHA512:
		var d digests
		d.compute(secret, h.kind == SHA512)
		return d.match(h)
	case Bcrypt:
		return bcrypt.CompareHashAndPassword(h.sum, []byte(secret)) == nil
	}
	return false
}

// digests are a secret's fast digests: SHA-256 always, SHA-512 when
// asked for. One computation serves every fast hash of its kind, since
// they are unsalted (IdentityServer's form).
type digests struct {
	s256    [sha256.Size]byte
	s512    [sha512.Size]byte
	with512 bool
}

// compute fills d from secret, without allocating: the hash states and
// the secret's bytes live in a pooled hasher, cleared after use.
func (d *digests) compute(secret string, with512 bool) {
	hs := hashers.Get().(*hasher)
	hs.buf = append(hs.buf[:0], secret...)
	hs.sum(hs.h256, d.s256[:])
	if d.with512 = with512; with512 {
		hs.sum(hs.h512, d.s512[:])
	}
	clear(hs.buf)
	if cap(hs.buf) > 1024 {
		hs.buf = nil // an unusually long one is not kept
	}
	hashers.Put(hs)
}

// match reports in constant time whether h, a fast hash, is one of d.
func (d *digests) match(h Hash) bool {
	switch {
	case h.kind == SHA256:
		return subtle.ConstantTimeCompare(d.s256[:], h.sum) == 1
	case h.kind == SHA512 && d.with512:
		return subtle.ConstantTimeCompare(d.s512[:], h.sum) == 1
	}
	return false
}

// hasher hashes secrets without allocating: hash.Hash's methods take
// their arguments through an interface, so what they read and write
// lives here rather than on the caller's stack.
type hasher struct {
	h256, h512 hash.Hash
	buf        []byte
	out        [sha512.Size]byte
}

var hashers = sync.Pool{New: func() any {
	return &hasher{h256: sha256.New(), h512: sha512.New(), buf: make([]byte, 0, 128)}
}}

// sum writes the digest of hs.buf by h into dst, and leaves h reset.
func (hs *hasher) sum(h hash.Hash, dst []byte) {
	h.Reset()
	h.Write(hs.buf)
	copy(dst, h.Sum(hs.out[:0]))
	h.Reset()
	clear(hs.out[:])
}

// HashSHA256 returns the "sha256:" hash of secret: IdentityServer's form.
// Its String is what a configuration file holds.
func HashSHA256(secret string) Hash {
	sum := sha256.Sum256([]byte(secret))
	// Built, not parsed: the hash of "" is a hash too, which Parse (and
	// so every configuration) refuses with ErrEmptySecret, naming it.
	return Hash{kind: SHA256, sum: sum[:], text: string(SHA256) + ":" + base64.StdEncoding.EncodeToString(sum[:])}
}

// HashBcrypt returns the "bcrypt:" hash of secret at the given cost
// (bcrypt.DefaultCost when cost is 0). A cost outside bcrypt's range is
// an error, never silently replaced.
func HashBcrypt(secret string, cost int) (Hash, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return Hash{}, fmt.Errorf("bcrypt cost %d: want %d to %d", cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	if secret == "" {
		return Hash{}, ErrEmptySecret
	}
	b, err := bcrypt.GenerateFromPassword([]byte(secret), cost)
	if err != nil {
		return Hash{}, err
	}
	return Parse(string(Bcrypt) + ":" + string(b))
}

// Generate returns a new random secret of 256 bits, base64url-encoded, and
// its "sha256:" hash for the configuration file.
func Generate() (secret string, hash Hash) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashSHA256(secret)
}
