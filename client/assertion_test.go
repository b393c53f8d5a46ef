package client_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// signerOnly hides a key's type behind crypto.Signer, as a key in a KMS or
// an HSM is.
type signerOnly struct{ crypto.Signer }

// TestPrivateKeyJWT: a client with a key, of each algorithm, gets tokens
// from the issuer and calls the API; every token request carries a new
// assertion (the issuer refuses a jti it has seen), and a key of another
// client is refused with a typed invalid_client.
func TestPrivateKeyJWT(t *testing.T) {
	for _, alg := range []string{"ES256", "RS256", "PS256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) {
			k, err := keys.Generate(alg)
			if err != nil {
				t.Fatal(err)
			}
			w := newWorld(t, 0, nil)
			w.cfg.Clients = append(w.cfg.Clients, issuer.ClientConfig{ClientID: "keyed", PublicKeys: []issuer.ClientKeyConfig{{Key: k.Public(), Alg: alg}}, Scopes: []string{scope.AdminWebAPI}})
			if err := w.iss.Reload(w.cfg); err != nil {
				t.Fatal(err)
			}
			keyAlg := ""
			if alg == "PS256" {
				keyAlg = alg // RSA defaults to RS256
			}
			c := w.client(func(cfg *client.Config) {
				cfg.ClientID, cfg.ClientSecret, cfg.Key, cfg.KeyAlg = "keyed", "", signerOnly{k.Private}, keyAlg
				cfg.RenewBefore = time.Hour // every call fetches a token
			})
			for range 3 {
				if status, body, err := get(t, c, w.api.URL); err != nil || status != 200 || body != "ok " {
					t.Fatalf("got %d %q %v", status, body, err)
				}
			}
			if n := w.tokenCalls.Load(); n != 3 {
				t.Fatalf("%d token requests, want 3, each with its own assertion", n)
			}
			other, err := keys.Generate(alg)
			if err != nil {
				t.Fatal(err)
			}
			wrong := w.client(func(cfg *client.Config) {
				cfg.ClientID, cfg.ClientSecret, cfg.Key, cfg.KeyAlg = "keyed", "", other.Private, keyAlg
			})
			_, _, err = get(t, wrong, w.api.URL)
			var te *client.TokenError
			if !errors.As(err, &te) || te.Code != "invalid_client" || te.StatusCode != 401 {
				t.Fatalf("another key: err = %v", err)
			}
		})
	}
}

// TestPrivateKeyJWTAtAnyRFC7523Server: the assertion is what RFC 7523 §3
// asks of any server: checked here by golang-jwt, not by this module's
// issuer. aud is the token URL, iss and sub the client ID, exp near, a
// jti new each time, the kid the key's RFC 7638 thumbprint by default;
// the client_id and the resources ride beside it, and no secret.
func TestPrivateKeyJWTAtAnyRFC7523Server(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	jtis := map[string]bool{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(why string) {
			t.Error(why)
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		}
		if err := r.ParseForm(); err != nil {
			fail(err.Error())
			return
		}
		if r.Header.Get("Authorization") != "" || r.PostForm.Has("client_secret") {
			fail("a second authentication method")
			return
		}
		if r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || r.PostForm.Get("client_id") != "reporting" ||
			strings.Join(r.PostForm["resource"], " ") != "https://api.example/a urn:example:b" || r.PostForm.Get("scope") != scope.AdminWebAPI {
			fail("form " + r.PostForm.Encode())
			return
		}
		var claims jwt.RegisteredClaims
		tok, err := jwt.ParseWithClaims(r.PostForm.Get("client_assertion"), &claims, func(tok *jwt.Token) (any, error) {
			if tok.Header["kid"] != k.KID {
				return nil, errors.New("kid is not the thumbprint")
			}
			return k.Public().(*ecdsa.PublicKey), nil
		}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(srv.URL+"/token"), jwt.WithIssuer("reporting"), jwt.WithSubject("reporting"), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
		if err != nil || !tok.Valid {
			fail("assertion: " + err.Error())
			return
		}
		if life := claims.ExpiresAt.Sub(claims.IssuedAt.Time); life <= 0 || life > 5*time.Minute {
			fail("assertion lifetime " + life.String())
			return
		}
		mu.Lock()
		seen := jtis[claims.ID] || claims.ID == ""
		jtis[claims.ID] = true
		mu.Unlock()
		if seen {
			fail("jti reused or missing")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "t", "token_type": "Bearer", "expires_in": 3600})
	}))
	defer srv.Close()
	api := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer api.Close()
	cfg := client.Config{
		ClientID: "reporting", Key: k.Private, TokenURL: srv.URL + "/token", Origins: []string{api.URL},
		Scopes: []string{scope.AdminWebAPI}, Resources: []string{"https://api.example/a", "urn:example:b"}, RenewBefore: 2 * time.Hour,
	}
	hc := cfg.Client(context.Background())
	for range 3 {
		if status, _, err := get(t, hc, api.URL); err != nil || status != 200 {
			t.Fatalf("%d %v", status, err)
		}
	}
	if len(jtis) != 3 {
		t.Fatalf("%d assertions, want 3", len(jtis))
	}
}

