package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// TestWorkloadAssertion: a client whose credential is a workload's token
// that something else keeps in a file reads the file at each token
// request, so that a renewed token is the one sent; AssertionFunc gives
// one per request too.
func TestWorkloadAssertion(t *testing.T) {
	foreign := jwktest.NewJWKS(t, jwktest.NewKey(t, "ES256"))
	key := jwktest.NewKey(t, "ES256")
	foreign.SetKeys(key)
	w := newWorld(t, 0, nil)
	w.cfg.TrustedIssuers = []issuer.TrustedIssuerConfig{{Issuer: foreign.Issuer(), Kind: "kubernetes"}}
	w.cfg.Clients = append(w.cfg.Clients, issuer.ClientConfig{ClientID: "pod", Scopes: []string{scope.AdminWebAPI},
		FederatedCredentials: []issuer.FederatedCredential{{Issuer: foreign.Issuer(), Subject: "system:serviceaccount:prod:reporter"}}})
	if err := w.iss.Reload(w.cfg); err != nil {
		t.Fatal(err)
	}
	token := func(sub string) string {
		now := time.Now()
		return jwktest.Sign(t, key, map[string]any{"typ": nil}, map[string]any{"iss": foreign.Issuer(), "sub": sub,
			"aud": []string{w.iss.TokenURL()}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	}
	file := filepath.Join(t.TempDir(), "token")
	write := func(tok string) {
		if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(token("system:serviceaccount:prod:reporter"))
	c := w.client(func(cfg *client.Config) {
		cfg.ClientID, cfg.ClientSecret, cfg.AssertionFile = "pod", "", file
		cfg.RenewBefore = 2 * time.Hour // every call fetches a token
	})
	if status, _, err := get(t, c, w.api.URL); err != nil || status != 200 {
		t.Fatalf("with the file's token: %d %v", status, err)
	}
	// The file renewed with a token of another account: the next request
	// sends it, and is refused.
	write(token("system:serviceaccount:prod:intruder"))
	_, _, err := get(t, c, w.api.URL)
	var te *client.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" {
		t.Fatalf("after the file changed: %v, want invalid_client", err)
	}
	n := 0
	f := w.client(func(cfg *client.Config) {
		cfg.ClientID, cfg.ClientSecret = "pod", ""
		cfg.AssertionFunc = func(context.Context) (string, error) { n++; return token("system:serviceaccount:prod:reporter"), nil }
	})
	if status, _, err := get(t, f, w.api.URL); err != nil || status != 200 || n != 1 {
		t.Fatalf("AssertionFunc: %d %v, %d calls", status, err, n)
	}
	bad := w.client(func(cfg *client.Config) { cfg.ClientID, cfg.AssertionFile = "pod", file }) // and the secret newWorld gives
	if _, _, err := get(t, bad, w.api.URL); err == nil {
		t.Error("a secret beside a workload's assertion: no error")
	}
}
