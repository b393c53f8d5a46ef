package middleware_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestAnAPIOnTwoOrigins: one API, one handler, served by two real
// listeners, a plain one and a TLS one, the second behind its
// PublicOrigin. On each, a strict client of RFC 9728 §3.3 keeps the
// document a challenge names (its "resource" is the URL called, on that
// origin), and a DPoP proof is accepted for that origin's URL and refused
// for the other's.
func TestAnAPIOnTwoOrigins(t *testing.T) {
	issSrv := httptest.NewServer(nil)
	t.Cleanup(issSrv.Close)
	iss, err := issuer.New(&issuer.Config{Issuer: issSrv.URL + "/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}}}})
	if err != nil {
		t.Fatal(err)
	}
	issSrv.Config.Handler = iss

	plain, tlsSrv := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
	plain.Start()
	tlsSrv.StartTLS()
	t.Cleanup(plain.Close)
	t.Cleanup(tlsSrv.Close)
	md := &middleware.ResourceMetadata{Resource: plain.URL + "/api", AuthorizationServers: []string{iss.URL()}, DPoPSigningAlgValuesSupported: middleware.DPoPAlgorithms()}
	docs, err := md.Handler()
	if err != nil {
		t.Fatal(err)
	}
	v := newValidator(t, accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	bearer := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ResourceMetadata: md, DPoP: newDPoP(t, middleware.DPoPConfig{PublicURL: plain.URL})})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/", docs)
	mux.Handle("/api/", bearer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) })))
	plain.Config.Handler = mux
	tlsSrv.Config.Handler = middleware.PublicOrigin(tlsSrv.URL + "/")(mux)

	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key, _ := clientauth.NewSigner(k, "", "")
	p, err := key.Proof(http.MethodPost, iss.TokenURL(), "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, iss.TokenURL(), strings.NewReader("grant_type=client_credentials&scope="+scope.AdminWebAPI))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", p)
	req.SetBasicAuth("c", "s")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || answer.AccessToken == "" {
		t.Fatalf("token: %s %v", resp.Status, err)
	}
	tok := answer.AccessToken

	for _, origin := range []struct {
		name       string
		srv, other *httptest.Server
	}{{"plain", plain, tlsSrv}, {"TLS", tlsSrv, plain}} {
		called := origin.srv.URL + "/api/v3/demo/Users"
		hc := origin.srv.Client()
		resp, err := hc.Get(called)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if _, err := strictMetadataWith(t, hc, called, resp.Header.Values("WWW-Authenticate")); resp.StatusCode != 401 || err != nil {
			t.Errorf("%s, no token: %s: %v", origin.name, resp.Status, err)
		}
		for _, htu := range []string{called, origin.other.URL + "/api/v3/demo/Users"} {
			req, _ := http.NewRequest(http.MethodGet, called, nil)
			req.Header.Set("Authorization", "DPoP "+tok)
			req.Header.Set("DPoP", proof(t, key, http.MethodGet, htu, tok, "", time.Now()))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[bool]int{true: 200, false: 401}[htu == called]; resp.StatusCode != want {
				t.Errorf("%s, a proof for %s: %s %q, want %d", origin.name, htu, resp.Status, resp.Header.Values("WWW-Authenticate"), want)
			}
		}
	}
}

// TestPublicOriginRefusesWhatIsNotAnOrigin: a path, a query, another
// scheme or no host is a misconfiguration, refused at once.
func TestPublicOriginRefusesWhatIsNotAnOrigin(t *testing.T) {
	for _, o := range []string{"", "api.example.com", "ftp://api.example.com", "https://", "https://api.example.com/api", "https://api.example.com?x", "https://u@api.example.com"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("PublicOrigin(%q) did not panic", o)
				}
			}()
			middleware.PublicOrigin(o)
		}()
	}
}