// TestResources: with Resources, the token is for exactly those
// audiences; the issuer refuses one the client is not allowed.
func TestResources(t *testing.T) {
	w := newWorld(t, 0, nil)
	w.cfg.Clients[0].Audience = []string{w.iss.URL() + "/resources", "https://payments.example/api"}
	if err := w.iss.Reload(w.cfg); err != nil {
		t.Fatal(err)
	}
	var aud []string
	api := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var claims struct{ Aud []string }
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		parts := strings.Split(tok, ".")
		if len(parts) == 3 {
			b, _ := jwt.NewParser().DecodeSegment(parts[1])
			_ = json.Unmarshal(b, &claims)
		}
		aud = claims.Aud
	}))
	defer api.Close()
	c := w.client(func(cfg *client.Config) {
		cfg.Origins = []string{api.URL}
		cfg.Resources = []string{"https://payments.example/api"}
	})
	if status, _, err := get(t, c, api.URL); err != nil || status != 200 || strings.Join(aud, " ") != "https://payments.example/api" {
		t.Fatalf("%d %v: aud %v", status, err, aud)
	}
	c = w.client(func(cfg *client.Config) {
		cfg.Origins = []string{api.URL}
		cfg.Resources = []string{"https://elsewhere.example"}
	})
	_, _, err := get(t, c, api.URL)
	var te *client.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_target" || te.StatusCode != 400 {
		t.Fatalf("err = %v", err)
	}
}

// TestKeyConfigErrors: a Config that cannot work fails every token
// request with an error that says why, and sends nothing.
func TestKeyConfigErrors(t *testing.T) {
	w := newWorld(t, 0, nil)
	es, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*client.Config){
		"a secret and a key":       func(cfg *client.Config) { cfg.Key = es.Private },
		"an alg that does not fit": func(cfg *client.Config) { cfg.ClientSecret, cfg.Key, cfg.KeyAlg = "", es.Private, "RS256" },
		"an alg off the list":      func(cfg *client.Config) { cfg.ClientSecret, cfg.Key, cfg.KeyAlg = "", es.Private, "HS256" },
	} {
		t.Run(name, func(t *testing.T) {
			before := w.tokenCalls.Load()
			_, _, err := get(t, w.client(mod), w.api.URL)
			var te *client.TokenError
			if !errors.As(err, &te) || te.Code != "" || !strings.Contains(err.Error(), "Config.") {
				t.Fatalf("err = %v", err)
			}
			if n := w.tokenCalls.Load() - before; n != 0 {
				t.Fatalf("%d token requests", n)
			}
		})
	}
}

// TestAssertionAudience: an assertion names the authorization server's
// issuer identifier as its aud, as draft-ietf-oauth-rfc7523bis requires
// (the MCP conformance suite accepts nothing else): Config.Issuer, or
// BaseURL's issuer "/ids"; a client given only a token URL knows no
// issuer, and names the token URL.
func TestAssertionAudience(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var aud []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var claims jwt.RegisteredClaims
		_, err := jwt.ParseWithClaims(r.FormValue("client_assertion"), &claims, func(*jwt.Token) (any, error) {
			return k.Public().(*ecdsa.PublicKey), nil
		}, jwt.WithValidMethods([]string{"ES256"}))
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		aud = claims.Audience
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"t","token_type":"Bearer","expires_in":3600}`))
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		cfg  client.Config
		want string
	}{
		{"BaseURL", client.Config{BaseURL: srv.URL}, srv.URL + "/ids"},
		{"BaseURL with a slash", client.Config{BaseURL: srv.URL + "/"}, srv.URL + "/ids"},
		{"Issuer and TokenURL", client.Config{Issuer: "https://as.example/tenant", TokenURL: srv.URL + "/oauth/token"}, "https://as.example/tenant"},
		{"TokenURL alone", client.Config{TokenURL: srv.URL + "/oauth/token"}, srv.URL + "/oauth/token"},
	} {
		c.cfg.ClientID, c.cfg.Key = "reporting", k.Private
		if _, err := c.cfg.TokenSource(context.Background()).Token(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mu.Lock()
		got := strings.Join(aud, " ")
		mu.Unlock()
		if got != c.want {
			t.Errorf("%s: aud %q, want %q", c.name, got, c.want)
		}
	}
}

// TestAssertionAudienceAtTheIssuer: this module's issuer takes the
// assertion whose aud is its issuer identifier, what a client of
// BaseURL sends.
func TestAssertionAudienceAtTheIssuer(t *testing.T) {
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	iss, err := issuer.New(&issuer.Config{Issuer: srv.URL + "/ids", EphemeralKey: true, Clients: []issuer.ClientConfig{{
		ClientID: "reporting", Scopes: []string{scope.AdminWebAPI}, PublicKeys: []issuer.ClientKeyConfig{{Key: k.Public()}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = iss
	cfg := client.Config{ClientID: "reporting", Key: k.Private, BaseURL: srv.URL, Scopes: []string{scope.AdminWebAPI}}
	if _, err := cfg.TokenSource(context.Background()).Token(); err != nil {
		t.Fatal(err)
	}
}
