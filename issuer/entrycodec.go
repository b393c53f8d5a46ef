package issuer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// An entry's body in the table: its fields in their order. A string or a
// []byte is its length as a uvarint and its bytes; a slice is its length
// plus one (0: nil) and its elements; a bool one byte; an integer a
// varint; a struct its fields. Written by hand, field by field: by
// reflection (and before that by encoding/json) it was the largest part
// of a registry's load per client after the decoding of its JSON
// (BenchmarkLoad in pgregistry: 1.1 µs of 7.7), and a client's first use
// decodes it. TestEntryKeepsEveryField fills every field of ClientConfig
// by reflection and fails on one these two functions forget.
//
// ClientKeyConfig.Key, a key in code, cannot be kept: a client's keys are
// kept as their JWKs (client.entryOf), and Key must be nil here.

// errEntryField is an entry with a field the table cannot keep.
var errEntryField = errors.New("issuer: a client's field the table cannot keep")

// appendEntry appends e's body to b.
func appendEntry(b []byte, e *entry) ([]byte, error) {
	c := &e.Config
	b = appendString(b, c.ClientID)
	b = appendStringList(b, c.SecretHashes)
	b = appendCount(b, c.PublicKeys == nil, len(c.PublicKeys))
	for _, k := range c.PublicKeys {
		if k.Key != nil {
			return nil, fmt.Errorf("%w: %T", errEntryField, k.Key)
		}
		b = appendString(b, k.File)
		b = appendCount(b, k.JWK == nil, len(k.JWK))
		b = append(b, k.JWK...)
		b = appendString(b, k.Alg)
	}
	b = appendString(b, c.JWKSURI)
	b = appendCount(b, c.FederatedCredentials == nil, len(c.FederatedCredentials))
	for _, f := range c.FederatedCredentials {
		b = appendString(appendString(b, f.Issuer), f.Subject)
	}
	b = binary.AppendVarint(b, int64(c.MaxAssertionAge))
	b = appendBool(b, c.AllowDefaultServiceAccount)
	b = appendStringList(b, c.GrantTypes)
	b = appendStringList(b, c.Scopes)
	b = binary.AppendVarint(b, int64(c.AccessTokenLifetime))
	b = appendStringList(b, c.Audience)
	b = appendString(b, c.ScopeWhenOmitted)
	b = appendCount(b, c.Claims == nil, len(c.Claims))
	for _, cl := range c.Claims {
		b = appendString(appendString(b, cl.Type), cl.Value)
	}
	b = appendBool(b, c.RequireDPoP)
	b = appendString(b, c.AccessTokenType)
	t := &c.TLSClientAuth
	b = appendString(appendString(appendString(appendString(appendString(b, t.SubjectDN), t.SANDNS), t.SANURI), t.SANEmail), t.SANIP)
	b = appendStringList(b, c.CertificateThumbprints)
	b = appendBool(b, c.CertificateBoundTokens)
	b = binary.AppendUvarint(b, c.Epoch)
	b = appendBool(b, e.File)
	return binary.AppendUvarint(b, e.Epoch), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendCount appends a slice's length plus one, or 0 for a nil one.
func appendCount(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendStringList(b []byte, ss []string) []byte {
	b = appendCount(b, ss == nil, len(ss))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// decodeEntry decodes an entry's body.
func decodeEntry(body []byte) (entry, error) {
	r := entryReader{b: body}
	var e entry
	c := &e.Config
	c.ClientID = r.string()
	c.SecretHashes = r.strings()
	if n, ok := r.count(); ok {
		c.PublicKeys = make([]ClientKeyConfig, n)
		for i := range c.PublicKeys {
			k := &c.PublicKeys[i]
			k.File = r.string()
			if n, ok := r.count(); ok {
				k.JWK = append(make(json.RawMessage, 0, n), r.take(n)...)
			}
			k.Alg = r.string()
		}
	}
	c.JWKSURI = r.string()
	if n, ok := r.count(); ok {
		c.FederatedCredentials = make([]FederatedCredential, n)
		for i := range c.FederatedCredentials {
			c.FederatedCredentials[i] = FederatedCredential{Issuer: r.string(), Subject: r.string()}
		}
	}
	c.MaxAssertionAge = time.Duration(r.varint())
	c.AllowDefaultServiceAccount = r.bool()
	c.GrantTypes = r.strings()
	c.Scopes = r.strings()
	c.AccessTokenLifetime = time.Duration(r.varint())
	c.Audience = r.strings()
	c.ScopeWhenOmitted = r.string()
	if n, ok := r.count(); ok {
		c.Claims = make([]ClientClaim, n)
		for i := range c.Claims {
			c.Claims[i] = ClientClaim{Type: r.string(), Value: r.string()}
		}
	}
	c.RequireDPoP = r.bool()
	c.AccessTokenType = r.string()
	c.TLSClientAuth = TLSClientAuth{SubjectDN: r.string(), SANDNS: r.string(), SANURI: r.string(), SANEmail: r.string(), SANIP: r.string()}
	c.CertificateThumbprints = r.strings()
	c.CertificateBoundTokens = r.bool()
	c.Epoch = r.uvarint()
	e.File = r.bool()
	e.Epoch = r.uvarint()
	if r.bad || len(r.b) > 0 {
		return entry{}, errBadEntry
	}
	return e, nil
}

// errBadEntry is a body that is not an entry's: a defect.
var errBadEntry = errors.New("issuer: a table entry does not decode")

// entryReader reads an entry's body: once a read finds it cut short, bad
// is set and every read after it gives the zero value.
type entryReader struct {
	b   []byte
	bad bool
}

func (r *entryReader) uvarint() uint64 {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[w:]
	return n
}

// varint reads what binary.AppendVarint wrote: a uvarint, zig-zag
// encoded.
func (r *entryReader) varint() int64 {
	u := r.uvarint()
	if u&1 != 0 {
		return ^int64(u >> 1)
	}
	return int64(u >> 1)
}

// take returns the next n bytes.
func (r *entryReader) take(n int) []byte {
	if n > len(r.b) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *entryReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	return string(r.take(int(n)))
}

func (r *entryReader) bool() bool {
	b := r.take(1)
	return len(b) == 1 && b[0] == 1
}

// count reads a slice's length: ok is false for a nil slice (or a body
// cut short). Every element takes a byte at least, so a count beyond
// the bytes left is a bad body, never a large allocation.
func (r *entryReader) count() (n int, ok bool) {
	v := r.uvarint()
	if v > uint64(len(r.b))+1 {
		r.fail()
		return 0, false
	}
	if v == 0 {
		return 0, false
	}
	return int(v - 1), true
}

func (r *entryReader) strings() []string {
	n, ok := r.count()
	if !ok {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// fail marks the body bad and reads nothing more.
func (r *entryReader) fail() {
	r.bad, r.b = true, nil
}

// tableEntry is an entry to put in a table: its ID, its flags and its
// body; hash is foldHash of the ID, once known.
type tableEntry struct {
	id    string
	flags byte
	body  []byte
	hash  uint64
}

// encodeEntry returns e as a tableEntry.
func encodeEntry(e entry) (tableEntry, error) {
	var b entryBodies
	return b.encode(&e)
}

// entryBodies holds the bodies of the entries of one change, one after
// the other in blocks of 2 KiB, each twice the last up to 64 KiB: a load
// of 100,000 clients makes a few hundred allocations of them, not
// 100,000, and a change of one client one small block.
type entryBodies struct{ buf []byte }

// encode returns e as a tableEntry, its body in b.
func (b *entryBodies) encode(e *entry) (tableEntry, error) {
	if cap(b.buf)-len(b.buf) < 1<<10 { // a new block, the bodies of the old one left where they are
		b.buf = make([]byte, 0, min(64<<10, max(2<<10, 2*cap(b.buf))))
	}
	start := len(b.buf)
	buf, err := appendEntry(b.buf, e)
	if err != nil {
		return tableEntry{}, err
	}
	b.buf = buf
	var flags byte
	if e.File {
		flags |= flagFile
	}
	if e.Config.Epoch != 0 {
		flags |= flagOwnEpoch
	}
	return tableEntry{id: e.Config.ClientID, flags: flags, body: buf[start:len(buf):len(buf)]}, nil
}
