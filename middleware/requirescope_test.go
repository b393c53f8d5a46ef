package middleware_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// panicText runs f and returns what it panicked with, or "".
func panicText(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func TestMisconfigurationPanicsAtConstruction(t *testing.T) {
	tenants := tenantsFrom(t, nil)
	cases := []struct {
		name string
		f    func()
		want string // in the panic message
	}{
		{"RequireScope with no scopes", func() { middleware.RequireScope() }, "expects at least one scope"},
		{"RequireScope with a name differing only in case", func() { middleware.RequireScope("pd_AdminWebAPI") }, `"pd_AdminWebAPI" differs from the scope "pd_AdminWebApi" only in case`},
		{"RequireScope with a lower-case known name", func() { middleware.RequireScope(scope.AdminWebAPI, "pd_connectwebapi") }, `"pd_ConnectWebApi" only in case`},
		{"RequireScope with an empty name", func() { middleware.RequireScope("") }, `"" is not a scope name`},
		{"RequireScope with two names in one", func() { middleware.RequireScope(scope.AdminWebAPI + " " + scope.ConnectWebAPI) }, "is not a scope name"},
		{"RequireFamily for SCIM", func() { middleware.RequireFamily(scope.SCIM) }, "no scope grants SCIM"},
		{"SCIM identity tokens without scopes", func() {
			middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{IdentityTokens: nilValidator{}})
		}, "expects at least one scope"},
		{"SCIM identity token scopes without a validator", func() {
			middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{IdentityTokenScopes: []string{scope.AdminWebAPI}})
		}, "IdentityTokenScopes without IdentityTokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := panicText(c.f)
			if !strings.Contains(got, c.want) || !strings.HasPrefix(got, "middleware: ") {
				t.Fatalf("panic = %q, want one holding %q", got, c.want)
			}
		})
	}
	for _, ok := range []func(){
		func() { middleware.RequireScope(scope.AdminWebAPI) },
		func() { middleware.RequireScope("custom_scope") },
		func() { middleware.RequireFamily(scope.ConnectSession) },
	} {
		if got := panicText(ok); got != "" {
			t.Errorf("valid call panicked: %s", got)
		}
	}
}

func TestRequireScopeWithoutRequireBearerLogsWhy(t *testing.T) {
	logs, logger := testlog.New()
	old := slog.Default()
	slog.SetDefault(logger)
	defer slog.SetDefault(old)

	srv := httptest.NewServer(middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("handler reached")
	})))
	defer srv.Close()
	for range 3 {
		if a := call(t, srv.URL+"/admin", "Bearer whatever"); a.status != 401 {
			t.Fatalf("got %d", a.status)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "no RequireBearer validated"); n != 1 {
		t.Fatalf("%d explanations logged for 3 refusals, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, `"level":"ERROR"`) || !strings.Contains(out, `"path":"/admin"`) || strings.Contains(out, "whatever") {
		t.Fatalf("log = %s", out)
	}
}

func TestRequireFamily(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)})
	for _, c := range []struct {
		family scope.Family
		scope  string
		want   int
	}{
		{scope.Admin, scope.AdminWebAPI, 200},
		{scope.Admin, scope.ConnectWebAPI, 403},
		{scope.Connect, scope.ConnectWebAPI, 200},
		{scope.ConnectSession, scope.ConnectWebAPI, 200},
		{scope.ConnectSession, scope.AdminWebAPI, 403},
	} {
		h := middleware.RequireBearer(v)(middleware.RequireFamily(c.family)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
		srv := httptest.NewServer(h)
		tok := jwktest.Sign(t, k, nil, jwktest.Claims(iss, c.scope, time.Hour))
		if a := call(t, srv.URL, "Bearer "+tok); a.status != c.want {
			t.Errorf("%v with %s: %d, want %d", c.family, c.scope, a.status, c.want)
		}
		srv.Close()
	}
}
