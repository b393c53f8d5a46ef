package accesstoken

import (
	"crypto"
	"errors"
	"strings"

	"github.com/idsauth/idsauth/internal/jws"
)

// MaxKeysPerToken is the most signature checks one token costs: a token
// for which the key source offers more keys than this (a token without
// "kid" against a JWKS with several keys of its alg) is refused
// ("ambiguous_key") before any check. Two lets a token without kid through
// while its issuer rotates keys, the old one and the new one published
// side by side.
const MaxKeysPerToken = 2

// verify reports whether sig, of alg, signs signingInput under any of
// keys.
func (v *Validator) verify(alg, signingInput string, sig []byte, keys []crypto.PublicKey) bool {
	for _, k := range keys {
		v.checks.Add(1)
		if jws.Verify(alg, signingInput, sig, k) == nil {
			return true
		}
	}
	return false
}

// checkHeader checks what the validator requires of a token's header:
// an "alg" on the allow-list, no "crit", and a "typ" of an access token
// (or none, unless RequireType).
func (v *Validator) checkHeader(t *jws.Token) error {
	if !v.allowed[t.Alg] {
		return errAlgorithm
	}
	if t.Has("crit") {
		return errCritical
	}
	typ, present, err := t.String("typ")
	switch {
	case !present:
		if v.requireType {
			return errType
		}
		return nil
	case err != nil:
		return errType
	}
	if !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") && !strings.EqualFold(typ, "JWT") {
		return errType
	}
	return nil
}

// keyError turns a key source's failure into one of ours:
// ErrKeysUnavailable or errAlgorithm when it says so, else ErrUnknownKey.
func keyError(err error) error {
	for _, r := range []error{ErrKeysUnavailable, errAlgorithm} {
		if errors.Is(err, r) {
			return r
		}
	}
	return ErrUnknownKey
}
