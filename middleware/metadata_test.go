package middleware_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// resourceMetadataParam is a challenge's resource_metadata.
var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]*)"`)

// strictMetadata does what RFC 9728 §3.3 asks of a client that found the
// metadata through a challenge: it fetches every challenge's
// resource_metadata and keeps the document only if its "resource" is
// identical to the URL called. It returns the document, or why it would
// be discarded.
func strictMetadata(t *testing.T, called string, challenges []string) (map[string]any, error) {
	t.Helper()
	return strictMetadataWith(t, http.DefaultClient, called, challenges)
}

// strictMetadataWith is strictMetadata fetching with hc.
func strictMetadataWith(t *testing.T, hc *http.Client, called string, challenges []string) (map[string]any, error) {
	t.Helper()
	if len(challenges) == 0 {
		return nil, fmt.Errorf("no challenge")
	}
	var doc map[string]any
	for _, ch := range challenges {
		m := resourceMetadataParam.FindStringSubmatch(ch)
		if m == nil {
			return nil, fmt.Errorf("challenge %q names no resource_metadata", ch)
		}
		resp, err := hc.Get(m[1])
		if err != nil {
			return nil, err
		}
		doc = nil
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		switch {
		case err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json":
			return nil, fmt.Errorf("%s: %s %v", m[1], resp.Status, err)
		case doc["resource"] != called:
			return nil, fmt.Errorf("%s: resource %q, but the client called %q: discarded", m[1], doc["resource"], called)
		}
	}
	return doc, nil
}

// TestResourceMetadata: every challenge names the metadata of the very
// URL the client called, path parameters and all, and that document's
// "resource" is that URL, so that a strict client (RFC 9728 §3.3) keeps
// it: for no token, a bad token, a token without the scope, over Bearer
// and DPoP. The documents are served for the resource and the URLs under
// it only, cacheable, and nothing is kept per URL.
func TestResourceMetadata(t *testing.T) {
	api := httptest.NewServer(nil)
	defer api.Close()
	md := middleware.ResourceMetadata{
		Resource:                      api.URL + "/webapi",
		AuthorizationServers:          []string{api.URL + "/ids"},
		ScopesSupported:               []string{scope.AdminWebAPI, scope.ConnectWebAPI},
		DPoPSigningAlgValuesSupported: middleware.DPoPAlgorithms(),

		TLSClientCertificateBoundAccessTokens: true,
	}
	mdURL, err := md.URL()
	if err != nil || mdURL != api.URL+"/.well-known/oauth-protected-resource/webapi" {
		t.Fatalf("URL = %q, %v", mdURL, err)
	}
	h, err := md.Handler()
	if err != nil {
		t.Fatal(err)
	}
	ids := idsauthtest.NewIssuer(t)
	v := ids.Validator()
	protect := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadata: &md, DPoP: newDPoP(t, middleware.DPoPConfig{PublicURL: api.URL})})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/", h)
	mux.Handle("/webapi/api/v3/{datasourceId}/Connect/", protect(middleware.RequireScope(scope.ConnectWebAPI)(http.NotFoundHandler())))
	mux.Handle("/elsewhere/", protect(http.NotFoundHandler()))
	api.Config.Handler = mux

	doc, err := strictMetadata(t, md.Resource, []string{`Bearer resource_metadata="` + mdURL + `"`})
	if err != nil || doc["bearer_methods_supported"].([]any)[0] != "header" || len(doc["dpop_signing_alg_values_supported"].([]any)) != 5 ||
		doc["tls_client_certificate_bound_access_tokens"] != true {
		t.Fatalf("the resource's own document: %v %v", doc, err)
	}
	adminToken := ids.Token(t, scope.AdminWebAPI)
	for _, path := range []string{"/webapi/api/v3/demo/Connect/Documents", "/webapi/api/v3/other-source/Connect/Session/s-1", "/webapi/api/v3/d%20s/Connect/x"} {
		called := api.URL + path
		for name, c := range map[string]struct {
			authz  string
			status int
		}{
			"no token":                {"", 401},
			"a bad token":             {"Bearer x.y.z", 401},
			"a bad token, DPoP":       {"DPoP x.y.z", 401},
			"a token without scope":   {"Bearer " + adminToken, 403},
			"no token, with a query":  {"", 401},
			"a bad token, with query": {"Bearer x.y.z", 401},
		} {
			u := called
			if strings.Contains(name, "query") {
				u += "?page=1&pageSize=10" // not part of the resource
			}
			r := dcall(t, u, c.authz)
			if r.status != c.status {
				t.Fatalf("%s %s: %d %q", path, name, r.status, r.challenge)
			}
			doc, err := strictMetadata(t, called, r.challenge)
			if err != nil {
				t.Errorf("%s, %s: %v", path, name, err)
				continue
			}
			if doc["authorization_servers"].([]any)[0] != api.URL+"/ids" || len(doc["scopes_supported"].([]any)) != 2 {
				t.Errorf("%s, %s: the other members: %v", path, name, doc)
			}
		}
	}
	// A protected URL outside the resource gets no resource_metadata, rather
	// than one a client must discard.
	if r := dcall(t, api.URL+"/elsewhere/x", ""); r.status != 401 || resourceMetadataParam.MatchString(strings.Join(r.challenge, " ")) {
		t.Errorf("outside the resource: %d %q", r.status, r.challenge)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/other", "/.well-known/oauth-protected-resource/webapix", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/webapi/x?y=1"} {
		if r, err := http.Get(api.URL + p); err != nil || r.StatusCode != 404 {
			t.Errorf("%s: %v %v, want 404", p, r.Status, err)
		}
	}
	r, err := http.Get(api.URL + "/.well-known/oauth-protected-resource/webapi/a/b")
	if err != nil || r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=3600" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("a document's headers: %v %v", r.Header, err)
	}
	if _, err := (middleware.ResourceMetadata{Resource: "https://api.example.com/x?y=1"}).Handler(); err == nil {
		t.Fatal("a resource with a query was accepted")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("RequireBearerWithConfig took a resource with a query")
			}
		}()
		middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadata: &middleware.ResourceMetadata{Resource: "https://api.example.com/x?y=1"}})
	}()

	// One document per URL, none kept: 100,000 URLs leave the heap as it was.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 100_000 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, fmt.Sprintf("%s/.well-known/oauth-protected-resource/webapi/api/v3/ds-%d/Admin/Users", api.URL, i), nil))
		if rec.Code != 200 {
			t.Fatalf("%d: %d", i, rec.Code)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Fatalf("the heap grew by %d bytes over 100,000 documents", grown)
	}
}

