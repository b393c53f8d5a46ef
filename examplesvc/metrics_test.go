package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/testlog"
)

// TestDebugVarsCountsEvents: a few calls show up in /debug/vars as the
// idsauth event counters, keyed by reason, client and tenant only.
func TestDebugVarsCountsEvents(t *testing.T) {
	_, logger := testlog.New()
	svc, err := newService(t.Context(), configSource{issuer: "http://127.0.0.1:9/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.routes())
	defer srv.Close()
	send := func(method, path, authz, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"demo-admin"}, "client_secret": {"demo-admin-secret"}, "scope": {"pd_AdminWebApi"}}
	resp := send("POST", "/ids/connect/token", "", form.Encode())
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	form.Set("client_secret", "guess")
	send("POST", "/ids/connect/token", "", form.Encode()).Body.Close()
	for range 2 {
		send("GET", "/webapi/api/v3/demo/Admin/Users", "Bearer "+tok.AccessToken, "").Body.Close()
	}
	send("GET", "/webapi/api/v3/demo/Connect/Documents", "Bearer "+tok.AccessToken, "").Body.Close()
	send("GET", "/webapi/api/v3/demo/Admin/Users", "", "").Body.Close()
	send("GET", "/webapi/scim-api/v1/demo/scim/Users", "Bearer demo-scim-token", "").Body.Close()
	send("GET", "/webapi/scim-api/v1/demo/scim/Users", "Bearer demo-scim-guess", "").Body.Close()

	rec := httptest.NewRecorder()
	svc.metrics.debugVars(rec, httptest.NewRequest("GET", "/debug/vars", nil))
	var vars struct {
		IDSAuth  map[string]map[string]int `json:"idsauth"`
		Memstats json.RawMessage           `json:"memstats"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &vars); err != nil || vars.Memstats == nil {
		t.Fatalf("/debug/vars is not expvar's JSON: %v\n%s", err, rec.Body)
	}
	want := map[string]map[string]int{
		"token_issued":         {"demo-admin": 1},
		"token_refused":        {"invalid_client": 1},
		"validation_succeeded": {"verified": 1, "cached": 2},
		"rejected":             {"insufficient_scope": 1, "no_token": 1},
		"scim_authenticated":   {"demo": 1},
		"scim_refused":         {"scim_token": 1},
	}
	for kind, counts := range want {
		for key, n := range counts {
			if vars.IDSAuth[kind][key] != n {
				t.Errorf("%s[%s] = %d, want %d; all: %v", kind, key, vars.IDSAuth[kind][key], n, vars.IDSAuth)
			}
		}
	}
	for _, never := range []string{tok.AccessToken[:20], "guess", "demo-admin-secret", "demo-scim-token"} {
		if strings.Contains(rec.Body.String(), never) {
			t.Errorf("/debug/vars holds %q", never)
		}
	}
}
