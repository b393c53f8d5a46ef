package redisstore_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestReplicasEndARemovedClientsTokens: two issuers on one redis-server,
// one signing key. A reload that removes a client, or takes a scope from
// it, ends at that replica what the client no longer holds: its reference
// tokens (kept in Redis, which the reload does not touch) and its JWTs
// introspect exactly inactive there, and never with a scope taken, while
// the replica that has not reloaded yet still answers by its own
// configuration; once both have reloaded, both answer so. Put back, the
// clients are new clients for their earlier tokens, at every replica,
// one started after too.
func TestReplicasEndARemovedClientsTokens(t *testing.T) {
	srv := startRedis(t)
	both := []string{scope.AdminWebAPI, scope.ConnectWebAPI}
	config := func(clients ...issuer.ClientConfig) *issuer.Config {
		return &issuer.Config{
			Issuer:  sharedIssuer,
			Keys:    []issuer.KeyConfig{{Key: signerKey(), Alg: "ES256"}},
			Clients: clients,
			APIResources: []issuer.APIResourceConfig{
				{Name: "both-api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: both},
			},
		}
	}
	ref := issuer.ClientConfig{ClientID: "payroll", SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: both, AccessTokenType: "reference"}
	jwtClient := issuer.ClientConfig{ClientID: "reports", SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: both}
	var replicas []*issuer.Issuer
	var urls []string
	for range 2 {
		tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "idsauth:ref:"})
		iss, err := issuer.New(config(ref, jwtClient), issuer.WithTokenStore(tokens))
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ids/", iss)
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		replicas, urls = append(replicas, iss), append(urls, hs.URL+"/ids")
	}
	post := func(u, path, id, pass string, form url.Values) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, u+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, pass)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	token := func(client string) string {
		t.Helper()
		var a struct {
			AccessToken string `json:"access_token"`
		}
		body := post(urls[0], "/connect/token", client, payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(both, " ")}})
		if json.Unmarshal([]byte(body), &a) != nil || a.AccessToken == "" {
			t.Fatalf("token for %s: %s", client, body)
		}
		return a.AccessToken
	}
	refTok, jwtTok := token("payroll"), token("reports")
	// scopes returns what replica i's introspection answers about tok:
	// its scope, or "inactive" for exactly {"active":false}.
	scopes := func(i int, tok string) string {
		t.Helper()
		body := post(urls[i], "/connect/introspect", "both-api", "api-secret", url.Values{"token": {tok}})
		if body == `{"active":false}`+"\n" {
			return "inactive"
		}
		var a struct {
			Active bool   `json:"active"`
			Scope  string `json:"scope"`
		}
		if json.Unmarshal([]byte(body), &a) != nil || !a.Active {
			t.Fatalf("replica %d: %s", i, body)
		}
		f := strings.Fields(a.Scope)
		if len(f) == 2 && f[0] > f[1] {
			f[0], f[1] = f[1], f[0]
		}
		return strings.Join(f, " ")
	}
	all := strings.Join(both, " ")
	check := func(when string, want ...string) {
		t.Helper()
		var got []string
		for i := range replicas {
			got = append(got, scopes(i, refTok), scopes(i, jwtTok))
		}
		if strings.Join(got, " | ") != strings.Join(want, " | ") {
			t.Fatalf("%s: replica 1 reference, JWT; replica 2 reference, JWT:\n got %q\nwant %q", when, got, want)
		}
	}
	check("before any reload", all, all, all, all)

	// Replica 1 reloads first: payroll loses pd_ConnectWebApi, reports is gone.
	narrowed := ref
	narrowed.Scopes = []string{scope.AdminWebAPI}
	if err := replicas[0].Reload(config(narrowed)); err != nil {
		t.Fatal(err)
	}
	check("replica 1 reloaded", scope.AdminWebAPI, "inactive", all, all)
	if err := replicas[1].Reload(config(narrowed)); err != nil {
		t.Fatal(err)
	}
	check("both reloaded", scope.AdminWebAPI, "inactive", scope.AdminWebAPI, "inactive")

	// payroll removed too: nothing of its is left at either replica.
	for _, iss := range replicas {
		if err := iss.Reload(config()); err != nil {
			t.Fatal(err)
		}
	}
	check("payroll removed", "inactive", "inactive", "inactive", "inactive")

	// Both put back: they are new clients for the tokens of before, at
	// both replicas and at a third started now, which reads from Redis
	// that they ended (issue 39: the tokens came back to life).
	for _, iss := range replicas {
		if err := iss.Reload(config(ref, jwtClient)); err != nil {
			t.Fatal(err)
		}
	}
	check("both put back", "inactive", "inactive", "inactive", "inactive")
	tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	third, err := issuer.New(config(ref, jwtClient), issuer.WithTokenStore(tokens))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ids/", third)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	replicas, urls = append(replicas, third), append(urls, hs.URL+"/ids")
	check("a third replica started after", "inactive", "inactive", "inactive", "inactive", "inactive", "inactive")
	refTok, jwtTok = token("payroll"), token("reports")
	check("tokens issued after", all, all, all, all, all, all)
}
