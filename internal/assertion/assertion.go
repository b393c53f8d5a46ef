// Package assertion makes and checks the assertion an idsauth gate signs
// for the upstream behind its proxy (docs/GATEWAY.md): a short-lived JWT
// saying that a request passed the gate, for which route, with which
// token's client and scopes. Its "typ" is its own (never an access
// token's), its key and "iss" are the gate's, its "aud" the route, and
// it lives a minute at most, so that an assertion never passes for an
// access token, nor an access token for an assertion. The gate signs
// (Signer); middleware.RequireGateAssertion checks (Verify).
package assertion

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/keys"
)

// Type is the assertion's "typ" header parameter: no access token's
// ("at+jwt", "JWT"), which accesstoken refuses, and checked exactly here.
const Type = "idsauth-gate+jwt"

// MaxLifetime is the longest an assertion lives, from iat to exp: the
// gate signs none longer, and Verify refuses one.
const MaxLifetime = 60 * time.Second

// maxSize is the longest assertion Verify reads.
const maxSize = 8 << 10

// Claims are what an assertion says of the request's token.
type Claims struct {
	Subject  string `json:"sub,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Scope    string `json:"scope,omitempty"`
	TokenIss string `json:"token_iss,omitempty"` // the access token's issuer
}

// Signer signs the gate's assertions.
type Signer struct {
	s        *clientauth.Signer
	issuer   string
	lifetime time.Duration
}

// NewSigner returns a Signer with key, as issuer ("iss"), for assertions
// of lifetime (zero: 30 seconds; at most MaxLifetime).
func NewSigner(key crypto.Signer, issuer string, lifetime time.Duration) (*Signer, error) {
	switch {
	case issuer == "":
		return nil, errors.New("the assertion's issuer is required")
	case lifetime < 0 || lifetime > MaxLifetime:
		return nil, fmt.Errorf("the assertion's lifetime %v: at most %v", lifetime, MaxLifetime)
	case lifetime == 0:
		lifetime = 30 * time.Second
	}
	s, err := clientauth.NewSigner(key, "", "")
	if err != nil {
		return nil, err
	}
	return &Signer{s: s, issuer: issuer, lifetime: lifetime}, nil
}

// Lifetime is how long the signer's assertions live.
func (s *Signer) Lifetime() time.Duration { return s.lifetime }

// KeyID is the kid of the signer's key: its RFC 7638 thumbprint.
func (s *Signer) KeyID() string { return s.s.KeyID() }

// Alg is the signer's algorithm.
func (s *Signer) Alg() string { return s.s.Alg() }

// Public is the signer's public key.
func (s *Signer) Public() crypto.PublicKey { return s.s.Public() }

// Sign returns an assertion for the route audience of c, issued at now.
func (s *Signer) Sign(audience string, c Claims, now time.Time) (string, error) {
	return s.s.Sign("the gate's assertion", map[string]string{"typ": Type, "alg": s.s.Alg(), "kid": s.s.KeyID()}, struct {
		Iss string `json:"iss"`
		Aud string `json:"aud"`
		Iat int64  `json:"iat"`
		Exp int64  `json:"exp"`
		Jti string `json:"jti"`
		Claims
	}{s.issuer, audience, now.Unix(), now.Add(s.lifetime).Unix(), rand.Text(), c})
}

// Check is what Verify holds an assertion to.
type Check struct {
	Issuer   string
	Audience string
	// Keys returns the gate's keys that may verify a signature of alg
	// whose header names kid.
	Keys   func(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error)
	Now    time.Time
	Leeway time.Duration
}

// ErrInvalid is every refusal of Verify: the reasons are for the log.
var ErrInvalid = errors.New("the gate's assertion is missing or invalid")

// invalid is an ErrInvalid with why.
func invalid(why string) error { return fmt.Errorf("%w: %s", ErrInvalid, why) }

// Verify checks the assertion a and returns its claim set, the JSON of
// its payload: its form, typ Type, an alg of jws.Algorithms, no crit,
// the signature by one of c.Keys (two at most), iss c.Issuer, aud holding
// c.Audience, exp not passed and iat not ahead (with leeway), and a
// lifetime of MaxLifetime at most.
func Verify(ctx context.Context, a string, c Check) ([]byte, error) {
	if a == "" {
		return nil, invalid("none")
	}
	if len(a) > maxSize {
		return nil, invalid("too large")
	}
	t, err := jws.Parse(a)
	if err != nil {
		return nil, invalid("not a JWS")
	}
	typ, _, err := t.String("typ")
	switch {
	case err != nil || typ != Type:
		return nil, invalid("typ is not " + Type)
	case !slices.Contains(jws.Algorithms, t.Alg):
		return nil, invalid("alg not accepted")
	case t.Has("crit"):
		return nil, invalid("crit")
	}
	keys, err := c.Keys(ctx, t.KID, t.Alg)
	if err != nil || len(keys) == 0 || len(keys) > 2 {
		return nil, invalid("no key of the gate's for it")
	}
	sig, err := t.Signature()
	if err != nil {
		return nil, invalid("not a JWS")
	}
	verified := false
	for _, k := range keys {
		verified = verified || jws.Verify(t.Alg, t.SigningInput, sig, k) == nil
	}
	if !verified {
		return nil, invalid("signature")
	}
	payload, err := t.Payload()
	if err != nil {
		return nil, invalid("not a JWS")
	}
	m, err := jws.ReadClaims(payload)
	if err != nil {
		return nil, invalid("claims")
	}
	iss, _, err := m.String("iss")
	if err != nil || iss != c.Issuer {
		return nil, invalid("iss is not the gate's")
	}
	aud, _, err := m.Strings("aud")
	if err != nil || !slices.Contains(aud, c.Audience) {
		return nil, invalid("aud is not this route's")
	}
	exp, hasExp, err1 := m.Time("exp")
	iat, hasIat, err2 := m.Time("iat")
	switch {
	case err1 != nil || err2 != nil || !hasExp || !hasIat:
		return nil, invalid("exp or iat missing")
	case !c.Now.Before(exp.Add(c.Leeway)):
		return nil, invalid("expired")
	case iat.After(c.Now.Add(c.Leeway)):
		return nil, invalid("issued in the future")
	case exp.Sub(iat) > MaxLifetime:
		return nil, invalid("lives longer than " + MaxLifetime.String())
	}
	return payload, nil
}

// JWKS is the JSON Web Key Set of the public keys of signers, for the
// upstreams (accesstoken.ParseJWKS or NewJWKS read it).
func JWKS(signers ...*Signer) ([]byte, error) {
	var set struct {
		Keys []keys.JWK `json:"keys"`
	}
	for _, s := range signers {
		j, err := keys.PublicJWKOf(s.Public())
		if err != nil {
			return nil, err
		}
		j.Kid, j.Alg, j.Use = s.KeyID(), s.Alg(), "sig"
		set.Keys = append(set.Keys, j)
	}
	return json.Marshal(set)
}
