package jwks

import (
	"bytes"
	"crypto"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/keyerr"
)

// MaxKeysPerToken is the most keys a token without kid is given to
// check: a token that anyone can forge costs no walk through the set.
const MaxKeysPerToken = 2

// Set is one version of a JWKS, indexed once when it was fetched: its
// JWKs by kid, and what a token without kid gets for each algorithm of
// the table, so that such a token costs no walk through the set.
type Set struct {
	Version    uint64
	count      int // JWKs, with a kid or not
	byKID      map[string]jwk
	withoutKID map[string]kidlessKeys // by alg
}

// Empty reports whether the set holds no key at all.
func (s *Set) Empty() bool { return s.count == 0 }

// Len is how many keys the set holds.
func (s *Set) Len() int { return s.count }

// kidlessKeys is what a token without kid gets: at most
// MaxKeysPerToken+1 keys (enough to tell that there are too many), or
// the error.
type kidlessKeys struct {
	keys []crypto.PublicKey
	err  error
}

// jwk is what is read of one JWK.
type jwk struct {
	pub    crypto.PublicKey
	verify bool   // its "use" is the set's signature use, and "key_ops", if any, hold "verify"
	alg    string // its "alg", "" for none
}

// ErrJWKAlgorithm is the error of a JWK that is for another algorithm
// than the token's.
var ErrJWKAlgorithm = fmt.Errorf("%w: the JWK is for another alg", keyerr.ErrAlgorithm)

// ErrUnusable is the error of a JWK that may not verify anything.
var ErrUnusable = fmt.Errorf("%w: the JWK may not verify", keyerr.ErrUnknownKey)

// usable is the one check of a JWK for a token signed with alg: it may
// verify ("use", "key_ops"), and its "alg", if any, names the token's
// algorithm ("EdDSA" and "Ed25519" being one: jws.SameAlgorithm), or,
// for an algorithm off the table, is the token's exactly.
func (k jwk) usable(alg string) error {
	switch {
	case !k.verify:
		return ErrUnusable // an encryption key, or another use
	case k.alg != "" && k.alg != alg && !jws.SameAlgorithm(k.alg, alg):
		return ErrJWKAlgorithm
	}
	return nil
}

// Index indexes set as the version-th: the keys this module reads
// (Key.Pub), the others left out. sigUse is the "use" of a signature
// key: "sig" (RFC 7517 §4.2) when empty, "jwt-svid" in a SPIFFE bundle;
// a JWK without "use" is one too.
func Index(version uint64, set []Key, sigUse string) *Set {
	if sigUse == "" {
		sigUse = "sig"
	}
	ks := &Set{Version: version, byKID: make(map[string]jwk, len(set)), withoutKID: make(map[string]kidlessKeys, len(jws.Algorithms))}
	all := make([]jwk, 0, len(set))
	for _, j := range set {
		if j.Pub == nil {
			continue
		}
		k := jwk{
			pub:    j.Pub,
			verify: (j.Use == "" || j.Use == sigUse) && (len(j.KeyOps) == 0 || slices.Contains(j.KeyOps, "verify")),
			alg:    j.Alg,
		}
		if j.KID != "" {
			ks.byKID[j.KID] = k
		}
		all = append(all, k)
	}
	ks.count = len(all)
	for _, alg := range jws.Algorithms {
		var a kidlessKeys
		for _, k := range all {
			// Only a key of the alg's type counts (kty, crv): a JWK
			// without "alg" fits every alg by its members, and would
			// otherwise make a genuine token ambiguous among keys that
			// cannot verify it.
			if k.usable(alg) == nil && jws.KeyFits(alg, k.pub) && len(a.keys) <= MaxKeysPerToken {
				a.keys = append(a.keys, k.pub)
			}
		}
		if len(a.keys) == 0 {
			a.err = keyerr.ErrUnknownKey
			if len(all) == 0 {
				a.err = keyerr.ErrKeysUnavailable
			}
		}
		ks.withoutKID[alg] = a
	}
	return ks
}

// Keys returns the keys of the set that may verify a token with this kid
// and alg: the JWK named by kid, or, without a kid, every JWK that fits
// (see usable) and is of alg's key type, at most MaxKeysPerToken+1. The
// errors are keyerr's.
func (s *Set) Keys(kid, alg string) ([]crypto.PublicKey, error) {
	if kid == "" {
		a, ok := s.withoutKID[alg]
		if !ok {
			return nil, keyerr.ErrUnknownKey
		}
		return a.keys, a.err
	}
	k, ok := s.byKID[kid]
	switch {
	case !ok && s.Empty():
		return nil, keyerr.ErrKeysUnavailable
	case !ok:
		return nil, keyerr.ErrUnknownKey
	}
	if err := k.usable(alg); err != nil {
		return nil, err
	}
	return []crypto.PublicKey{k.pub}, nil
}

// Has reports whether the set holds a JWK named kid.
func (s *Set) Has(kid string) bool {
	_, ok := s.byKID[kid]
	return ok
}

// Fingerprint is the JSON of a key set's members, each compacted, in an
// order of their own, so that a reordered set is the same set.
func Fingerprint(set []Key) string {
	parts := make([]string, 0, len(set))
	for _, j := range set {
		var b bytes.Buffer
		if json.Compact(&b, j.Raw) != nil {
			b.Write(j.Raw)
		}
		parts = append(parts, b.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}
