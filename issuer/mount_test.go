package issuer_test

import (
	"log/slog"
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

// TestWithoutLoggerTheIssuerLogsToSlogDefault: without WithLogger, a
// mis-mounted issuer answered a silent 404 (its warning went nowhere).
// Now every line of an issuer without a logger goes to slog.Default(), as
// it is when the line is written: the wrong mount's Warn, and the rest
// alike (the ephemeral key's Warn at New, a refused request at Info).
func TestWithoutLoggerTheIssuerLogsToSlogDefault(t *testing.T) {
	before := slog.Default()
	t.Cleanup(func() { slog.SetDefault(before) })
	atNew, logger := testlog.New()
	slog.SetDefault(logger)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss, err := issuer.New(testConfig(srv.URL + "/ids"))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/auth/", iss)
	// A default set after New is the one used.
	later, logger := testlog.New()
	slog.SetDefault(logger)
	for _, path := range []string{"/auth/connect/token", "/auth/connect/token"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d, want 404", resp.StatusCode)
		}
	}
	rec := httptest.NewRecorder()
	iss.ServeHTTP(rec, formRequest("token", form("grant_type", "client_credentials", "client_id", "admin", "client_secret", "wrong", "scope", "x")))
	if !strings.Contains(atNew.String(), "NO SIGNING KEY CONFIGURED") {
		t.Errorf("the ephemeral key's warning did not reach slog.Default at New:\n%s", atNew)
	}
	logs := later.String()
	if n := strings.Count(logs, `"level":"WARN"`); n != 1 || !strings.Contains(logs, "mounted where its URL says") || !strings.Contains(logs, `"expected":"/ids/connect/token"`) {
		t.Errorf("want one Warn line about the mount in slog.Default, got %d:\n%s", n, logs)
	}
	if !strings.Contains(logs, "token request refused") || strings.Contains(logs, `"wrong"`) {
		t.Errorf("the refusal should be logged through slog.Default, without the secret:\n%s", logs)
	}
}
