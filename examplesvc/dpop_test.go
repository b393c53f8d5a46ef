package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// TestDPoPOnTheAPIs: with the demo configuration, demo-dpop (which must
// send proofs) calls the Admin API through the client with a DPoP key;
// its bound token as Bearer is refused; the APIs' metadata (RFC 9728) is
// served where their challenges say.
func TestDPoPOnTheAPIs(t *testing.T) {
	_, logger := testlog.New()
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	svc, err := newService(t.Context(), configSource{issuer: srv.URL + "/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc.routes()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cfg := client.Config{ClientID: "demo-dpop", ClientSecret: "demo-dpop-secret", BaseURL: srv.URL, Scopes: []string{scope.AdminWebAPI}, DPoPKey: key}
	resp, err := cfg.Client(context.Background()).Get(srv.URL + "/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("demo-dpop with its key: %s", resp.Status)
	}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil || tok.TokenType != "DPoP" {
		t.Fatalf("token: %+v %v", tok, err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webapi/api/v3/demo/Admin/Users", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("the bound token as Bearer: %s %q", r.Status, r.Header.Values("WWW-Authenticate"))
	}
	// The metadata is where the challenge points.
	ch := r.Header.Get("WWW-Authenticate")
	_, after, _ := strings.Cut(ch, `resource_metadata="`)
	mdURL, _, _ := strings.Cut(after, `"`)
	if mdURL != srv.URL+"/.well-known/oauth-protected-resource/webapi/api/v3/demo/Admin/Users" {
		t.Fatalf("resource_metadata %q in %q", mdURL, ch)
	}
	m, err := http.Get(mdURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(m.Body)
	m.Body.Close()
	var doc struct {
		Resource string   `json:"resource"`
		Servers  []string `json:"authorization_servers"`
		Algs     []string `json:"dpop_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Resource != srv.URL+"/webapi/api/v3/demo/Admin/Users" || len(doc.Servers) != 1 || doc.Servers[0] != srv.URL+"/ids" || len(doc.Algs) != 5 {
		t.Fatalf("metadata: %s %v", b, err)
	}
	// demo-dpop without a key gets no token at all.
	plain := client.Config{ClientID: "demo-dpop", ClientSecret: "demo-dpop-secret", BaseURL: srv.URL, Scopes: []string{scope.AdminWebAPI}}
	if _, err := plain.TokenSource(context.Background()).Token(); err == nil || !strings.Contains(err.Error(), "invalid_request") {
		t.Fatalf("without a key: %v", err)
	}
}
