package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const scimPattern = "/webapi/scim-api/v1/{tenant}/scim/Users"

func scimServer(t *testing.T, tenants middleware.TenantStore, cfg middleware.SCIMConfig) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(scimPattern, middleware.SCIMAuthWithConfig(tenants, cfg)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", scimerr.ContentType)
		fmt.Fprintf(w, `{"tenant":%q}`, r.PathValue("tenant"))
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func scimURL(srv *httptest.Server, tenant string) string {
	return srv.URL + "/webapi/scim-api/v1/" + tenant + "/scim/Users"
}

// wantSCIM401 checks the one refusal SCIMAuth has, field by field.
func wantSCIM401(t *testing.T, a answer) {
	t.Helper()
	if a.status != 401 {
		t.Fatalf("status = %d, want 401; body %s", a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/scim+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if got := a.header.Get("WWW-Authenticate"); got != `Bearer realm="scim"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	if a.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q", a.header.Get("Cache-Control"))
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.body), &body); err != nil {
		t.Fatalf("body %q: %v", a.body, err)
	}
	if string(body["schemas"]) != `["urn:ietf:params:scim:api:messages:2.0:Error"]` {
		t.Errorf("schemas = %s", body["schemas"])
	}
	if string(body["status"]) != `"401"` {
		t.Errorf("status = %s, want the string \"401\"", body["status"])
	}
	if _, ok := body["scimType"]; ok {
		t.Error("scimType on a 401")
	}
	if string(body["detail"]) != `"The authorization header is invalid or missing"` {
		t.Errorf("detail = %s", body["detail"])
	}
	if len(body) != 3 {
		t.Errorf("unexpected fields: %s", a.body)
	}
}

func TestSCIMAuth(t *testing.T) {
	tenants := tenantsFrom(t, map[string][]secret.Hash{
		"acme":   {secret.HashSHA256("acme-old"), secret.HashSHA256("acme-new")},
		"globex": {secret.HashSHA256("globex-token")},
	})
	srv := scimServer(t, tenants, middleware.SCIMConfig{})

	t.Run("both tokens of a tenant in rotation pass", func(t *testing.T) {
		for _, tok := range []string{"acme-old", "acme-new"} {
			a := call(t, scimURL(srv, "acme"), "Bearer "+tok)
			if a.status != 200 || a.body != `{"tenant":"acme"}` {
				t.Fatalf("%s: %d %s", tok, a.status, a.body)
			}
		}
	})
	refusals := []struct {
		name   string
		tenant string
		authz  []string
	}{
		{"missing token", "acme", nil},
		{"Basic scheme", "acme", []string{"Basic YWNtZTphY21lLW9sZA=="}},
		{"Bearer with nothing", "acme", []string{"Bearer"}},
		{"two Authorization headers", "acme", []string{"Bearer acme-old", "Bearer acme-old"}},
		{"space inside the token", "acme", []string{"Bearer acme -old"}},
		{"wrong token", "acme", []string{"Bearer acme-wrong"}},
		{"tenant A's token on tenant B", "globex", []string{"Bearer acme-old"}},
		{"unknown tenant", "initech", []string{"Bearer acme-old"}},
		{"token in lower-case scheme but wrong", "acme", []string{"bearer globex-token"}},
	}
	var first answer
	for i, c := range refusals {
		t.Run(c.name+" gets the one 401", func(t *testing.T) {
			a := call(t, scimURL(srv, c.tenant), c.authz...)
			wantSCIM401(t, a)
			if i == 0 {
				first = a
				return
			}
			// Indistinguishable: same status, headers and body.
			if a.body != first.body || a.header.Get("WWW-Authenticate") != first.header.Get("WWW-Authenticate") || a.header.Get("Content-Type") != first.header.Get("Content-Type") {
				t.Errorf("answer differs from the missing-token answer")
			}
		})
	}
	t.Run("Replace swaps tenants at once", func(t *testing.T) {
		if err := tenants.Replace([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-newest").String()}}}); err != nil {
			t.Fatal(err)
		}
		wantSCIM401(t, call(t, scimURL(srv, "acme"), "Bearer acme-old"))
		if a := call(t, scimURL(srv, "acme"), "Bearer acme-newest"); a.status != 200 {
			t.Fatalf("got %d", a.status)
		}
	})
}

func TestSCIMAuthIdentityTokens(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	jwks := jwktest.NewJWKS(t, k)
	v := newValidator(t, accesstoken.Config{Issuer: jwks.Issuer()})
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	admin := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	connect := jwktest.Sign(t, k, nil, jwktest.Claims(jwks.Issuer(), scope.ConnectWebAPI, time.Hour))

	t.Run("refused by default", func(t *testing.T) {
		srv := scimServer(t, tenants, middleware.SCIMConfig{})
		wantSCIM401(t, call(t, scimURL(srv, "acme"), "Bearer "+admin))
	})
	t.Run("accepted with the configured scope when enabled", func(t *testing.T) {
		srv := scimServer(t, tenants, middleware.SCIMConfig{IdentityTokens: v, IdentityTokenScopes: []string{scope.AdminWebAPI}})
		if a := call(t, scimURL(srv, "acme"), "Bearer "+admin); a.status != 200 {
			t.Fatalf("got %d %s", a.status, a.body)
		}
		a := call(t, scimURL(srv, "acme"), "Bearer "+connect)
		if a.status != 403 || a.header.Get("Content-Type") != scimerr.ContentType || !strings.Contains(a.body, `"status":"403"`) {
			t.Fatalf("valid token without the scope: %d %s", a.status, a.body)
		}
		wantSCIM401(t, call(t, scimURL(srv, "acme"), "Bearer "+admin+"x"))
		if a := call(t, scimURL(srv, "acme"), "Bearer acme-token"); a.status != 200 {
			t.Fatalf("tenant token: %d", a.status)
		}
	})
}

func TestSCIMAuthHookLogsNoToken(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	logs, logger := testlog.New()
	var reasons []error
	srv := scimServer(t, tenants, middleware.SCIMConfig{Logger: logger,
		OnReject: func(r *http.Request, status int, err error) { reasons = append(reasons, err) },
		Tenant:   func(r *http.Request) string { return r.Header.Get("X-Tenant") }})
	req, _ := http.NewRequest("GET", scimURL(srv, "ignored"), nil)
	req.Header.Set("X-Tenant", "acme")
	req.Header.Set("Authorization", "Bearer acme-token")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("tenant from a header: %v %v", resp.StatusCode, err)
	}
	call(t, scimURL(srv, "acme"), "Bearer acme-token-guess")
	if len(reasons) != 1 || accesstoken.ReasonCode(reasons[0]) != "scim_token" {
		t.Fatalf("reasons = %v", reasons)
	}
	if strings.Contains(logs.String(), "acme-token") || !strings.Contains(logs.String(), "request rejected") {
		t.Fatalf("log = %s", logs.String())
	}
}

// Protect a SCIM handler with per-tenant tokens from the configuration.
func ExampleSCIMAuth() {
	// The tenants as the service's configuration file holds them; on
	// reload, tenants.Replace(configs), which changes nothing on error.
	tenants, err := middleware.NewTenants([]middleware.TenantConfig{
		{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-scim-token").String()}},
	})
	if err != nil {
		log.Fatal(err)
	}
	users := scimerr.Handler(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", scimerr.ContentType)
		_, err := fmt.Fprint(w, `{"Resources":[],"totalResults":0}`)
		return err
	})
	mux := http.NewServeMux()
	mux.Handle("GET /webapi/scim-api/v1/{tenant}/scim/Users", middleware.SCIMAuth(tenants)(users))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, token := range []string{"acme-scim-token", "guess"} {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/webapi/scim-api/v1/acme/scim/Users", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Output:
	// 200 application/scim+json
	// 401 application/scim+json
}

func TestSCIMAuthIdentityTokensNilClaimsFailClosed(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	srv := scimServer(t, tenants, middleware.SCIMConfig{IdentityTokens: nilValidator{}, IdentityTokenScopes: []string{scope.AdminWebAPI}})
	k := jwktest.NewKey(t, "ES256")
	tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, scope.AdminWebAPI, time.Hour))
	wantSCIM401(t, call(t, scimURL(srv, "acme"), "Bearer "+tok))
	if a := call(t, scimURL(srv, "acme"), "Bearer acme-token"); a.status != 200 {
		t.Fatalf("tenant token: %d", a.status)
	}
}
