package keys

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"

	"github.com/idsauth/idsauth/internal/jws"
)

// AssertionAlgs are the JWS algorithms a client's registration may name
// for its assertions (private_key_jwt), in the order discovery lists
// them: the algorithm table's, one name each (jws.KeyAlgorithms).
var AssertionAlgs = jws.KeyAlgorithms

// FitPublic checks that pub may verify alg: the key type fits the
// algorithm, EC keys are on P-256 and RSA keys have at least MinRSABits.
// An Ed25519 key fits either name of EdDSA (jws.SameAlgorithm).
func FitPublic(alg string, pub crypto.PublicKey) error {
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		if alg != "ES256" || p.Curve != elliptic.P256() {
			return fmt.Errorf("an EC key on %s does not fit alg %q (ES256 needs P-256)", p.Curve.Params().Name, alg)
		}
	case *rsa.PublicKey:
		if alg != "RS256" && alg != "PS256" {
			return fmt.Errorf("an RSA key does not fit alg %q", alg)
		}
		if p.N.BitLen() < MinRSABits {
			return fmt.Errorf("RSA key of %d bits is too weak: at least %d are needed", p.N.BitLen(), MinRSABits)
		}
		if p.N.BitLen() > MaxRSABits {
			return fmt.Errorf("RSA key of %d bits: at most %d (a larger one costs every failed attempt, anyone's, its check)", p.N.BitLen(), MaxRSABits)
		}
	case ed25519.PublicKey:
		if !jws.SameAlgorithm(alg, "EdDSA") {
			return fmt.Errorf("an Ed25519 key does not fit alg %q", alg)
		}
	default:
		return fmt.Errorf("unsupported key type %T", pub)
	}
	return nil
}

// AlgForPublic returns the default algorithm for a public key's type:
// RS256 for RSA (PS256 must be asked for), EdDSA for Ed25519, else ES256.
func AlgForPublic(pub crypto.PublicKey) string {
	switch pub.(type) {
	case *rsa.PublicKey:
		return "RS256"
	case ed25519.PublicKey:
		return "EdDSA"
	}
	return "ES256"
}

// ParsePublicPEM reads a public key from a PEM "PUBLIC KEY" block (PKIX).
// A private key is refused: the registration of a client holds only what
// verifies its signatures.
func ParsePublicPEM(data []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf(`PEM block %q is not a public key (want "PUBLIC KEY"; for a certificate: openssl x509 -pubkey -noout)`, block.Type)
	}
	return x509.ParsePKIXPublicKey(block.Bytes)
}

// ParsePublicJWK reads one public JSON Web Key (RFC 7517): kty EC (P-256),
// RSA or OKP (Ed25519). It returns the key with the JWK's own "kid" and
// "alg" members, either of which may be empty. A JWK that holds private
// members, or whose "use" is neither absent nor "sig", is refused. Its
// members are read by the one claims reader (jws.ReadClaims): names
// matched exactly, a name given twice refused, null absent.
func ParsePublicJWK(data []byte) (pub crypto.PublicKey, kid, alg string, _ error) {
	j, err := jws.ReadClaims(data)
	if err != nil {
		return nil, "", "", errors.New("not a JWK: not a JSON object, or a member named twice")
	}
	// Private members (RFC 7518 §6.2.2, §6.3.2, §6.4): any of them
	// present means a private or secret key.
	for _, name := range [...]string{"d", "p", "q", "dp", "dq", "qi", "k", "oth"} {
		if j.Has(name) {
			return nil, "", "", errors.New("the JWK holds a private or secret key; give the public key only")
		}
	}
	str := func(name string) (string, error) {
		v, _, err := j.String(name)
		if err != nil {
			return "", fmt.Errorf("not a JWK: %s is not a string", name)
		}
		return v, nil
	}
	var kty, crv, use string
	for _, m := range [...]struct {
		name string
		dst  *string
	}{{"kty", &kty}, {"crv", &crv}, {"use", &use}, {"kid", &kid}, {"alg", &alg}} {
		if *m.dst, err = str(m.name); err != nil {
			return nil, "", "", err
		}
	}
	if use != "" && use != "sig" {
		return nil, "", "", fmt.Errorf(`use %q: want "sig" or none`, use)
	}
	// b decodes a member's base64url value into buf, or a new slice.
	b := func(name string, buf []byte) ([]byte, error) {
		raw, ok := j.Raw(name)
		if !ok || len(raw) < 3 || raw[0] != '"' {
			return nil, fmt.Errorf("%s: not base64url", name)
		}
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 { // base64url needs no escape, but JSON allows them
			u, _, _ := j.String(name)
			s = []byte(u)
		}
		n := base64.RawURLEncoding.DecodedLen(len(s))
		if n > cap(buf) {
			buf = make([]byte, n)
		}
		v := buf[:n]
		if n, err = base64.RawURLEncoding.Strict().Decode(v, s); err != nil || n == 0 {
			return nil, fmt.Errorf("%s: not base64url", name)
		}
		return v[:n], nil
	}
	switch kty {
	case "EC":
		if crv != "P-256" {
			return nil, "", "", fmt.Errorf("crv %q: only P-256 is supported", crv)
		}
		var point [65]byte // 0x04 || x || y
		x, err := b("x", point[1:1:33])
		if err != nil {
			return nil, "", "", err
		}
		y, err := b("y", point[33:33:65])
		if err != nil {
			return nil, "", "", err
		}
		if len(x) != 32 || len(y) != 32 || &x[0] != &point[1] || &y[0] != &point[33] {
			return nil, "", "", errors.New("x and y must be 32 bytes each")
		}
		point[0] = 4
		k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point[:])
		if err != nil {
			return nil, "", "", fmt.Errorf("not a point on P-256: %v", err)
		}
		pub = k
	case "RSA":
		n, err := b("n", nil)
		if err != nil {
			return nil, "", "", err
		}
		e, err := b("e", nil)
		if err != nil {
			return nil, "", "", err
		}
		ei := new(big.Int).SetBytes(e)
		if !ei.IsInt64() || ei.Int64() < 3 || ei.Int64() > 1<<31-1 || ei.Bit(0) == 0 {
			return nil, "", "", errors.New("e: not a usable RSA exponent")
		}
		ni := new(big.Int).SetBytes(n)
		if ni.Bit(0) == 0 {
			return nil, "", "", errors.New("n: not an RSA modulus (even)")
		}
		pub = &rsa.PublicKey{N: ni, E: int(ei.Int64())}
	case "OKP":
		if crv != "Ed25519" {
			return nil, "", "", fmt.Errorf("crv %q: only Ed25519 is supported", crv)
		}
		x, err := b("x", make([]byte, 0, ed25519.PublicKeySize))
		if err != nil {
			return nil, "", "", err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, "", "", errors.New("x must be 32 bytes")
		}
		pub = ed25519.PublicKey(x)
	default:
		return nil, "", "", fmt.Errorf("kty %q: want EC, RSA or OKP", kty)
	}
	return pub, kid, alg, nil
}

// PublicJWKOf returns pub as a JWK with no kid, alg or use.
func PublicJWKOf(pub crypto.PublicKey) (JWK, error) { return publicJWK(pub) }
