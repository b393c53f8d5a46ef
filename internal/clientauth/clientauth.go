// Package clientauth signs the client assertions of private_key_jwt
// (RFC 7523 §2.2, OpenID Connect Core §9) with any crypto.Signer: what the
// client package and the idsauth command share.
package clientauth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"time"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/idsauth/idsauth/internal/keys"
)

// AssertionType is the client_assertion_type of private_key_jwt.
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is how long an assertion is valid: long enough for
// clock skew and a slow round trip, short enough that a leaked one is soon
// useless (and within any server's bound: this issuer's is 5 minutes).
const assertionLifetime = time.Minute

// Signer signs client assertions with any crypto.Signer, so that a key in
// a KMS or an HSM works as well as one in memory.
type Signer struct {
	key crypto.Signer
	alg string
	kid string
}

// NewSigner returns a Signer for key with alg (empty: the one that fits
// the key, RS256 for RSA) and kid (empty: the RFC 7638 thumbprint).
func NewSigner(key crypto.Signer, alg, kid string) (*Signer, error) {
	pub := key.Public()
	if alg == "" {
		alg = keys.AlgForPublic(pub)
	}
	switch alg {
	case "ES256", "RS256", "PS256", "EdDSA":
	default:
		return nil, fmt.Errorf("alg %q: want ES256, RS256, PS256 or EdDSA", alg)
	}
	if err := keys.FitPublic(alg, pub); err != nil {
		return nil, err
	}
	if kid == "" {
		var err error
		if kid, err = keys.Thumbprint(pub); err != nil {
			return nil, err
		}
	}
	return &Signer{key: key, alg: alg, kid: kid}, nil
}

// KeyID is the kid of the assertions.
func (s *Signer) KeyID() string { return s.kid }

// Assertion returns a new assertion for clientID to the authorization
// server audience (RFC 7523 §3: its issuer identifier, as
// draft-ietf-oauth-rfc7523bis requires, or its token endpoint): iss and
// sub clientID, aud audience, iat now, exp a minute later, a jti of 130
// random bits.
func (s *Signer) Assertion(clientID, audience string, now time.Time) (string, error) {
	return s.sign("the client assertion", map[string]string{"alg": s.alg, "typ": "JWT", "kid": s.kid}, struct {
		Iss string `json:"iss"`
		Sub string `json:"sub"`
		Aud string `json:"aud"`
		Iat int64  `json:"iat"`
		Exp int64  `json:"exp"`
		Jti string `json:"jti"`
	}{clientID, clientID, audience, now.Unix(), now.Add(assertionLifetime).Unix(), rand.Text()})
}

// Key is the signer's key.
func (s *Signer) Key() crypto.Signer { return s.key }

// Alg is the signer's JWS algorithm.
func (s *Signer) Alg() string { return s.alg }

// Public is the signer's public key.
func (s *Signer) Public() crypto.PublicKey { return s.key.Public() }

// Sign returns the compact JWS of header and claims, as JSON, signed by
// the signer's key (the header must name its alg and kid); what names it
// in an error. The gate's assertion (internal/assertion) is signed so.
func (s *Signer) Sign(what string, header, claims any) (string, error) {
	return s.sign(what, header, claims)
}

// sign returns the compact JWS of header and claims, as JSON, signed by
// the signer's key; what names it in an error.
func (s *Signer) sign(what string, header, claims any) (string, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sig, err := s.signature([]byte(signed))
	if err != nil {
		return "", fmt.Errorf("signing %s: %w", what, err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// Proof returns a new DPoP proof (RFC 9449 §4.2) for a request with
// method to url, by the signer's key, carried in its header as a public
// JWK: iat now, a jti of 130 random bits, ath the hash of accessToken when
// one is given (at a resource server), and nonce when the server gave
// one.
func (s *Signer) Proof(method, url, accessToken, nonce string, now time.Time) (string, error) {
	jwk, err := keys.PublicJWKOf(s.key.Public())
	if err != nil {
		return "", err
	}
	header := struct {
		Typ string   `json:"typ"`
		Alg string   `json:"alg"`
		JWK keys.JWK `json:"jwk"`
	}{"dpop+jwt", s.alg, jwk}
	claims := struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath,omitempty"`
		Nonce string `json:"nonce,omitempty"`
	}{rand.Text(), method, url, now.Unix(), "", nonce}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		claims.ATH = base64.RawURLEncoding.EncodeToString(h[:])
	}
	return s.sign("the DPoP proof", header, claims)
}

// JKT is the RFC 7638 thumbprint of the signer's public key: what a
// DPoP-bound token's cnf.jkt holds.
func (s *Signer) JKT() (string, error) { return keys.Thumbprint(s.key.Public()) }

// signature signs msg as JWS alg s.alg (RFC 7518 §3, RFC 8037).
func (s *Signer) signature(msg []byte) ([]byte, error) {
	if s.alg == "EdDSA" {
		return s.key.Sign(rand.Reader, msg, crypto.Hash(0))
	}
	digest := sha256.Sum256(msg)
	var opts crypto.SignerOpts = crypto.SHA256
	if s.alg == "PS256" {
		opts = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
	}
	sig, err := s.key.Sign(rand.Reader, digest[:], opts)
	if err != nil || s.alg != "ES256" {
		return sig, err
	}
	return ecdsaJOSE(sig)
}

// ecdsaJOSE turns an ASN.1 ECDSA signature, as a crypto.Signer makes it,
// into JWS's 64 bytes of R and S (RFC 7518 §3.4).
func ecdsaJOSE(der []byte) ([]byte, error) {
	var r, sv big.Int
	in, inner := cryptobyte.String(der), cryptobyte.String(nil)
	if !in.ReadASN1(&inner, asn1.SEQUENCE) || !in.Empty() || !inner.ReadASN1Integer(&r) || !inner.ReadASN1Integer(&sv) || !inner.Empty() ||
		r.Sign() <= 0 || sv.Sign() <= 0 || r.BitLen() > 256 || sv.BitLen() > 256 {
		return nil, fmt.Errorf("not an ECDSA P-256 signature")
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	sv.FillBytes(out[32:])
	return out, nil
}
