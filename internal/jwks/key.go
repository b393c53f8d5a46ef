package jwks

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Key is one JWK of a set as it is read: its members that say what it
// may verify, its public key, and its JSON as it came.
type Key struct {
	KID    string   `json:"kid"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	// Pub is the public key: EC on P-256, P-384 or P-521, RSA, or
	// Ed25519. Nil for a JWK of another type, or one that holds a
	// private key or cannot be read: it verifies nothing.
	Pub crypto.PublicKey `json:"-"`
	// Raw is the JWK's JSON, for a reader of its own (jwkset's).
	Raw json.RawMessage `json:"-"`
}

// jwkMembers are the members read of a JWK for its public key.
type jwkMembers struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d"`
}

// errMalformed is the error of a JWK of a type this module reads whose
// key cannot be read: a set that holds one is refused whole, as jwkset
// refuses it.
var errMalformed = errors.New("a malformed key")

// readKey reads raw, one JWK of a set: a Key whose Pub is nil when the
// JWK is of a type (kty, crv) this module does not read, or holds a
// private key; an error when it is of one it reads and malformed.
func readKey(raw json.RawMessage) (Key, error) {
	k := Key{Raw: raw}
	if err := json.Unmarshal(raw, &k); err != nil {
		return k, err
	}
	var m jwkMembers
	if err := json.Unmarshal(raw, &m); err != nil {
		return k, err
	}
	if m.D != "" {
		return k, nil // a private key: never a verifier's
	}
	b := func(s string) []byte {
		v, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(v) == 0 {
			return nil
		}
		return v
	}
	switch m.Kty {
	case "EC":
		curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[m.Crv]
		if curve == nil {
			return k, nil
		}
		x, y := b(m.X), b(m.Y)
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return k, fmt.Errorf("%w: EC %s", errMalformed, m.Crv)
		}
		point := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return k, fmt.Errorf("%w: EC %s: not on the curve", errMalformed, m.Crv)
		}
		k.Pub = pub
	case "RSA":
		n, e := b(m.N), b(m.E)
		if n == nil || e == nil || len(e) > 4 {
			return k, fmt.Errorf("%w: RSA", errMalformed)
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		if exp < 3 || exp%2 == 0 {
			return k, fmt.Errorf("%w: RSA exponent", errMalformed)
		}
		k.Pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	case "OKP":
		if m.Crv != "Ed25519" {
			return k, nil
		}
		x := b(m.X)
		if len(x) != ed25519.PublicKeySize {
			return k, fmt.Errorf("%w: Ed25519", errMalformed)
		}
		k.Pub = ed25519.PublicKey(x)
	}
	return k, nil
}
