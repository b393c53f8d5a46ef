package middleware_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/dpoptest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestResourceMetadata: the document is served at the RFC 9728 URL of its
// resource (the well-known path between host and path), names the
// resource exactly, and every challenge of the API points to it.
func TestResourceMetadata(t *testing.T) {
	api := httptest.NewServer(nil)
	defer api.Close()
	md := middleware.ResourceMetadata{
		Resource:                      api.URL + "/webapi",
		AuthorizationServers:          []string{api.URL + "/ids"},
		ScopesSupported:               []string{scope.AdminWebAPI, scope.ConnectWebAPI},
		DPoPSigningAlgValuesSupported: middleware.DPoPAlgorithms(),
	}
	mdURL, err := md.URL()
	if err != nil || mdURL != api.URL+"/.well-known/oauth-protected-resource/webapi" {
		t.Fatalf("URL = %q, %v", mdURL, err)
	}
	h, err := md.Handler()
	if err != nil {
		t.Fatal(err)
	}
	iss := newRefIssuer(t)
	v := newValidator(t, middleware.ValidatorConfig{Issuer: iss.issuerURL(), Keys: iss.iss})
	protect := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadataURL: mdURL, DPoP: dpoptest.New(t, middleware.DPoPConfig{PublicURL: api.URL})})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/", h)
	mux.Handle("/webapi/", protect(middleware.RequireScope(scope.ConnectWebAPI)(http.NotFoundHandler())))
	api.Config.Handler = mux

	resp, err := http.Get(mdURL)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %v", resp.Status, err)
	}
	resp.Body.Close()
	if doc["resource"] != md.Resource || doc["bearer_methods_supported"].([]any)[0] != "header" || len(doc["dpop_signing_alg_values_supported"].([]any)) != 5 {
		t.Fatalf("document: %v", doc)
	}
	if r, _ := http.Get(api.URL + "/.well-known/oauth-protected-resource/other"); r.StatusCode != 404 {
		t.Fatalf("another resource's path: %s", r.Status)
	}
	want := `resource_metadata="` + mdURL + `"`
	check := func(name, authz string, status int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/webapi/x", nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		chs := r.Header.Values("WWW-Authenticate")
		if r.StatusCode != status || len(chs) == 0 {
			t.Fatalf("%s: %s %q", name, r.Status, chs)
		}
		for _, ch := range chs {
			if !strings.Contains(ch, want) {
				t.Errorf("%s: challenge %q lacks %s", name, ch, want)
			}
		}
	}
	check("no token", "", 401)
	check("a bad token", "Bearer x.y.z", 401)
	check("a token without the scope", "Bearer "+iss.token(t, "jwt", "jwt-secret", scope.AdminWebAPI), 403)
	if _, err := (middleware.ResourceMetadata{Resource: "https://api.example.com/x?y=1"}).Handler(); err == nil {
		t.Fatal("a resource with a query was accepted")
	}
}
