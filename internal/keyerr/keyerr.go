// Package keyerr holds the errors a key source gives when it has no key
// for a token: shared by the producer of keys (package issuer) and their
// consumer (package middleware, which re-exports them), so that neither
// imports the other.
package keyerr

import "errors"

var (
	// ErrUnknownKey: no key with the token's "kid", or none that may
	// verify it.
	ErrUnknownKey = errors.New("unknown signing key")
	// ErrAlgorithm: the key named by "kid" is for another algorithm than
	// the token's "alg".
	ErrAlgorithm = errors.New("token signing algorithm not allowed")
	// ErrKeysUnavailable: the source has no keys at all (a JWKS that could
	// not be fetched).
	ErrKeysUnavailable = errors.New("signing keys unavailable")
)
