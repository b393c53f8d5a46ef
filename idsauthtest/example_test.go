package idsauthtest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// printer is a TB that prints what it is told, so the examples can show
// what a check reports. In a test, pass t.
type printer struct{ cleanups []func() }

func (p *printer) Helper()                           {}
func (p *printer) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (p *printer) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (p *printer) Cleanup(f func())                  { p.cleanups = append(p.cleanups, f) }
func (p *printer) close() {
	for _, f := range p.cleanups {
		f()
	}
}

func listUsers(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) }

// A route protected the contract's way passes every case: in a test, this
// is the whole test.
func ExampleIssuer_CheckProtected() {
	t := &printer{} // in a test: t *testing.T
	defer t.close()

	iss := idsauthtest.NewIssuer(t)
	h := alice.New(middleware.RequireBearer(iss.Validator()),
		middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(listUsers)
	iss.CheckProtected(t, h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	fmt.Println("checked")
	// Output: checked
}

// A route that forgot RequireScope is reported on the case it gets wrong.
func ExampleIssuer_CheckProtected_missingScope() {
	t := &printer{}
	defer t.close()

	iss := idsauthtest.NewIssuer(t)
	h := middleware.RequireBearer(iss.Validator())(http.HandlerFunc(listUsers))
	iss.CheckProtected(t, h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	// Output:
	// CheckProtected GET /webapi/api/v3/demo/Admin/Users: a token without the route's scope: status 200, want 403
}

// CheckSCIM runs the SCIM cases against a SCIM route.
func ExampleCheckSCIM() {
	t := &printer{}
	defer t.close()

	tenants, err := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-token").String()}}})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /webapi/scim-api/v1/{tenant}/scim/Users", middleware.SCIMAuth(tenants)(http.HandlerFunc(listUsers)))
	idsauthtest.CheckSCIM(t, mux, "GET /webapi/scim-api/v1/{tenant}/scim/Users", "acme", "acme-token")
	fmt.Println("checked")
	// Output: checked
}

// Tokens that a test wants refused take one call each.
func ExampleIssuer_ExpiredToken() {
	t := &printer{}
	defer t.close()

	iss := idsauthtest.NewIssuer(t)
	h := middleware.RequireBearer(iss.Validator())(http.HandlerFunc(listUsers))
	for _, tok := range []string{iss.Token(t, scope.AdminWebAPI), iss.ExpiredToken(t, scope.AdminWebAPI), iss.WrongAudienceToken(t, scope.AdminWebAPI)} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := &statusWriter{header: http.Header{}}
		h.ServeHTTP(w, r)
		fmt.Println(strings.TrimSpace(fmt.Sprint(w.status, " ", w.header.Get("WWW-Authenticate"))))
	}
	// Output:
	// 200
	// 401 Bearer realm="idsauth", error="invalid_token", error_description="token expired"
	// 401 Bearer realm="idsauth", error="invalid_token", error_description="token audience not accepted"
}

type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(b), nil
}
func (w *statusWriter) WriteHeader(code int) { w.status = code }

// A handler tested alone: the claims are put on the request as
// RequireBearer would leave them.
func ExampleWithClaims() {
	t := &printer{}
	defer t.close()

	handler := func(w http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		var extra struct {
			Department string `json:"department"`
		}
		_ = c.Decode(&extra)
		fmt.Fprintf(w, "%s from %s", c.ClientID, extra.Department)
	}
	r := idsauthtest.WithClaims(t, httptest.NewRequest("GET", "/", nil), idsauthtest.Claims{
		"client_id": "reporting", "scope": "pd_AdminWebApi", "department": "finance",
	})
	rec := httptest.NewRecorder()
	handler(rec, r)
	fmt.Println(rec.Body.String())
	// Output: reporting from finance
}
