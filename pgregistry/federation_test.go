package pgregistry_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
)

// TestRegistryFederatedClient: the registry stores the file's JSON of a
// client, so a field the file learns comes along: a client registered
// with federated credentials and a maximum assertion age (and one with a
// jwksUri) gets no secret it did not ask for, is served, and
// authenticates with its workload's token; one whose identity is a file
// client's is refused 400, naming the field.
func TestRegistryFederatedClient(t *testing.T) {
	_, dbURL := newDatabase(t)
	foreign := jwktest.NewJWKS(t, jwktest.NewKey(t, "ES256"))
	key := jwktest.NewKey(t, "ES256")
	foreign.SetKeys(key)
	r := newReplica(t, dbURL, func(c *issuer.Config) {
		c.TrustedIssuers = []issuer.TrustedIssuerConfig{{Issuer: foreign.Issuer(), Kind: "oidc"}}
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "file-ci", Scopes: []string{"pd_AdminWebApi"},
			FederatedCredentials: []issuer.FederatedCredential{{Issuer: foreign.Issuer(), Subject: "repo:acme/file"}}})
	})
	a := r.admin(t, http.MethodPost, "/clients", `{"clientId": "ci", "scopes": ["pd_AdminWebApi"], "maxAssertionAgeSeconds": 900,
		"federatedCredentials": [{"issuer": "`+foreign.Issuer()+`", "subject": "repo:acme/app:ref:refs/heads/main"}]}`)
	if a.status != http.StatusCreated || a.body["secret"] != nil || !strings.Contains(a.raw, `"maxAssertionAgeSeconds":900`) || !strings.Contains(a.raw, "repo:acme/app:ref:refs/heads/main") {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	if a := r.admin(t, http.MethodPost, "/clients", `{"clientId": "keys", "scopes": ["pd_AdminWebApi"], "jwksUri": "https://keys.example/jwks"}`); a.status != http.StatusCreated || a.body["secret"] != nil || !strings.Contains(a.raw, "https://keys.example/jwks") {
		t.Fatalf("create with jwksUri: %d %s", a.status, a.raw)
	}
	r.waitGeneration(t, r.reg.Status().Generation, 10*time.Second)
	now := time.Now()
	tok := jwktest.Sign(t, key, map[string]any{"typ": "JWT"}, map[string]any{"iss": foreign.Issuer(), "sub": "repo:acme/app:ref:refs/heads/main",
		"aud": r.issuerURL() + "/connect/token", "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	v := url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}, "client_id": {"ci"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {tok}}
	if got := do(t, http.MethodPost, r.issuerURL()+"/connect/token", "", "application/x-www-form-urlencoded", v.Encode()); got.status != 200 {
		t.Fatalf("the registered client's workload token: %d %s\n%s", got.status, got.raw, r.logs)
	}
	clash := r.admin(t, http.MethodPost, "/clients", `{"clientId": "thief", "scopes": ["pd_AdminWebApi"],
		"federatedCredentials": [{"issuer": "`+foreign.Issuer()+`", "subject": "repo:acme/file"}]}`)
	if clash.status != http.StatusBadRequest || clash.body["field"] != "federatedCredentials[0]" {
		t.Fatalf("a clash with the file's client: %d %s", clash.status, clash.raw)
	}
}
