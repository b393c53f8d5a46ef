package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// testIssuer is an issuer on a loopback server, its clients "runner"
// (JWTs) and "runner-ref" (reference tokens), both of secret
// "runner-secret", allowed both of the product's scopes, as a
// deployment's would be; its API resource "api" (secret "api-secret")
// introspects.
func testIssuer(t testing.TB) *issuer.Issuer {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	hash := []string{secret.HashSHA256("runner-secret").String()}
	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids", EphemeralKey: true, Clients: []issuer.ClientConfig{
			{ClientID: "runner", SecretHashes: hash, Scopes: scope.All()},
			{ClientID: "runner-ref", SecretHashes: hash, Scopes: scope.All(), AccessTokenType: "reference"},
		},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: scope.All()}},
	}, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	mux.Handle("/.well-known/oauth-authorization-server/", iss.MetadataHandler())
	return iss
}

// testAPI serves the contract's Admin API behind the middleware, with
// DPoP and its RFC 9728 metadata, taking iss's JWTs (and its reference
// tokens, by introspection); broken replaces the chain by one that
// admits any token.
func testAPI(t *testing.T, iss *issuer.Issuer, broken bool) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss,
		Introspection: &accesstoken.Introspection{Local: iss, ClientID: "api", CacheBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	md := &middleware.ResourceMetadata{Resource: srv.URL + "/webapi/api/v3", AuthorizationServers: []string{iss.URL()}, ScopesSupported: scope.All(), DPoPSigningAlgValuesSupported: middleware.DPoPAlgorithms()}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"data":[]}`)) })
	var h http.Handler = middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dp, ResourceMetadata: md})(middleware.RequireScope(scope.AdminWebAPI)(ok))
	if broken {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(401)
				return
			}
			ok(w, r)
		})
	}
	mux.Handle("/webapi/", h)
	mh, err := md.Handler()
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/.well-known/oauth-protected-resource/", mh)
	return srv
}

// runRunner runs idsauth conformance with args, the client's secret in
// IDSAUTH_CLIENT_SECRET, and returns its exit status and output.
func runRunner(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "IDSAUTH_CLIENT_SECRET" {
			return "runner-secret"
		}
		return ""
	}}
	code := run(context.Background(), e, append([]string{"conformance"}, args...))
	return code, out.String() + errb.String()
}

// TestConformanceResource: the runner passes an API behind the
// middleware, reporting each case with its token's source and the cases
// it cannot run as skipped (no -cert: no certificate-bound token); it
// fails an API that admits any token; a run that cannot happen exits 2.
func TestConformanceResource(t *testing.T) {
	iss := testIssuer(t)
	api := testAPI(t, iss, false)
	target := api.URL + "/webapi/api/v3/demo/Admin/Users"
	junit := filepath.Join(t.TempDir(), "report.xml")
	code, out := runRunner(t, "resource", "-url", target, "-issuer", iss.URL(), "-client-id", "runner", "-scope", scope.AdminWebAPI, "-junit", junit)
	if code != 0 {
		t.Fatalf("exit %d against the middleware:\n%s", code, out)
	}
	for _, want := range []string{"pass bearer an expired token forged: signed by a key of the runner's own", "the issuer: client_credentials for pd_AdminWebApi",
		"pass dpop the same proof again", "pass metadata the document says the URL called is its resource", "skip mtls", "no -cert"} {
		if !strings.Contains(squash(out), want) {
			t.Errorf("the report has no %q:\n%s", want, out)
		}
	}
	if x, err := os.ReadFile(junit); err != nil || !bytes.Contains(x, []byte(`<testsuite name="idsauth conformance resource bearer"`)) {
		t.Errorf("JUnit: %v\n%s", err, x)
	}
	code, out = runRunner(t, "resource", "-json", "-url", target, "-issuer", iss.URL(), "-client-id", "runner", "-scope", scope.AdminWebAPI)
	var rep report
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n}\n", 2)[0]+"\n}"), &rep); err != nil || code != 0 || rep.Failed != 0 || rep.Passed < 20 {
		t.Fatalf("-json: exit %d, %v, %+v\n%s", code, err, rep, out)
	}

	// A client whose tokens are reference tokens: their cases run.
	code, out = runRunner(t, "resource", "-url", target, "-issuer", iss.URL(), "-client-id", "runner-ref", "-scope", scope.AdminWebAPI)
	if code != 0 || !strings.Contains(squash(out), "pass bearer a revoked reference token the issuer: a reference token, revoked at its revocation endpoint") {
		t.Fatalf("exit %d with reference tokens:\n%s", code, out)
	}

	broken := testAPI(t, iss, true)
	code, out = runRunner(t, "resource", "-url", broken.URL+"/webapi/api/v3/demo/Admin/Users", "-issuer", iss.URL(), "-client-id", "runner", "-scope", scope.AdminWebAPI)
	if code != 1 || !strings.Contains(squash(out), "FAIL bearer an expired token") {
		t.Fatalf("exit %d against an API that admits any token:\n%s", code, out)
	}
	code, out = runRunner(t, "resource", "-url", "http://127.0.0.1:1/nothing", "-issuer", iss.URL(), "-client-id", "runner", "-scope", scope.AdminWebAPI)
	if code != 2 {
		t.Fatalf("exit %d against nothing:\n%s", code, out)
	}
	code, out = runRunner(t, "resource", "-issuer", iss.URL(), "-client-id", "runner", "-scope", scope.AdminWebAPI)
	if code != 2 || !strings.Contains(out, "-url is required") {
		t.Fatalf("exit %d without -url:\n%s", code, out)
	}
}

// TestConformanceTokenEndpoint: the runner passes this module's issuer
// under its profile, reference tokens included, and fails it under the
// other.
func TestConformanceTokenEndpoint(t *testing.T) {
	iss := testIssuer(t)
	for _, client := range []string{"runner", "runner-ref"} {
		code, out := runRunner(t, "token-endpoint", "-issuer", iss.URL(), "-client-id", client, "-scope", scope.AdminWebAPI)
		if code != 0 || !strings.Contains(squash(out), "pass dpop a proof binds") || !strings.Contains(squash(out), "pass revocation") {
			t.Fatalf("exit %d against this issuer (%s):\n%s", code, client, out)
		}
		if code, out := runRunner(t, "token-endpoint", "-profile", "identityserver", "-issuer", iss.URL(), "-client-id", client, "-scope", scope.AdminWebAPI); code != 1 {
			t.Fatalf("exit %d under the other profile (%s):\n%s", code, client, out)
		}
	}
}

// squash is s with every run of spaces one space, as a table's columns
// are read.
func squash(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
