package accesstoken_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// FuzzValidate feeds arbitrary tokens to a validator. It must never panic,
// it must refuse every token over its size cap with ErrTooLarge, and it
// may accept a token only if the token verifies, independently of the
// validator, with the one key it trusts.

// FuzzValidate feeds arbitrary tokens to a validator. It must never panic,
// it must refuse every token over its size cap with ErrTooLarge, and it
// may accept a token only if the token verifies, independently of the
// validator, with the one key it trusts.
func FuzzValidate(f *testing.F) {
	k, err := keys.Generate("ES256")
	if err != nil {
		f.Fatal(err)
	}
	claims := jwktest.Claims(iss, scope.AdminWebAPI, 24*time.Hour)
	good := jwktest.Sign(f, k, nil, claims)
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add(jwktest.Sign(f, k, map[string]any{"typ": "JWT"}, jwktest.With(claims, "scope", []string{"a"})))
	f.Add(jwktest.Segment(map[string]any{"alg": "none"}) + "." + jwktest.Segment(claims) + ".")
	f.Add("a.b.c")
	f.Add("....")
	f.Add("")
	const maxSize = 1 << 10
	f.Add(jwktest.Sign(f, k, nil, jwktest.With(claims, "pad", strings.Repeat("p", maxSize))))
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss, Audience: []string{iss + "/resources"}, Keys: newCountingKeys(k), MaxTokenSize: maxSize})
	if err != nil {
		f.Fatal(err)
	}
	pub := k.Public()
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Validate(context.Background(), token, accesstoken.Presentation{})
		if len(token) > maxSize && !errors.Is(err, accesstoken.ErrTooLarge) {
			t.Fatalf("a %d-byte token over the %d-byte cap: err = %v", len(token), maxSize, err)
		}
		if err != nil {
			if c != nil {
				t.Fatal("claims with an error")
			}
			if len(token) > 16 && strings.Contains(err.Error(), token[:16]) {
				t.Fatal("the error echoes the token")
			}
			return
		}
		if _, perr := jwt.Parse(token, func(*jwt.Token) (any, error) { return pub, nil }, jwt.WithValidMethods([]string{"ES256"})); perr != nil {
			t.Fatalf("accepted a token that does not verify: %v", perr)
		}
	})
}
