// Package jws reads a JWS in compact serialization (RFC 7515 §7.1) and
// the JWT claim set it carries (RFC 7519), without trusting either until
// a key has verified it: the one reader behind access tokens,
// introspection answers, client assertions and DPoP proofs, so that one
// set of rules (exact member names, no duplicate members, null as absent,
// NumericDate ranges, one table of algorithm names) holds for all of them.
//
// Parse reads the header only. The payload and the signature are decoded
// on demand, so that a caller can refuse a token on its header (an "alg"
// off the list, say) before it spends anything on the rest, and report
// that reason rather than a later one.
package jws

import (
	"encoding/base64"
	"errors"
	"strings"
)

// ErrMalformed is the error of every token that is not a compact JWS with
// a JSON object for header: not three segments, a segment that is not
// base64url in its canonical form, a header that is not a JSON object, or
// a "kid" or "alg" that is present and not a JSON string.
var ErrMalformed = errors.New("jws: malformed")

// ErrSignature is the error of a signature that does not verify.
var ErrSignature = errors.New("jws: signature invalid")

// b64 decodes segments: base64url without padding, and only in its one
// canonical form, so that no two strings carry the same signature.
var b64 = base64.RawURLEncoding.Strict()

// Token is a compact JWS split, with its header decoded. Nothing in it is
// trusted until a key has verified Signature over SigningInput.
type Token struct {
	// Header holds the header parameters, read as a claim set is (see
	// Claims): names matched exactly, a name given twice refused.
	Header Claims
	// Alg is the "alg" header parameter ("" when absent).
	Alg string
	// KID is the "kid" header parameter, and HasKID whether there is one.
	KID    string
	HasKID bool
	// SigningInput is what the signature covers: the header and payload
	// segments with the dot between them. It shares the parsed string's
	// memory.
	SigningInput string
	// Payload64 is the payload segment, base64url.
	Payload64 string

	sig64 string
}

// Parse splits s into its three segments and decodes the header. It
// fails with ErrMalformed.
func Parse(s string) (*Token, error) {
	h64, rest, ok1 := strings.Cut(s, ".")
	p64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return nil, ErrMalformed
	}
	hb, err := b64.DecodeString(h64)
	if err != nil {
		return nil, ErrMalformed
	}
	t := &Token{SigningInput: s[:len(h64)+1+len(p64)], Payload64: p64, sig64: s64}
	if t.Header, err = ReadClaims(hb); err != nil {
		return nil, ErrMalformed
	}
	if t.Alg, _, err = t.String("alg"); err != nil { // an absent alg is "", which no list holds
		return nil, err
	}
	if t.KID, t.HasKID, err = t.String("kid"); err != nil {
		return nil, err
	}
	return t, nil
}

// String returns the header parameter name when it is a JSON string, and
// whether it is present at all. A parameter that is present and not a
// string, null included, fails with ErrMalformed.
func (t *Token) String(name string) (value string, present bool, err error) {
	raw, present := t.Header.lookup(name)
	if !present {
		return "", false, nil
	}
	if value, err = stringValue(raw); err != nil {
		return "", true, ErrMalformed
	}
	return value, true, nil
}

// Has reports whether the header has the parameter name, whatever its
// value, null included.
func (t *Token) Has(name string) bool {
	_, ok := t.Header.lookup(name)
	return ok
}

// Payload decodes the payload segment. It fails with ErrMalformed.
func (t *Token) Payload() ([]byte, error) {
	b, err := b64.DecodeString(t.Payload64)
	if err != nil {
		return nil, ErrMalformed
	}
	return b, nil
}

// Signature decodes the signature segment. It fails with ErrMalformed.
func (t *Token) Signature() ([]byte, error) {
	b, err := b64.DecodeString(t.sig64)
	if err != nil {
		return nil, ErrMalformed
	}
	return b, nil
}
