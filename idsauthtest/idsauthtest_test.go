package idsauthtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// recorder is a TB that keeps what the checker reports, so a test can
// check the checker.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) report() string { return strings.Join(r.errs, "\n") }

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) })

func protected(v accesstoken.TokenValidator, need string) http.Handler {
	return alice.New(middleware.RequireBearer(v), middleware.RequireScope(need)).Then(ok)
}

func TestCheckProtectedPassesTheMiddleware(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for _, need := range []string{scope.AdminWebAPI, scope.ConnectWebAPI} {
		rec := &recorder{TB: t}
		iss.CheckProtected(rec, protected(iss.Validator(), need), "GET /webapi/api/v3/demo/Admin/Users", need)
		if len(rec.errs) > 0 {
			t.Errorf("%s: the library's own chain was reported:\n%s", need, rec.report())
		}
	}
}

// TestCheckProtectedWithReferenceTokens: a route that takes both kinds of
// token passes the reference-token cases too; one whose validator admits
// any opaque token is reported on them.
func TestCheckProtectedWithReferenceTokens(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	both := iss.ValidatorWithReferences()
	rec := &recorder{TB: t}
	iss.CheckProtected(rec, protected(both, scope.AdminWebAPI), "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	if len(rec.errs) > 0 {
		t.Errorf("the library's own chain was reported:\n%s", rec.report())
	}
	if tok := iss.ReferenceToken(t, scope.AdminWebAPI); strings.Contains(tok, ".") {
		t.Fatalf("not a reference token: %q", tok)
	}
	rec = &recorder{TB: t}
	iss.CheckProtected(rec, protected(anyOpaque{iss.Validator()}, scope.AdminWebAPI), "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	for _, w := range []string{"a revoked reference token: status 200, want 401", "a reference token without the route's scope: status 200, want 403"} {
		if !strings.Contains(rec.report(), w) {
			t.Errorf("not reported: %q\nreport:\n%s", w, rec.report())
		}
	}
}

// anyOpaque is a validator broken for reference tokens: it checks JWTs
// with jwt, and admits any other token, for every scope, without asking
// anyone.
type anyOpaque struct{ jwt accesstoken.TokenValidator }

func (a anyOpaque) Validate(ctx context.Context, token string, p accesstoken.Presentation) (*accesstoken.Claims, error) {
	if strings.Count(token, ".") == 2 {
		return a.jwt.Validate(ctx, token, p)
	}
	return accesstoken.NewClaims([]byte(`{"client_id":"x","scope":"pd_AdminWebApi pd_ConnectWebApi","exp":4102444800}`))
}

// Each broken chain is reported, on the case it breaks.
func TestCheckProtectedReportsWhatIsWrong(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	anyAud, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), AnyAudience: true, Keys: iss.Issuer})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		h    http.Handler
		want []string
	}{
		{"no middleware at all", ok, []string{"no token: status 200, want 401", "an expired token: status 200, want 401", "a token without the route's scope: status 200, want 403"}},
		{"the audience not checked", protected(anyAud, scope.AdminWebAPI), []string{"a token for another audience: status 200, want 401"}},
		{"the wrong scope required", protected(iss.Validator(), scope.ConnectWebAPI), []string{"a valid token with the scope: status 403"}},
		{"JSON for a missing token", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":"invalid_token"}`)
				return
			}
			protected(iss.Validator(), scope.AdminWebAPI).ServeHTTP(w, r)
		}), []string{"no token: body is JSON"}},
		{"the token echoed", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Basic") {
				w.Header().Set("WWW-Authenticate", `Bearer realm="x", error="invalid_token"`)
				w.Header().Set("Cache-Control", "no-store")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				fmt.Fprintf(w, `{"error":"invalid_token","error_description":"bad token %s"}`, r.Header.Get("Authorization"))
				return
			}
			protected(iss.Validator(), scope.AdminWebAPI).ServeHTTP(w, r)
		}), []string{"an expired token: the answer echoes the token"}},
		{"refusals cached", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := &dropHeader{ResponseWriter: w, name: "Cache-Control"}
			protected(iss.Validator(), scope.AdminWebAPI).ServeHTTP(rw, r)
		}), []string{`no token: Cache-Control "", want no-store`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			iss.CheckProtected(rec, c.h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
			for _, w := range c.want {
				if !strings.Contains(rec.report(), w) {
					t.Errorf("not reported: %q\nreport:\n%s", w, rec.report())
				}
			}
		})
	}
}

