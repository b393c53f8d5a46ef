package middleware

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/scope"
)

// Claims are the validated claims of an access token (RFC 9068 §2.2).
// A *Claims may be shared between requests that carry the same token:
// treat it as read-only.
type Claims struct {
	Issuer    string    // iss
	Subject   string    // sub
	ClientID  string    // client_id
	Audience  []string  // aud
	Scopes    scope.Set // scope, from a space-delimited string or an array
	IssuedAt  time.Time // iat; zero when absent
	NotBefore time.Time // nbf; zero when absent
	ExpiresAt time.Time // exp
	ID        string    // jti

	payload string // the token's payload segment, for Decode
}

// Decode unmarshals the whole claim set into v, for claims this type does
// not name.
func (c *Claims) Decode(v any) error {
	b, err := base64.RawURLEncoding.DecodeString(c.payload)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Raw returns the whole claim set as a map.
func (c *Claims) Raw() (map[string]any, error) {
	var m map[string]any
	return m, c.Decode(&m)
}

// jwtClaims is what the parser decodes into.
type jwtClaims struct {
	jwt.RegisteredClaims
	ClientID string          `json:"client_id"`
	Scope    json.RawMessage `json:"scope"`
}

func (j *jwtClaims) claims(payload string) (*Claims, error) {
	s, err := scope.ParseClaim(j.Scope)
	if err != nil {
		return nil, ErrScopeClaim
	}
	c := &Claims{
		Issuer:   j.Issuer,
		Subject:  j.Subject,
		ClientID: j.ClientID,
		Audience: j.Audience,
		Scopes:   s,
		ID:       j.ID,
		payload:  payload,
	}
	if j.IssuedAt != nil {
		c.IssuedAt = j.IssuedAt.Time
	}
	if j.NotBefore != nil {
		c.NotBefore = j.NotBefore.Time
	}
	if j.ExpiresAt != nil {
		c.ExpiresAt = j.ExpiresAt.Time
	}
	return c, nil
}
