package idsauthtest_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// echoing answers a refusal as the middleware does, and then leaks one
// part of the token it was sent into a response header.
func echoing(next http.Handler, leak func(token string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if strings.Count(tok, ".") == 2 && !strings.Contains(tok, " ") {
			w.Header().Set("X-Debug", leak(tok))
		}
		next.ServeHTTP(w, r)
	})
}

func claim(token, name string) string {
	seg := strings.Split(token, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(seg[1])
	var m map[string]any
	json.Unmarshal(raw, &m)
	s, _ := m[name].(string)
	return s
}

// TestCheckProtectedFindsEveryEcho: a chain that echoes the token's
// header, payload, payload decoded, jti or sub in a response header is
// reported (only the signature's tail was looked for), and a validator
// that accepts cnf-bound tokens is reported; the right chain is not.
func TestCheckProtectedFindsEveryEcho(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	route := "GET /webapi/api/v3/demo/Admin/Users"
	right := middleware.RequireBearer(iss.Validator())(middleware.RequireScope(scope.AdminWebAPI)(ok))
	rec := &recorder{TB: t}
	iss.CheckProtected(rec, right, route, scope.AdminWebAPI)
	if len(rec.errs) > 0 {
		t.Fatalf("the right chain was reported:\n%s", rec.report())
	}
	for name, leak := range map[string]func(string) string{
		"header":  func(tok string) string { return strings.Split(tok, ".")[0] },
		"payload": func(tok string) string { return strings.Split(tok, ".")[1] },
		"payload decoded": func(tok string) string {
			raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
			return string(raw)
		},
		"jti":             func(tok string) string { return "request " + claim(tok, "jti") },
		"sub":             func(tok string) string { return "caller=" + claim(tok, "sub") },
		"signature start": func(tok string) string { s := strings.Split(tok, ".")[2]; return s[:min(20, len(s))] },
	} {
		rec := &recorder{TB: t}
		iss.CheckProtected(rec, echoing(right, leak), route, scope.AdminWebAPI)
		if !strings.Contains(rec.report(), "the answer echoes the token's") {
			t.Errorf("a chain echoing the token's %s was not reported:\n%s", name, rec.report())
		}
	}

	bound, err := accesstoken.New(t.Context(), accesstoken.Config{
		Issuer: iss.URL(), Audience: []string{iss.Audience}, Keys: iss, AllowBoundTokens: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec = &recorder{TB: t}
	iss.CheckProtected(rec, middleware.RequireBearer(bound)(middleware.RequireScope(scope.AdminWebAPI)(ok)), route, scope.AdminWebAPI)
	if !strings.Contains(rec.report(), "a token bound to a key (cnf)") {
		t.Errorf("a validator accepting cnf-bound tokens was not reported:\n%s", rec.report())
	}
}

// TestCheckSCIMAtAnyPath: a SCIM route elsewhere than the contract's path
// is checked as well (it got 16 failures like "no token: status 404").
func TestCheckSCIMAtAnyPath(t *testing.T) {
	tenants, err := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-token").String()}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /scim/v2/{tenant}/Users", middleware.SCIMAuth(tenants)(ok))
	rec := &recorder{TB: t}
	idsauthtest.CheckSCIM(rec, mux, "GET /scim/v2/{tenant}/Users", "acme", "acme-token")
	if len(rec.errs) > 0 {
		t.Fatalf("SCIMAuth at /scim/v2/{tenant}/Users was reported:\n%s", rec.report())
	}
}
