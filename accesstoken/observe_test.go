package accesstoken_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/eventtest"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
)

// TestEventsOfRequireBearer: every request gives exactly its events, once:
// the Validator's validation (from the cache or not) and the middleware's
// rejection, with the reason's code; none holds any part of a token or an
// error_description. The reject hook and the logger, observers fed by the
// same event, still see each rejection once.

// TestEventsOfJWKSFetches: each fetch of the JWKS, at start and on an
// unknown kid, is one event: the keys it holds, or why it failed.
func TestEventsOfJWKSFetches(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	j := jwktest.NewJWKS(t, k)
	j.SetDown(true)
	rec := &eventtest.Recorder{}
	keys, err := accesstoken.NewJWKS(t.Context(), accesstoken.JWKSConfig{URL: j.JWKSURL(), Observer: rec, RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: j.Issuer(), AnyAudience: true, Keys: keys, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	eventtest.Want(t, "JWKS down at start", rec.Take(), observe.Event{Kind: observe.KeysFetchFailed, Reason: "http_status"})

	j.SetDown(false)
	j.SetBody([]byte("<html>not a key set</html>"))
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(t.Context(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrKeysUnavailable) {
		t.Fatalf("err = %v", err)
	}
	eventtest.Want(t, "JWKS not JSON", rec.Take(),
		observe.Event{Kind: observe.KeysFetchFailed, Reason: "invalid"},
		observe.Event{Kind: observe.ValidationFailed, Reason: "keys_unavailable"})

	j.SetBody(nil)
	if _, err := v.Validate(t.Context(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatal(err)
	}
	eventtest.Want(t, "JWKS back", rec.Take(),
		observe.Event{Kind: observe.KeysFetched, Keys: 1},
		observe.Event{Kind: observe.ValidationSucceeded})

	j.Close()
	other := jwktest.Sign(t, jwktest.NewKey(t, "ES256"), nil, jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour))
	if _, err := v.Validate(t.Context(), other, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("err = %v", err)
	}
	eventtest.Want(t, "JWKS server gone", rec.Take(),
		observe.Event{Kind: observe.KeysFetchFailed, Reason: "transport"},
		observe.Event{Kind: observe.ValidationFailed, Reason: "unknown_key"})
	eventtest.Scan(t, rec.All(), nil, tok, other, j.URL, "not a key set")
}
