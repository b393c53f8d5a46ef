package accesstoken

import (
	"context"
	"crypto"
	"errors"
)

// KeySource gives the public keys that may verify a token. Set
// Config.Keys (or TrustedIssuer.Keys) to one to validate without
// fetching a JWKS, as when the issuer runs in the same process:
// *issuer.Issuer is one.
//
// The validator has checked the token's header (its "alg" is on the
// allow-list) before it asks, and has read "iss" alone, to choose the
// issuer whose source it asks (and no other's); it reads the other claims
// only once a key has verified the signature. A KeySource is trusted as
// it is: the checks on a JWK's "use", "key_ops" and "alg" are those of
// a JWKS.
type KeySource interface {
	// VerificationKeys returns the keys that may verify a token signed
	// with alg whose header names kid, or every such key when kid is "".
	// The validator checks at most MaxKeysPerToken of them: a token
	// offered more is refused ("ambiguous_key"), unchecked. It fails with
	// ErrUnknownKey when there is none, and ErrKeysUnavailable when the
	// source has no keys at all; any other error counts as ErrUnknownKey.
	// ctx is the request's.
	VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error)
}

// VersionedKeySource is a KeySource that tells when its keys change. The
// validator's cache of verified tokens is on only for one: without a
// version, a cached token would outlive the removal of its key.
// *issuer.Issuer and *JWKS are versioned.
type VersionedKeySource interface {
	KeySource
	// KeysVersion changes whenever keys are added or removed.
	KeysVersion() uint64
}

// MaxKeysPerToken is the most signature checks one token costs: a token
// for which the key source offers more keys than this (a token without
// "kid" against a JWKS with several keys of its alg) is refused
// ("ambiguous_key") before any check. Two lets a token without kid through
// while its issuer rotates keys, the old one and the new one published
// side by side.
const MaxKeysPerToken = 2

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
