package issuer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
)

// TestMisMountedIssuerIsLoggedOnce: an issuer mounted where its URL does
// not say (under another prefix, or behind http.StripPrefix) answered a
// bare 404 and logged nothing. Now the first request for one of its
// endpoints under another path logs one Warn line naming both paths,
// however many follow; other paths, and a correct mount, log nothing.
func TestMisMountedIssuerIsLoggedOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		mount   func(mux *http.ServeMux, iss *issuer.Issuer)
		request string
	}{
		{"under another prefix", func(mux *http.ServeMux, iss *issuer.Issuer) { mux.Handle("/auth/", iss) }, "/auth/connect/token"},
		{"behind http.StripPrefix", func(mux *http.ServeMux, iss *issuer.Issuer) { mux.Handle("/ids/", http.StripPrefix("/ids", iss)) }, "/ids/.well-known/openid-configuration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, logs := mounted(t, c.mount)
			for range 50 {
				resp, err := http.Get(srv.URL + c.request + "?client_secret=never-logged")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("status %d, want 404", resp.StatusCode)
				}
			}
			for _, probe := range []string{"/auth/admin", "/ids/x", "/auth/whatever/.env"} {
				if resp, err := http.Get(srv.URL + probe); err == nil {
					resp.Body.Close()
				}
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			var warns []string
			for _, l := range lines {
				if strings.Contains(l, `"level":"WARN"`) && strings.Contains(l, "mounted") {
					warns = append(warns, l)
				}
			}
			if len(warns) != 1 {
				t.Fatalf("%d Warn lines after 50 mismatched requests, want 1:\n%s", len(warns), logs)
			}
			w := warns[0]
			stripped := strings.TrimPrefix(c.request, "/ids")
			if c.name == "under another prefix" {
				stripped = c.request
			}
			if !strings.Contains(w, `"path":"`+stripped+`"`) || !strings.Contains(w, `"expected":"/ids`) || strings.Contains(w, "never-logged") {
				t.Errorf("the Warn line should name both paths and no query: %s", w)
			}
		})
	}

	// Mounted right: nothing is logged, and the endpoints answer.
	srv, logs := mounted(t, func(mux *http.ServeMux, iss *issuer.Issuer) { mux.Handle("/ids/", iss) })
	for _, p := range []string{"/ids/.well-known/openid-configuration", "/ids/nothing", "/ids/connect/tokens"} {
		if resp, err := http.Get(srv.URL + p); err == nil {
			resp.Body.Close()
		}
	}
	if strings.Contains(logs.String(), "mounted") {
		t.Errorf("a correctly mounted issuer logged a Warn:\n%s", logs)
	}
}

// mounted serves an issuer of URL {server}/ids, mounted by mount, and
// returns the server and the issuer's log.
func mounted(t *testing.T, mount func(*http.ServeMux, *issuer.Issuer)) (*httptest.Server, *testlog.Buffer) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	logs, logger := testlog.New()
	iss, err := issuer.New(testConfig(srv.URL+"/ids"), issuer.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	mount(mux, iss)
	return srv, logs
}
