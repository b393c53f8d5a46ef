package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

// TestIntrospectCommand: check-config lists reference clients and API
// resources; token fetches a reference token; introspect says it is
// active, with its claims, as the API resource, with the secret from the
// environment; once revoked it says inactive with exit status 1; a wrong
// API secret fails without printing the secret.
func TestIntrospectCommand(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := map[string]any{
		"issuer":       srv.URL + "/ids",
		"ephemeralKey": true,
		"clients": []map[string]any{
			{"clientId": "reporting", "secretHashes": []string{secret.HashSHA256("rep-secret").String()}, "scopes": []string{"pd_AdminWebApi"}, "accessTokenType": "reference"},
			{"clientId": "jwtc", "secretHashes": []string{secret.HashSHA256("jwt-secret").String()}, "scopes": []string{"pd_AdminWebApi"}, "claims": []map[string]string{{"type": "tenant", "value": "acme"}}},
		},
		"apiResources": []map[string]any{{"name": "admin-api", "secretHashes": []string{secret.HashSHA256("api-secret").String()}, "scopes": []string{"pd_AdminWebApi"}}},
	}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "idsauth.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cc := idsauth(t, bin, "", nil, "check-config", cfgFile)
	if cc.code != 0 || !strings.Contains(cc.stdout, "profile rfc") || !strings.Contains(cc.stdout, "claim     client_tenant: acme") || !strings.Contains(cc.stdout, "tokens    reference") || !strings.Contains(cc.stdout, "API resources (may introspect at "+srv.URL+"/ids/connect/introspect)") || !strings.Contains(cc.stdout, "  admin-api\n") {
		t.Fatalf("check-config: %+v", cc)
	}
	mountIssuer(t, mux, cfgFile)
	tr := idsauth(t, bin, "", []string{"IDSAUTH_CLIENT_SECRET=rep-secret"}, "token", "-issuer", srv.URL+"/ids", "-client-id", "reporting", "-scope", "pd_AdminWebApi")
	tok := strings.TrimSpace(tr.stdout)
	if tr.code != 0 || tok == "" || strings.Contains(tok, ".") {
		t.Fatalf("token: %+v", tr)
	}
	args := []string{"introspect", "-issuer", srv.URL + "/ids", "-api", "admin-api"}
	r := idsauth(t, bin, tok+"\n", []string{"IDSAUTH_API_SECRET=api-secret"}, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "active: issued to reporting for pd_AdminWebApi") || !strings.Contains(r.stdout, `"client_id": "reporting"`) {
		t.Fatalf("introspect: %+v", r)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ids/connect/revocation", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("reporting", "rep-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("revocation: %v %v", resp, err)
	}
	resp.Body.Close()
	// After "--": a reference token may begin with "-" (one in 64 do).
	if r := idsauth(t, bin, "", []string{"IDSAUTH_API_SECRET=api-secret"}, append(args, "--", tok)...); r.code != 1 || strings.TrimSpace(r.stdout) != "inactive" {
		t.Fatalf("introspect after revocation: %+v", r)
	}
	// A JWT introspects too (it is longer than any reference token).
	jwt := strings.TrimSpace(idsauth(t, bin, "", []string{"IDSAUTH_CLIENT_SECRET=jwt-secret"}, "token", "-issuer", srv.URL+"/ids", "-client-id", "jwtc", "-scope", "pd_AdminWebApi").stdout)
	if len(jwt) <= 512 {
		t.Fatalf("the JWT is %d bytes, within a reference token's bound: the case proves nothing", len(jwt))
	}
	if r := idsauth(t, bin, jwt+"\n", []string{"IDSAUTH_API_SECRET=api-secret"}, args...); r.code != 0 || !strings.Contains(r.stdout, "active: issued to jwtc") || !strings.Contains(r.stdout, `"client_tenant": "acme"`) {
		t.Fatalf("introspect a JWT (%d bytes): %+v", len(jwt), r)
	}
	if r := idsauth(t, bin, "", []string{"IDSAUTH_API_SECRET=wrong-api-secret"}, append(args, "--", tok)...); r.code != 1 || !strings.Contains(r.stderr, "not checked") || strings.Contains(r.stdout+r.stderr, "wrong-api-secret") {
		t.Fatalf("introspect with a wrong secret: %+v", r)
	}
}
