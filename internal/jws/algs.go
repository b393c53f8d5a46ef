package jws

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"

	"github.com/golang-jwt/jwt/v5"
)

// algorithms is the one table of JWS signature algorithms this module
// knows: each name a header's "alg" may give, in the order they are
// advertised, with the golang-jwt method that verifies it. Asymmetric
// only: "none" and the HMAC algorithms are never among them.
var algorithms = []struct {
	name   string
	method jwt.SigningMethod
}{
	{"ES256", jwt.SigningMethodES256},
	{"RS256", jwt.SigningMethodRS256},
	{"PS256", jwt.SigningMethodPS256},
	{"EdDSA", jwt.SigningMethodEdDSA}, // RFC 8037's polymorphic name
	// RFC 9864's fully-specified name of EdDSA over an Ed25519 key, the
	// only EdDSA there is here: a second name of the row above.
	{"Ed25519", jwt.SigningMethodEdDSA},
}

// Algorithms are the names of the table, every name of each algorithm:
// ES256, RS256, PS256, EdDSA and Ed25519. What each caller accepts is
// this list or a part of it. Callers must not modify it.
var Algorithms = names(true)

// KeyAlgorithms are the table's algorithms by one name each, the first:
// the names a key or a client's registration gives ("EdDSA" for both
// names of EdDSA). Callers must not modify it.
var KeyAlgorithms = names(false)

func names(aliases bool) []string {
	var out []string
	seen := map[jwt.SigningMethod]bool{}
	for _, a := range algorithms {
		if aliases || !seen[a.method] {
			out = append(out, a.name)
		}
		seen[a.method] = true
	}
	return out
}

// Method returns the golang-jwt method that verifies a signature of alg,
// or nil for a name not in Algorithms.
func Method(alg string) jwt.SigningMethod {
	for _, a := range algorithms {
		if a.name == alg {
			return a.method
		}
	}
	return nil
}

// SameAlgorithm reports whether a and b name one algorithm of the table:
// equal, or two names of one method (EdDSA and Ed25519).
func SameAlgorithm(a, b string) bool {
	m := Method(a)
	return m != nil && m == Method(b)
}

// KeyFits reports whether key is of the type that verifies alg: an EC key
// on P-256 for ES256, an RSA key for RS256 and PS256, an Ed25519 key for
// EdDSA (either name). It says nothing of a key's size or use.
func KeyFits(alg string, key crypto.PublicKey) bool {
	switch m := Method(alg); k := key.(type) {
	case *ecdsa.PublicKey:
		return m == jwt.SigningMethodES256 && k.Curve == elliptic.P256()
	case *rsa.PublicKey:
		return m == jwt.SigningMethodRS256 || m == jwt.SigningMethodPS256
	case ed25519.PublicKey:
		return m == jwt.SigningMethodEdDSA
	}
	return false
}

// Verify checks the token's signature over SigningInput with key, under
// its "alg". It fails with ErrMalformed for a signature that is not
// base64url and ErrSignature for any other failure, an "alg" Method does
// not know included.
func (t *Token) Verify(key crypto.PublicKey) error {
	sig, err := t.Signature()
	if err != nil {
		return err
	}
	return Verify(t.Alg, t.SigningInput, sig, key)
}

// Verify checks sig, a signature of alg over signingInput, with key. It
// fails with ErrSignature, for an alg Method does not know too. ES256 is
// checked by crypto/ecdsa itself, its r and s written as the ASN.1 it
// reads: what golang-jwt does through big.Int, at less than half the
// allocations, on the path of every cold token and every DPoP proof.
func Verify(alg, signingInput string, sig []byte, key crypto.PublicKey) error {
	m := Method(alg)
	switch {
	case m == nil:
		return ErrSignature
	case m == jwt.SigningMethodES256:
		pub, ok := key.(*ecdsa.PublicKey)
		if !ok || pub.Curve != elliptic.P256() || len(sig) != 64 {
			return ErrSignature
		}
		h := sha256.Sum256([]byte(signingInput))
		var der [72]byte
		if !ecdsa.VerifyASN1(pub, h[:], asn1Signature(der[:0], sig[:32], sig[32:])) {
			return ErrSignature
		}
		return nil
	}
	if m.Verify(signingInput, sig, key) != nil {
		return ErrSignature
	}
	return nil
}

// asn1Signature appends to out the DER of ECDSA-Sig-Value (SEQUENCE of
// two INTEGERs) for r and s, big-endian unsigned: each without its
// leading zero bytes, with one zero byte before a high bit. It fits in 72
// bytes for P-256.
func asn1Signature(out, r, s []byte) []byte {
	integer := func(out, v []byte) []byte {
		for len(v) > 1 && v[0] == 0 {
			v = v[1:]
		}
		pad := len(v) > 0 && v[0]&0x80 != 0
		n := len(v)
		if pad {
			n++
		}
		out = append(out, 0x02, byte(n))
		if pad {
			out = append(out, 0)
		}
		return append(out, v...)
	}
	out = append(out, 0x30, 0) // the length is set below: under 128
	out = integer(out, r)
	out = integer(out, s)
	out[1] = byte(len(out) - 2)
	return out
}