// dropHeader removes one header before the answer is written.
type dropHeader struct {
	http.ResponseWriter
	name string
}

func (d *dropHeader) WriteHeader(code int) {
	d.Header().Del(d.name)
	d.ResponseWriter.WriteHeader(code)
}

func TestCheckSCIM(t *testing.T) {
	tenants, err := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-token").String()}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /webapi/scim-api/v1/{tenant}/scim/Users", middleware.SCIMAuth(tenants)(ok))
	rec := &recorder{TB: t}
	idsauthtest.CheckSCIM(rec, mux, "GET /webapi/scim-api/v1/{tenant}/scim/Users", "acme", "acme-token")
	if len(rec.errs) > 0 {
		t.Fatalf("SCIMAuth was reported:\n%s", rec.report())
	}

	leaky := http.NewServeMux()
	leaky.HandleFunc("GET /webapi/scim-api/v1/{tenant}/scim/Users", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("tenant") != "acme" {
			w.Header().Set("Content-Type", "application/scim+json")
			w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
			w.WriteHeader(401)
			fmt.Fprint(w, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"401","detail":"no such tenant"}`)
			return
		}
		mux.ServeHTTP(w, r)
	})
	rec = &recorder{TB: t}
	idsauthtest.CheckSCIM(rec, leaky, "GET /webapi/scim-api/v1/{tenant}/scim/Users", "acme", "acme-token")
	if !strings.Contains(rec.report(), "the token on an unknown tenant: body") {
		t.Fatalf("a tenant probe was not reported:\n%s", rec.report())
	}
}

// The issuer is real: x/oauth2's clientcredentials and this module's
// client get tokens from it, and those tokens pass the validator.
func TestIssuerServesRealClients(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	tok, err := iss.Config(scope.AdminWebAPI).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Validator().Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{}); err != nil {
		t.Fatalf("the issued token does not validate: %v", err)
	}
	api := httptest.NewServer(protected(iss.Validator(), scope.ConnectWebAPI))
	defer api.Close()
	hc := (&client.Config{ClientID: iss.ClientID, ClientSecret: iss.ClientSecret, TokenURL: iss.TokenURL(), BaseURL: api.URL, Scopes: []string{scope.ConnectWebAPI}}).Client(context.Background())
	resp, err := hc.Get(api.URL + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"data":[]}` {
		t.Fatalf("the client package got %d %s", resp.StatusCode, b)
	}
}

// Every refused token is refused, each for its own reason.
func TestMintedTokensAreRefusedForTheirReason(t *testing.T) {
	iss := idsauthtest.NewIssuer(t, idsauthtest.WithAlgorithm("EdDSA"))
	v := iss.Validator()
	for name, c := range map[string]struct {
		tok  string
		want string // the refusal's code
	}{
		"valid":         {iss.Token(t, scope.AdminWebAPI), ""},
		"expired":       {iss.ExpiredToken(t, scope.AdminWebAPI), "expired"},
		"not yet valid": {iss.NotYetValidToken(t, scope.AdminWebAPI), "not_yet_valid"},
		"wrong issuer":  {iss.WrongIssuerToken(t, scope.AdminWebAPI), "issuer"},
		"wrong aud":     {iss.WrongAudienceToken(t, scope.AdminWebAPI), "audience"},
		"unknown key":   {iss.UnknownKeyToken(t, scope.AdminWebAPI), "unknown_key"},
		"alg none":      {iss.AlgNoneToken(t, scope.AdminWebAPI), "algorithm"},
		"tampered":      {iss.TamperedToken(t, scope.AdminWebAPI), "signature"},
	} {
		_, err := v.Validate(context.Background(), c.tok, accesstoken.Presentation{})
		var ve *accesstoken.ValidationError
		if (c.want == "") != (err == nil) || (c.want != "" && (!errors.As(err, &ve) || ve.Code != c.want)) {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
	}
}

// TestCheckProtectedDPoP: a route that takes DPoP passes every DPoP case
// of its mode (both schemes, DPoP alone, nonces required), checked with
// its own DPoPConfig; a route configured otherwise than the checker is
// told (another public URL, proofs of an hour's age, DPoP alone where
// both are said, both where DPoP alone is said, no nonce where one is
// said) is reported on the case that shows it.
func TestCheckProtectedDPoP(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	const public = "https://api.example.test"
	route := "GET /webapi/api/v3/demo/Admin/Users"
	chain := func(v accesstoken.TokenValidator, d middleware.DPoPConfig) http.Handler {
		if d.PublicURL == "" {
			d.PublicURL = public
		}
		dp, err := middleware.NewDPoP(d)
		if err != nil {
			t.Fatal(err)
		}
		return alice.New(middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dp}), middleware.RequireScope(scope.AdminWebAPI)).Then(ok)
	}
	nonceKey := []byte("0123456789abcdef0123456789abcdef")
	for name, cfg := range map[string]middleware.DPoPConfig{
		"both schemes":            {PublicURL: public},
		"DPoP alone (Required)":   {PublicURL: public, Required: true},
		"nonces required":         {PublicURL: public, RequireNonce: true, NonceKey: nonceKey},
		"DPoP alone, with nonces": {PublicURL: public, Required: true, RequireNonce: true, NonceKey: nonceKey},
		"proofs of two minutes":   {PublicURL: public, ProofMaxAge: 2 * time.Minute},
		"proofs of an hour":       {PublicURL: public, ProofMaxAge: time.Hour},
	} {
		rec := &recorder{TB: t}
		iss.CheckProtectedDPoP(rec, chain(iss.Validator(), cfg), cfg, route, scope.AdminWebAPI)
		if len(rec.errs) > 0 {
			t.Errorf("%s: the library's own chain was reported:\n%s", name, rec.report())
		}
	}
	// The same chain passes the bearer cases too.
	rec := &recorder{TB: t}
	iss.CheckProtected(rec, chain(iss.Validator(), middleware.DPoPConfig{}), route, scope.AdminWebAPI)
	if len(rec.errs) > 0 {
		t.Errorf("the bearer cases of a chain that takes both:\n%s", rec.report())
	}
	both, alone := middleware.DPoPConfig{PublicURL: public}, middleware.DPoPConfig{PublicURL: public, Required: true}
	for name, c := range map[string]struct {
		h    http.Handler
		said middleware.DPoPConfig
		want string
	}{
		"another public URL":             {chain(iss.Validator(), middleware.DPoPConfig{PublicURL: "https://elsewhere.test"}), both, "a bound token with a fresh proof: status 401"},
		"proofs an hour old":             {chain(iss.Validator(), middleware.DPoPConfig{ProofMaxAge: time.Hour}), both, "a proof ten minutes old: status 200, want 401"},
		"DPoP alone, said to take both":  {chain(iss.Validator(), alone), both, "no bare Bearer challenge, where Bearer is accepted too"},
		"both, said to take DPoP alone":  {chain(iss.Validator(), both), alone, "offers Bearer, where DPoP alone is accepted"},
		"no nonce, said to require them": {chain(iss.Validator(), both), middleware.DPoPConfig{PublicURL: public, RequireNonce: true}, "a proof without the server's nonce: status 200, want 401"},
	} {
		rec := &recorder{TB: t}
		iss.CheckProtectedDPoP(rec, c.h, c.said, route, scope.AdminWebAPI)
		if !strings.Contains(rec.report(), c.want) {
			t.Errorf("%s: not reported: %q\nreport:\n%s", name, c.want, rec.report())
		}
	}
}

