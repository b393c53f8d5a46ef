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

// TestMetricsCountEvents: a few calls show up in /metrics as the idsauth
// event counters, labelled by reason, client and tenant only.
func TestMetricsCountEvents(t *testing.T) {
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
	svc.metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`idsauth_tokens_issued_total{client_id="demo-admin",scope="pd_AdminWebApi"} 1`,
		`idsauth_tokens_refused_total{client_id="demo-admin",reason="invalid_client",status="401"} 1`,
		`idsauth_validations_total{result="succeeded",cached="false",reason=""} 1`,
		`idsauth_validations_total{result="succeeded",cached="true",reason=""} 2`,
		`idsauth_rejections_total{reason="insufficient_scope",status="403"} 1`,
		`idsauth_rejections_total{reason="no_token",status="401"} 1`,
		`idsauth_scim_authentications_total{result="admitted",tenant="demo",reason=""} 1`,
		`idsauth_scim_authentications_total{result="refused",tenant="demo",reason="scim_token"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, rec.Body)
		}
	}
	for _, never := range []string{tok.AccessToken[:20], "guess", "demo-admin-secret", "demo-scim-token"} {
		if strings.Contains(rec.Body.String(), never) {
			t.Errorf("/metrics holds %q", never)
		}
	}
}
