package jws

import (
	"crypto"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithms are the JWS signature algorithms this module knows, by the
// names a header's "alg" gives them, in the order they are advertised:
// asymmetric only. "Ed25519" is RFC 9864's fully-specified name of EdDSA
// over an Ed25519 key, the only EdDSA there is here; "EdDSA" is RFC 8037's.
// "none" and the HMAC algorithms are never among them. It is the one
// table: what each caller accepts is this list or a part of it.
var Algorithms = []string{"ES256", "RS256", "PS256", "EdDSA", "Ed25519"}

// Method returns the golang-jwt method that verifies a signature of alg,
// or nil for a name not in Algorithms.
func Method(alg string) jwt.SigningMethod {
	switch alg {
	case "ES256":
		return jwt.SigningMethodES256
	case "RS256":
		return jwt.SigningMethodRS256
	case "PS256":
		return jwt.SigningMethodPS256
	case "EdDSA", "Ed25519":
		return jwt.SigningMethodEdDSA
	}
	return nil
}

// SameAlgorithm reports whether a and b name one algorithm: equal, or the
// two names of EdDSA over Ed25519. It holds for names Method knows.
func SameAlgorithm(a, b string) bool {
	return a == b || (Method(a) == jwt.SigningMethodEdDSA && Method(b) == jwt.SigningMethodEdDSA)
}

// Verify checks the token's signature over SigningInput with key, under
// its "alg". It fails with ErrMalformed for a signature that is not
// base64url and ErrSignature for any other failure, an "alg" Method does
// not know included.
func (t *Token) Verify(key crypto.PublicKey) error {
	m := Method(t.Alg)
	if m == nil {
		return ErrSignature
	}
	sig, err := t.Signature()
	if err != nil {
		return err
	}
	if m.Verify(t.SigningInput, sig, key) != nil {
		return ErrSignature
	}
	return nil
}
