package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// dpopWorld is an issuer and an API that takes DPoP tokens only, both
// demanding nonces when nonces is set, counting what they get.
type dpopWorld struct {
	ids, api          *httptest.Server
	tokenReqs, apiReq atomic.Int64
}

func newDPoPWorld(t *testing.T, nonces bool, tokenType string) *dpopWorld {
	t.Helper()
	w := &dpopWorld{}
	w.ids = httptest.NewServer(nil)
	t.Cleanup(w.ids.Close)
	cfg := &issuer.Config{
		Issuer: w.ids.URL + "/ids", Keys: []issuer.KeyConfig{{Key: newKey(t)}},
		Clients: []issuer.ClientConfig{{ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()},
			Scopes: []string{scope.AdminWebAPI}, AccessTokenType: tokenType, RequireDPoP: true}},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{secret.HashSHA256("x").String()}, Scopes: []string{scope.AdminWebAPI}}},
		DPoP:         issuer.DPoPConfig{RequireNonce: nonces},
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.ids.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.tokenReqs.Add(1)
		iss.ServeHTTP(rw, r)
	})
	aud := []string{iss.URL() + "/resources"}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: aud, Keys: iss, Introspection: &accesstoken.Introspection{ClientID: "api", Local: iss}})
	if err != nil {
		t.Fatal(err)
	}
	w.api = httptest.NewServer(nil)
	t.Cleanup(w.api.Close)
	dp, err := middleware.NewDPoP(middleware.DPoPConfig{Required: true, PublicURL: w.api.URL, RequireNonce: nonces})
	if err != nil {
		t.Fatal(err)
	}
	protect := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dp})
	h := protect(middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		body, _ := io.ReadAll(r.Body)
		_ = json.NewEncoder(rw).Encode(map[string]string{"jkt": c.JKT, "body": string(body)})
	})))
	w.api.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.apiReq.Add(1)
		h.ServeHTTP(rw, r)
	})
	return w
}

func dpopKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDPoPClientEndToEnd: a client with a DPoP key gets a bound token
// and calls an API that takes DPoP only, for JWTs and reference tokens,
// GET and POST alike.
func TestDPoPClientEndToEnd(t *testing.T) {
	for _, typ := range []string{"jwt", "reference"} {
		w := newDPoPWorld(t, false, typ)
		key := dpopKey(t)
		jkt, _ := keys.Thumbprint(key.Public())
		cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.api.URL, TokenURL: w.ids.URL + "/ids/connect/token",
			Scopes: []string{scope.AdminWebAPI}, DPoPKey: key}
		hc := cfg.Client(context.Background())
		for i := range 3 {
			resp, err := hc.Post(w.api.URL+"/admin?page=1", "text/plain", strings.NewReader("hello"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"jkt":"`+jkt+`"`) || !strings.Contains(string(b), `"body":"hello"`) {
				t.Fatalf("%s, call %d: %s %s", typ, i, resp.Status, b)
			}
		}
		if w.tokenReqs.Load() != 1 || w.apiReq.Load() != 3 {
			t.Fatalf("%s: %d token requests and %d calls, want 1 and 3", typ, w.tokenReqs.Load(), w.apiReq.Load())
		}
	}
}

// TestDPoPClientNonces: against an issuer and an API that both demand
// nonces, the client retries once at each with the nonce it is given,
// then keeps it for that origin: the next call costs one request.
func TestDPoPClientNonces(t *testing.T) {
	w := newDPoPWorld(t, true, "jwt")
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.api.URL, TokenURL: w.ids.URL + "/ids/connect/token",
		Scopes: []string{scope.AdminWebAPI}, DPoPKey: dpopKey(t)}
	hc := cfg.Client(context.Background())
	for i, want := range []int64{2, 3} { // API requests in all after each call
		resp, err := hc.Post(w.api.URL+"/admin", "text/plain", strings.NewReader("hello"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"body":"hello"`) {
			t.Fatalf("call %d: %s %s", i, resp.Status, b)
		}
		if w.apiReq.Load() != want {
			t.Fatalf("call %d: %d API requests in all, want %d", i, w.apiReq.Load(), want)
		}
	}
	if w.tokenReqs.Load() != 2 {
		t.Fatalf("%d token requests, want 2 (use_dpop_nonce, then the retry)", w.tokenReqs.Load())
	}
}

// TestDPoPClientWithoutAKey: a client without a DPoP key cannot get a
// token for a client that requires DPoP: the issuer's error comes back.
func TestDPoPClientWithoutAKey(t *testing.T) {
	w := newDPoPWorld(t, false, "jwt")
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: w.api.URL, TokenURL: w.ids.URL + "/ids/connect/token", Scopes: []string{scope.AdminWebAPI}}
	_, err := cfg.Client(context.Background()).Get(w.api.URL + "/admin")
	var te *client.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_request" {
		t.Fatalf("err = %v", err)
	}
}

// TestDPoPClientNonceOnlyFromADPoPChallenge: a use_dpop_nonce in a Bearer
// challenge is no DPoP answer: the client does not retry on it.
func TestDPoPClientNonceOnlyFromADPoPChallenge(t *testing.T) {
	w := newDPoPWorld(t, false, "jwt")
	var calls atomic.Int64
	odd := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		rw.Header().Set("DPoP-Nonce", "n-1")
		rw.Header().Set("WWW-Authenticate", `Bearer realm="x", error="use_dpop_nonce"`)
		rw.WriteHeader(http.StatusUnauthorized)
	}))
	defer odd.Close()
	cfg := client.Config{ClientID: "reporting", ClientSecret: "s3cret", BaseURL: odd.URL, TokenURL: w.ids.URL + "/ids/connect/token",
		Scopes: []string{scope.AdminWebAPI}, DPoPKey: dpopKey(t)}
	resp, err := cfg.Client(context.Background()).Get(odd.URL + "/admin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || calls.Load() != 1 {
		t.Fatalf("%s after %d requests, want the 401 after one", resp.Status, calls.Load())
	}
}
