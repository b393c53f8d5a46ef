package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

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
	v, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: iss, Audience: []string{iss + "/resources"}, Keys: newCountingKeys(k), MaxTokenSize: maxSize})
	if err != nil {
		f.Fatal(err)
	}
	pub := k.Public()
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Validate(context.Background(), token)
		if len(token) > maxSize && !errors.Is(err, middleware.ErrTooLarge) {
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

// FuzzSCIMAuth sends arbitrary tenants and Authorization values. Only the
// right token on the right tenant passes; every refusal is the same answer.
// The failure limits are set out of reach: they have tests of their own.
func FuzzSCIMAuth(f *testing.F) {
	tenants := tenantsOf(f, "acme", secret.HashSHA256("acme-token"))
	h := middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{Tenant: func(r *http.Request) string { return r.Header.Get("X-Tenant") },
		Limits: limit.Config{FailedAttemptsPerSubject: 1 << 30, FailedAttemptsPerAddress: 1 << 30}})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }))
	refusal := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Body.String()
	}()
	for _, s := range [][2]string{{"acme", "Bearer acme-token"}, {"acme", "bearer acme-token"}, {"other", "Bearer acme-token"}, {"", ""}, {"acme", "Bearer acme-token "}, {"acme", "Basic x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, tenant, authz string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header["X-Tenant"] = []string{tenant}
		req.Header["Authorization"] = []string{authz}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		v := strings.Trim(authz, " \t")
		ok := tenant == "acme" && len(v) > 7 && strings.EqualFold(v[:6], "bearer") && v[6] == ' ' &&
			strings.TrimLeft(v[6:], " ") == "acme-token"
		switch rec.Code {
		case 299:
			if !ok {
				t.Fatalf("admitted tenant %q with %q", tenant, authz)
			}
		case 401:
			if ok {
				t.Fatalf("refused the right token")
			}
			if rec.Body.String() != refusal || rec.Header().Get("Content-Type") != "application/scim+json" {
				t.Fatalf("a refusal that differs: %q", rec.Body)
			}
		default:
			t.Fatalf("status %d", rec.Code)
		}
	})
}
