package accesstoken

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

// TestJWKSKeyfunc: the fetched key set hands golang-jwt's parser
// keyfunc's Keyfunc over the same keys: a token of the set's key parses,
// a key that joins the set later is found by its kid (a fetch, as the
// unknown-kid limit allows), and a spent limit fetches nothing.
func TestJWKSKeyfunc(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	set := jwktest.NewJWKS(t, k)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	limit := rate.NewLimiter(rate.Every(time.Hour), 1)
	src, err := newJWKSSource(ctx, limitedClient(nil, time.Second), set.JWKSURL(), Config{RefreshUnknownKID: limit})
	if err != nil {
		t.Fatal(err)
	}
	claims := jwktest.Claims(set.Issuer(), scope.AdminWebAPI, time.Hour)
	parse := func(tok string) error {
		_, err := jwt.Parse(tok, src.keyfunc(), jwt.WithValidMethods([]string{"ES256"}))
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
