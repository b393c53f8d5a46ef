package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/secret"
)

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
