package middleware_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/assertion"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

func newGateKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestGateAssertion: an upstream behind the gate takes the gate's
// assertion for its route, in one line, and puts its claims where a
// RequireScope finds them; it refuses one of another route, gate or key,
// an expired one, one that lives past a minute, two, none, and an access
// token, even a valid one, even signed by the gate's own key. And the
// other way: an assertion is no access token, even to a validator that
// trusts the gate's issuer and keys.
func TestGateAssertion(t *testing.T) {
	const gate = "https://gate.example.test"
	key := newGateKey(t)
	s, err := assertion.NewSigner(key, gate, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := assertion.JWKS(s)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := accesstoken.ParseJWKS(jwks)
	if err != nil {
		t.Fatal(err)
	}
	var seen *accesstoken.Claims
	h := middleware.RequireGateAssertion(middleware.GateAssertionConfig{Issuer: gate, Audience: "orders", Keys: keys})(
		middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen, _ = accesstoken.ClaimsFrom(r.Context())
			w.WriteHeader(http.StatusOK)
		})))
	call := func(values ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/orders/1", nil)
		for _, v := range values {
			r.Header.Add("X-Idsauth-Assertion", v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	now := time.Now()
	claims := assertion.Claims{Subject: "svc", ClientID: "svc", Scope: scope.AdminWebAPI, TokenIss: "https://login.example.test/ids"}
	good, err := s.Sign("orders", claims, now)
	if err != nil {
		t.Fatal(err)
	}
	if rec := call(good); rec.Code != http.StatusOK || seen == nil || seen.ClientID != "svc" || !seen.Scopes.Has(scope.AdminWebAPI) {
		t.Fatalf("the gate's assertion: %d %q, claims %+v", rec.Code, rec.Body, seen)
	}
	noScope, _ := s.Sign("orders", assertion.Claims{ClientID: "svc", Scope: scope.ConnectWebAPI}, now)
	if rec := call(noScope); rec.Code != http.StatusForbidden || !strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope") {
		t.Fatalf("an assertion without the route's scope, behind RequireScope: %d %v", rec.Code, rec.Header())
	}
	other, _ := assertion.NewSigner(newGateKey(t), gate, 0)
	otherGate, _ := assertion.NewSigner(key, "https://other-gate.example.test", 0)
	anotherRoute, _ := s.Sign("payments", claims, now)
	expired, _ := s.Sign("orders", claims, now.Add(-time.Minute))
	byOtherKey, _ := other.Sign("orders", claims, now)
	byOtherGate, _ := otherGate.Sign("orders", claims, now)
	gateSigner, err := clientauth.NewSigner(key, "", "")
	if err != nil {
		t.Fatal(err)
	}
	forge := func(typ string, lifetime time.Duration) string {
		tok, err := gateSigner.Sign("a test token", map[string]string{"typ": typ, "alg": "ES256", "kid": s.KeyID()}, map[string]any{
			"iss": gate, "aud": "orders", "iat": now.Unix(), "exp": now.Add(lifetime).Unix(), "client_id": "svc", "scope": scope.AdminWebAPI,
		})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	iss := idsauthtest.NewIssuer(t)
	for name, values := range map[string][]string{
		"none":                             nil,
		"two":                              {good, good},
		"another route's":                  {anotherRoute},
		"an expired one":                   {expired},
		"one by another key":               {byOtherKey},
		"another gate's":                   {byOtherGate},
		"one that lives two minutes":       {forge(assertion.Type, 2*time.Minute)},
		"an access token (typ at+jwt)":     {forge("at+jwt", 30*time.Second)},
		"a JWT of the gate's key, typ JWT": {forge("JWT", 30*time.Second)},
		"an access token of an issuer":     {iss.Token(t, scope.AdminWebAPI)},
		"garbage":                          {"not.a.jwt"},
	} {
		seen = nil
		rec := call(values...)
		if rec.Code != http.StatusForbidden || rec.Header().Get("Cache-Control") != "no-store" || seen != nil {
			t.Errorf("%s: %d %v, want 403 no-store", name, rec.Code, rec.Header())
		}
		if strings.Contains(rec.Body.String(), "{") {
			t.Errorf("%s: body %q", name, rec.Body)
		}
	}
	// The reverse: the assertion presented as an access token, to a
	// validator that trusts the gate as an issuer with its keys.
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: gate, Audience: []string{"orders"}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(t.Context(), good, accesstoken.Presentation{}); accesstoken.ReasonCode(err) != "type" {
		t.Fatalf("the assertion as an access token: %v, want refused for its type", err)
	}
	if _, err := assertion.NewSigner(key, gate, 61*time.Second); err == nil {
		t.Fatal("a signer of assertions that live over a minute was made")
	}
	// What it carries: no token, and a payload of the names above.
	seg := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(seg[1])
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil || m["iss"] != gate || m["aud"] != "orders" || m["exp"].(float64)-m["iat"].(float64) != 30 {
		t.Fatalf("payload %s", payload)
	}
	var _ crypto.Signer = key
}
