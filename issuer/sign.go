package issuer

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// sign makes an access token for cl with the granted scopes and audience
// (RFC 9068).
func (st *state) sign(cl *client, granted, aud []string, now time.Time) (string, error) {
	var sc any = strings.Join(granted, " ")
	if st.scopeArray {
		sc = granted
	}
	claims := accessClaims{
		Issuer:    st.issuer,
		Subject:   cl.id,
		ClientID:  cl.id,
		Audience:  aud,
		Scope:     sc,
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expires:   now.Add(cl.lifetime).Unix(),
		ID:        rand.Text(), // 130 random bits
	}
	tok := &jwt.Token{
		Header: map[string]any{"alg": st.signer.Alg, "typ": "at+jwt", "kid": st.signer.KID},
		Claims: claims,
		Method: st.method,
	}
	s, err := tok.SignedString(st.signer.Private)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return s, nil
}

// accessClaims is the claim set of an access token, in a fixed order.
type accessClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	ClientID  string   `json:"client_id"`
	Audience  []string `json:"aud"`
	Scope     any      `json:"scope"`
	IssuedAt  int64    `json:"iat"`
	NotBefore int64    `json:"nbf"`
	Expires   int64    `json:"exp"`
	ID        string   `json:"jti"`
}

func (c accessClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Expires, 0)), nil
}
func (c accessClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c accessClaims) GetNotBefore() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.NotBefore, 0)), nil
}
func (c accessClaims) GetIssuer() (string, error)             { return c.Issuer, nil }
func (c accessClaims) GetSubject() (string, error)            { return c.Subject, nil }
func (c accessClaims) GetAudience() (jwt.ClaimStrings, error) { return c.Audience, nil }
