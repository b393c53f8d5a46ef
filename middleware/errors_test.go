package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestRejectionLogHoldsFactsWireDoesNot: RequireBearer writes the fixed
// reason on the wire, gives the hook the refusal with its code and facts,
// and logs the facts.
func TestRejectionLogHoldsFactsWireDoesNot(t *testing.T) {
	logs, logger := testlog.New()
	var hooked error
	s := newAPI(t, "ES256", accesstoken.Config{}, middleware.BearerConfig{Logger: logger, OnReject: func(_ *http.Request, _ int, err error) { hooked = err }})
	exp := time.Now().Add(-time.Hour).Truncate(time.Second)
	expired := jwktest.Sign(t, s.key, nil, jwktest.With(jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, time.Hour), "exp", exp.Unix()))
	a := call(t, s.URL+"/admin", "Bearer "+expired)
	wantError(t, a, 401, "invalid_token", "token expired")
	var ve *accesstoken.ValidationError
	if !errors.As(hooked, &ve) || ve.Code != "expired" || !errors.Is(hooked, accesstoken.ErrExpired) || !ve.Expiry.Equal(exp) {
		t.Errorf("hook got %#v, want the ValidationError of the expired token", hooked)
	}
	out := logs.String()
	if !strings.Contains(out, `"reason":"token expired"`) || !strings.Contains(out, `"detail":"token expired: exp `+exp.UTC().Format(time.RFC3339)) {
		t.Errorf("log = %s", out)
	}
	if strings.Contains(a.body, exp.UTC().Format(time.RFC3339)) || strings.Contains(a.header.Get("WWW-Authenticate"), "exp ") {
		t.Errorf("facts on the wire: %s", a.body)
	}
}
