package accesstoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
)

// newJWKS fetches the key set of cfg for as long as the test lasts.
func newJWKS(t testing.TB, cfg accesstoken.JWKSConfig) *accesstoken.JWKS {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := accesstoken.NewJWKS(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJWKSKeyfunc: the fetched key set hands golang-jwt's parser
// keyfunc's Keyfunc over the same keys: a token of the set's key parses,
// a key that joins the set later is found by its kid (a fetch, as the
// unknown-kid limit allows), and a spent limit fetches nothing.
func TestJWKSKeyfunc(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	set := jwktest.NewJWKS(t, k)
	src := newJWKS(t, accesstoken.JWKSConfig{URL: set.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Hour), 1)})
	claims := jwktest.Claims(set.Issuer(), scope.AdminWebAPI, time.Hour)
	parse := func(tok string) error {
		_, err := jwt.Parse(tok, src.Keyfunc, jwt.WithValidMethods([]string{"ES256"}))
		return err
	}
	if err := parse(jwktest.Sign(t, k, nil, claims)); err != nil {
		t.Fatalf("the set's key: %v", err)
	}
	next := jwktest.NewKey(t, "ES256")
	set.SetKeys(k, next)
	hits := set.Hits()
	if err := parse(jwktest.Sign(t, next, nil, claims)); err != nil || set.Hits() != hits+1 {
		t.Fatalf("a new key: %v, %d fetches", err, set.Hits()-hits)
	}
	if err := parse(jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, claims)); err == nil || set.Hits() != hits+1 {
		t.Fatalf("an unknown kid, the limit spent: %v, %d fetches", err, set.Hits()-hits)
	}
}

// TestParseJWKS: a key set given as JSON verifies its keys' tokens, by kid
// and without one, with the checks of a fetched set, and never changes:
// an unknown kid fetches nothing and is refused.
func TestParseJWKS(t *testing.T) {
	es, ed := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "EdDSA")
	enc := es.PublicJWK()
	enc.Use, enc.Kid = "enc", "enc-key"
	data, err := json.Marshal(map[string]any{"keys": []keys.JWK{es.PublicJWK(), ed.PublicJWK(), enc}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := accesstoken.ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: set, CacheSize: -1})
	claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	for name, tok := range map[string]string{
		"ES256 by kid":      jwktest.Sign(t, es, nil, claims),
		"EdDSA without kid": jwktest.Sign(t, ed, map[string]any{"kid": nil}, claims),
		"Ed25519 by kid":    jwktest.Sign(t, ed, map[string]any{"alg": "Ed25519"}, claims),
	} {
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, tok := range map[string]string{
		"an unknown kid":      jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, claims),
		"an encryption key's": jwktest.Sign(t, es, map[string]any{"kid": "enc-key"}, claims),
	} {
		if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
			t.Errorf("%s: %v, want ErrUnknownKey", name, err)
		}
	}
	if set.KeysVersion() != 1 {
		t.Errorf("version %d", set.KeysVersion())
	}
	for _, bad := range []string{`[]`, `{"keys":[{"kty":"EC","crv":"P-256","x":"AA"}]}`} {
		if _, err := accesstoken.ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}