// TestResourceMetadataAtTheRoot: a resource without a path covers every
// URL of its host, and a resource with a trailing slash is its own
// document's resource.
func TestResourceMetadataAtTheRoot(t *testing.T) {
	for resource, want := range map[string]map[string]string{
		"https://api.example.test": {
			"":            "https://api.example.test",
			"/":           "https://api.example.test/",
			"/a/b":        "https://api.example.test/a/b",
			"/webapi/%7E": "https://api.example.test/webapi/%7E",
		},
		"https://api.example.test/webapi/": {
			"/webapi/":          "https://api.example.test/webapi/",
			"/webapi":           "https://api.example.test/webapi",
			"/webapi/x":         "https://api.example.test/webapi/x",
			"/other":            "",
			"/webapi/../other":  "",
			"/webapi/./x":       "",
			"/webapi/x/..":      "",
			"/webapi/x%2F..%2F": "https://api.example.test/webapi/x%2F..%2F",
		},
	} {
		h, err := middleware.ResourceMetadata{Resource: resource}.Handler()
		if err != nil {
			t.Fatal(err)
		}
		for path, res := range want {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://api.example.test/.well-known/oauth-protected-resource"+path, nil))
			var doc struct{ Resource string }
			_ = json.Unmarshal(rec.Body.Bytes(), &doc)
			if (res == "" && rec.Code != 404) || (res != "" && (rec.Code != 200 || doc.Resource != res)) {
				t.Errorf("%s, %q: %d %s, want %q", resource, path, rec.Code, rec.Body, res)
			}
		}
	}
}
