package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/testlog"
)

// TestReferenceTokensOnTheAPIs: with the demo configuration, a reference
// token of demo-reference opens the Admin API, demo-api introspects it,
// and once its client revokes it the Admin API answers 401 invalid_token
// at the next request.
func TestReferenceTokensOnTheAPIs(t *testing.T) {
	_, logger := testlog.New()
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	svc, err := newService(t.Context(), configSource{issuer: srv.URL + "/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc.routes()
	cc := clientcredentials.Config{ClientID: "demo-reference", ClientSecret: "demo-reference-secret", TokenURL: srv.URL + "/ids/connect/token", Scopes: []string{"pd_AdminWebApi"}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok.AccessToken, ".") != 0 {
		t.Fatalf("not a reference token: %q", tok.AccessToken)
	}
	admin := func() (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webapi/api/v3/demo/Admin/Users", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	}
	if status, _ := admin(); status != 200 {
		t.Fatalf("Admin API with a reference token: %d", status)
	}
	post := func(path, id, pass string, form url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ids"+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post("/connect/introspect", "demo-api", "demo-api-secret", url.Values{"token": {tok.AccessToken}})
	var answer map[string]any
	if status != 200 || json.Unmarshal([]byte(body), &answer) != nil || answer["active"] != true || answer["client_id"] != "demo-reference" {
		t.Fatalf("introspection: %d %s", status, body)
	}
	if status, _ := post("/connect/revocation", "demo-reference", "demo-reference-secret", url.Values{"token": {tok.AccessToken}}); status != 200 {
		t.Fatalf("revocation: %d", status)
	}
	if status, challenge := admin(); status != 401 || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Fatalf("after revocation: %d %q", status, challenge)
	}
}