// TestCheckTokenEndpoint: this issuer passes its own profile's checks
// under each profile, and fails the other's on the rows they differ in.
func TestCheckTokenEndpoint(t *testing.T) {
	for _, profile := range []string{"rfc", "identityserver"} {
		srv := httptest.NewServer(nil)
		t.Cleanup(srv.Close)
		iss, err := issuer.New(&issuer.Config{
			Issuer: srv.URL + "/ids", EphemeralKey: true, Profile: profile,
			Clients: []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Config.Handler = iss
		rec := &recorder{TB: t}
		idsauthtest.CheckTokenEndpoint(rec, iss.TokenURL(), "c", "s", profile)
		if len(rec.errs) > 0 {
			t.Errorf("%s under its own profile:\n%s", profile, rec.report())
		}
		other := map[string]string{"rfc": "identityserver", "identityserver": "rfc"}[profile]
		rec = &recorder{TB: t}
		idsauthtest.CheckTokenEndpoint(rec, iss.TokenURL(), "c", "s", other)
		for _, row := range []string{"an unknown client", "a wrong secret", "no client credentials", "no grant_type", "two resources", "no scope"} {
			if !strings.Contains(rec.report(), other+": "+row+":") {
				t.Errorf("%s checked as %s: %q not reported:\n%s", profile, other, row, rec.report())
			}
		}
		if strings.Contains(rec.report(), "openid asked") {
			t.Errorf("%s checked as %s: openid reported, where the profiles agree:\n%s", profile, other, rec.report())
		}
	}
}
