package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestHydraTokenScopesAreReadFromScp: an access token as ORY Hydra v2
// issues it, with its scopes in "scp" (an array) and no "scope", is
// granted them (issue 23, row 12: it got 403 insufficient_scope). The key
// is published by a real JWKS found by discovery and named as Hydra names
// its keys; the header is Hydra's, typ "JWT".
func TestHydraTokenScopesAreReadFromScp(t *testing.T) {
	k := jwktest.NewKey(t, "RS256")
	k.KID = "9f1c6a2e-4b7d-4e0a-8c53-2d1e7f6b9a04"
	hydra := jwktest.NewJWKS(t, k)
	const aud = "https://docs.example.com/webapi"
	v := newValidator(t, accesstoken.Config{Issuer: hydra.Issuer(), Audience: []string{aud}})
	now := time.Now().Unix()
	tok := jwktest.Sign(t, k, map[string]any{"typ": "JWT"}, map[string]any{
		"iss":       hydra.Issuer(),
		"sub":       "pd-admin-client",
		"aud":       []string{aud},
		"client_id": "pd-admin-client",
		"scp":       []string{scope.AdminWebAPI},
		"ext":       map[string]any{},
		"jti":       "6f0f3c4e-91a2-4d8b-b7e5-3c2a1d0e9f87",
		"iat":       now,
		"nbf":       now,
		"exp":       now + 3600,
	})

	c, err := v.Validate(context.Background(), tok, accesstoken.Presentation{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Scopes, scope.Set{scope.AdminWebAPI}) || c.ClientID != "pd-admin-client" {
		t.Errorf("claims = %+v", c)
	}

	authed := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Realm: "test"})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux := http.NewServeMux()
	mux.Handle("/admin", authed(middleware.RequireScope(scope.AdminWebAPI)(ok)))
	mux.Handle("/connect", authed(middleware.RequireScope(scope.ConnectWebAPI)(ok)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if a := call(t, srv.URL+"/admin", "Bearer "+tok); a.status != http.StatusOK || a.body != "ok" {
		t.Fatalf("Admin API: status %d, body %q", a.status, a.body)
	}
	wantError(t, call(t, srv.URL+"/connect", "Bearer "+tok), http.StatusForbidden, "insufficient_scope", "")
}
