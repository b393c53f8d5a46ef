// Package keys holds what the issuer and the tests share about signing
// keys: reading PEM, the RFC 7638 thumbprint used as "kid", and the public
// JWK form.
package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
)

// MinRSABits is the smallest RSA modulus accepted.
const MinRSABits = 2048

// MaxRSABits bounds the RSA keys that verify clients' assertions: every
// failed attempt, an unknown client's included, is padded to a check
// with a key of the largest size configured.
const MaxRSABits = 4096

// Key is a private signing key with its algorithm and key ID.
type Key struct {
	Alg     string // ES256, RS256 or EdDSA
	KID     string // RFC 7638 thumbprint of the public key
	Private crypto.Signer
}

// Public returns the public half.
func (k *Key) Public() crypto.PublicKey { return k.Private.Public() }

// New wraps a private key for alg, checking that the two fit.
func New(alg string, priv crypto.Signer) (*Key, error) {
	switch p := priv.(type) {
	case *ecdsa.PrivateKey:
		if alg != "ES256" || p.Curve != elliptic.P256() {
			return nil, fmt.Errorf("an EC key on %s does not fit alg %q (ES256 needs P-256)", p.Curve.Params().Name, alg)
		}
	case *rsa.PrivateKey:
		if alg != "RS256" && alg != "PS256" {
			return nil, fmt.Errorf("an RSA key does not fit alg %q", alg)
		}
		if p.N.BitLen() < MinRSABits {
			return nil, fmt.Errorf("RSA key of %d bits is too weak: at least %d are needed", p.N.BitLen(), MinRSABits)
		}
	case ed25519.PrivateKey:
		if alg != "EdDSA" {
			return nil, fmt.Errorf("an Ed25519 key does not fit alg %q", alg)
		}
	default:
		return nil, fmt.Errorf("unsupported key type %T", priv)
	}
	kid, err := Thumbprint(priv.Public())
	if err != nil {
		return nil, err
	}
	return &Key{Alg: alg, KID: kid, Private: priv}, nil
}

// Generate makes a new key for alg.
func Generate(alg string) (*Key, error) {
	var (
		priv crypto.Signer
		err  error
	)
	switch alg {
	case "ES256":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "RS256", "PS256":
		priv, err = rsa.GenerateKey(rand.Reader, MinRSABits)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, fmt.Errorf("unsupported alg %q", alg)
	}
	if err != nil {
		return nil, err
	}
	return New(alg, priv)
}

// ParsePEM reads a private key from PEM: PKCS #8 ("PRIVATE KEY"), SEC 1
// ("EC PRIVATE KEY") or PKCS #1 ("RSA PRIVATE KEY").
func ParsePEM(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var (
		k   any
		err error
	)
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	return s, nil
}

// EncodePEM writes a private key as PKCS #8 PEM.
func EncodePEM(priv crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// JWK is a public JSON Web Key (RFC 7517) as published in a JWKS.
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use,omitempty"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// PublicJWK returns the public JWK of k with kid, alg and use "sig".
func (k *Key) PublicJWK() JWK {
	j, _ := publicJWK(k.Public()) // New only admits supported key types
	j.Kid, j.Alg, j.Use = k.KID, k.Alg, "sig"
	return j
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func publicJWK(pub crypto.PublicKey) (JWK, error) {
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		ecdh, err := p.ECDH()
		if err != nil {
			return JWK{}, err
		}
		raw := ecdh.Bytes() // 0x04 || X || Y
		size := (len(raw) - 1) / 2
		return JWK{Kty: "EC", Crv: p.Curve.Params().Name, X: b64(raw[1 : 1+size]), Y: b64(raw[1+size:])}, nil
	case *rsa.PublicKey:
		return JWK{Kty: "RSA", N: b64(p.N.Bytes()), E: b64(big.NewInt(int64(p.E)).Bytes())}, nil
	case ed25519.PublicKey:
		return JWK{Kty: "OKP", Crv: "Ed25519", X: b64(p)}, nil
	}
	return JWK{}, fmt.Errorf("unsupported public key type %T", pub)
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of pub, base64url:
// the hash of the JSON of the key's required members only, in
// lexicographic order, without white space (§3.2). It is written out
// here, not marshalled: a DPoP proof's key is hashed on every request.
func Thumbprint(pub crypto.PublicKey) (string, error) {
	var buf [1100]byte // an RSA key of 4096 bits, and more, fits
	out := buf[:0]
	b64 := func(out, v []byte) []byte {
		n := base64.RawURLEncoding.EncodedLen(len(v))
		out = append(out, make([]byte, n)...) // grows buf in place: no allocation when it fits
		base64.RawURLEncoding.Encode(out[len(out)-n:], v)
		return out
	}
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		raw, err := p.Bytes() // 0x04 || X || Y
		if err != nil {
			return "", err
		}
		size := (len(raw) - 1) / 2
		out = append(out, `{"crv":"`...)
		out = append(out, p.Curve.Params().Name...)
		out = append(out, `","kty":"EC","x":"`...)
		out = b64(out, raw[1:1+size])
		out = append(out, `","y":"`...)
		out = b64(out, raw[1+size:])
	case *rsa.PublicKey:
		out = append(out, `{"e":"`...)
		out = b64(out, big.NewInt(int64(p.E)).Bytes())
		out = append(out, `","kty":"RSA","n":"`...)
		out = b64(out, p.N.Bytes())
	case ed25519.PublicKey:
		out = append(out, `{"crv":"Ed25519","kty":"OKP","x":"`...)
		out = b64(out, p)
	default:
		return "", fmt.Errorf("unsupported public key type %T", pub)
	}
	out = append(out, `"}`...)
	sum := sha256.Sum256(out)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// AlgFor returns the default algorithm for a private key's type.
func AlgFor(priv crypto.Signer) string { return AlgForPublic(priv.Public()) }
