package redisstore_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// TestRedTeamReplicasEndTokensOfAClientIDVariant (red team, issue 32 item
// 1): two issuers on one real redis-server. The reference tokens of a
// client "Café" (NFC), kept in Redis as JSON, stay ended at both replicas
// when a reload removes it and adds "Cafe\u0301" (NFD) and "CAFÉ" with the
// same secret; when "Café" comes back as a JWT client (another kind), its
// reference tokens stay inactive; the NFD client cannot revoke them (the
// Redis script compares the client byte for byte: the grant stays); and
// once "Café" comes back as it was, the token stays inactive at both
// replicas: removed and put back, it is a new registration (issue 39).
func TestRedTeamReplicasEndTokensOfAClientIDVariant(t *testing.T) {
	srv := startRedis(t)
	const nfc, nfd, upper = "Caf\u00e9", "Cafe\u0301", "CAF\u00c9"
	client := func(id, kind string) issuer.ClientConfig {
		return issuer.ClientConfig{ClientID: id, SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: kind}
	}
	config := func(clients ...issuer.ClientConfig) *issuer.Config {
		return &issuer.Config{
			Issuer: sharedIssuer, Keys: []issuer.KeyConfig{{Key: signerKey(), Alg: "ES256"}}, Clients: clients,
			APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: []string{scope.AdminWebAPI}}},
		}
	}
	var replicas []*issuer.Issuer
	var urls []string
	stores := make([]*redisstore.TokenStore, 2)
	for i := range 2 {
		stores[i] = redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "idsauth:ref:"})
		iss, err := issuer.New(config(client(nfc, "reference")), issuer.WithTokenStore(stores[i]))
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ids/", iss)
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		replicas, urls = append(replicas, iss), append(urls, hs.URL+"/ids")
	}
	post := func(u, path, id, pass string, form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, u+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(pass))))
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(urls[0], "/connect/token", nfc, payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}})
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("token: %d %s", status, body)
	}
	// The grant in Redis names the client byte for byte.
	g, ok, err := stores[1].Get(context.Background(), tokenstore.KeyOf(tok.AccessToken), time.Now())
	if err != nil || !ok || g.ClientID != nfc {
		t.Fatalf("the grant in Redis: %+v %v %v", g, ok, err)
	}
	active := func(when string, want bool) {
		t.Helper()
		for i, u := range urls {
			_, body := post(u, "/connect/introspect", "api", "api-secret", url.Values{"token": {tok.AccessToken}})
			if got := body != `{"active":false}`+"\n"; got != want {
				t.Errorf("%s, replica %d: %s, want active %v", when, i+1, body, want)
			}
		}
	}
	active("before", true)
	reloadAll := func(clients ...issuer.ClientConfig) {
		t.Helper()
		for _, iss := range replicas {
			if err := iss.Reload(config(clients...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	reloadAll(client(nfd, "reference"), client(upper, "reference"))
	active("NFC removed, NFD and upper case added", false)
	for _, id := range []string{nfd, upper} {
		if status, body := post(urls[1], "/connect/revocation", id, payrollSecret, url.Values{"token": {tok.AccessToken}}); status != 200 {
			t.Fatalf("revocation by %q: %d %s", id, status, body)
		}
	}
	// The Redis script compares the client byte for byte: the variants'
	// revocations revoked nothing, and the grant is still in Redis.
	if _, ok, err := stores[0].Get(context.Background(), tokenstore.KeyOf(tok.AccessToken), time.Now()); err != nil || !ok {
		t.Errorf("the grant after the variants' revocations: %v %v, want it kept", ok, err)
	}
	reloadAll(client(nfd, "reference"), client(nfc, "jwt"))
	active("NFC back as a JWT client", false)
	// Removed and put back, "Café" is a new registration (issue 39: a
	// new epoch): its earlier token never comes back to life.
	reloadAll(client(nfc, "reference"))
	active("NFC back as it was", false)
}
