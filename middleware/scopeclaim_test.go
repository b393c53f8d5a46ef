package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

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
	v := newValidator(t, middleware.ValidatorConfig{Issuer: hydra.Issuer(), Audience: []string{aud}})
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

	c, err := v.Validate(context.Background(), tok)
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

// TestScpClaimIsReadWhenScopeIsAbsent: without a "scope" claim (or with
// "scope": null, which counts as absent), "scp" is read, as a
// space-delimited string (Microsoft Entra ID) or an array (Hydra, Okta),
// under the rules of "scope": split on U+0020 only, no other whitespace or
// control character in a name, and a value of another JSON type refused.
// With both, "scope" wins and "scp" is not read at all. NewClaims reads
// them the same way.
func TestScpClaimIsReadWhenScopeIsAbsent(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, middleware.ValidatorConfig{Issuer: iss, Keys: newCountingKeys(k), CacheSize: -1})
	base := `"iss":"` + iss + `","aud":"` + iss + `/resources","exp":` + strconv.FormatInt(time.Now().Unix()+3600, 10)
	both := scope.Set{scope.AdminWebAPI, scope.ConnectWebAPI}
	cases := []struct {
		name   string
		claims string // beside base
		want   scope.Set
		err    error
	}{
		{"scp array (Hydra, Okta)", `"scp":["pd_AdminWebApi","pd_ConnectWebApi"]`, both, nil},
		{"scp string (Entra ID)", `"scp":"pd_ConnectWebApi pd_AdminWebApi"`, both, nil},
		{"scope null: scp is read", `"scope":null,"scp":["pd_AdminWebApi"]`, scope.Set{scope.AdminWebAPI}, nil},
		{"scp null: no scopes", `"scp":null`, nil, nil},
		{"scope wins over scp", `"scope":"pd_ConnectWebApi","scp":["pd_AdminWebApi"]`, scope.Set{scope.ConnectWebAPI}, nil},
		{"scope wins, scp after it", `"scp":"pd_AdminWebApi","scope":["pd_ConnectWebApi"]`, scope.Set{scope.ConnectWebAPI}, nil},
		{"empty scope wins over scp", `"scope":"","scp":["pd_AdminWebApi"]`, nil, nil},
		{"a broken scp beside scope is not read", `"scope":"pd_AdminWebApi","scp":7`, scope.Set{scope.AdminWebAPI}, nil},
		{"a broken scope beside scp is refused", `"scope":7,"scp":["pd_AdminWebApi"]`, nil, middleware.ErrScopeClaim},
		{"SCP is not scp", `"SCP":["pd_AdminWebApi"]`, nil, nil},
		{"scp string split on a tab", `"scp":"pd_ConnectWebApi\tpd_AdminWebApi"`, nil, middleware.ErrScopeName},
		{"scp string split on a non-breaking space", `"scp":"pd_ConnectWebApi\u00a0pd_AdminWebApi"`, nil, middleware.ErrScopeName},
		{"scp array entry with a space", `"scp":["pd_ConnectWebApi pd_AdminWebApi"]`, nil, middleware.ErrScopeName},
		{"scp array entry with a newline", `"scp":["pd_AdminWebApi\n"]`, nil, middleware.ErrScopeName},
		{"scp a number", `"scp":1`, nil, middleware.ErrScopeClaim},
		{"scp an object", `"scp":{"pd_AdminWebApi":true}`, nil, middleware.ErrScopeClaim},
		{"scp array with a number", `"scp":["pd_AdminWebApi",1]`, nil, middleware.ErrScopeClaim},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := `{` + base + `,` + c.claims + `}`
			got, err := v.Validate(context.Background(), signPayload(t, k, payload))
			parsed, perr := middleware.NewClaims([]byte(payload))
			if c.err != nil {
				if !errors.Is(err, c.err) || got != nil {
					t.Fatalf("Validate: err = %v, want %v", err, c.err)
				}
				if !errors.Is(perr, c.err) {
					t.Fatalf("NewClaims: err = %v, want %v", perr, c.err)
				}
				return
			}
			if err != nil || perr != nil {
				t.Fatalf("Validate: %v; NewClaims: %v", err, perr)
			}
			if !slices.Equal(got.Scopes, c.want) || !slices.Equal(parsed.Scopes, c.want) {
				t.Fatalf("scopes = %v (Validate), %v (NewClaims), want %v", got.Scopes, parsed.Scopes, c.want)
			}
		})
	}
}
