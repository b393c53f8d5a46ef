package middleware_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// api is a protected service on loopback: /admin needs pd_AdminWebApi,
// /connect needs pd_ConnectWebApi.
type api struct {
	*httptest.Server
	key  *keys.Key
	jwks *jwktest.JWKS
}

func newAPI(t *testing.T, alg string, cfg accesstoken.Config, bc middleware.BearerConfig) *api {
	t.Helper()
	k := jwktest.NewKey(t, alg)
	jwks := jwktest.NewJWKS(t, k)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if cfg.Issuer == "" {
		cfg.Issuer = jwks.Issuer()
	}
	if len(cfg.Audience) == 0 && !cfg.AnyAudience {
		cfg.Audience = []string{cfg.Issuer + "/resources"} // what jwktest.Claims puts in aud
	}
	v, err := accesstoken.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bc.Realm = "test"
	authed := alice.New(middleware.RequireBearerWithConfig(v, bc))
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, found := accesstoken.ClaimsFrom(r.Context())
		if !found {
			t.Error("handler reached without claims")
			return
		}
		fmt.Fprintf(w, "hello %s %s", c.ClientID, c.Scopes)
	})
	mux := http.NewServeMux()
	mux.Handle("/admin", authed.Append(middleware.RequireScope(scope.AdminWebAPI)).Then(ok))
	mux.Handle("/connect", authed.Append(middleware.RequireScope(scope.ConnectWebAPI)).Then(ok))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &api{Server: srv, key: k, jwks: jwks}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) json(t *testing.T) map[string]string {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json; body %q", ct, a.body)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatalf("body %q is not a JSON object of strings: %v", a.body, err)
	}
	return m
}

func call(t *testing.T, url string, authz ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range authz {
		req.Header.Add("Authorization", a)
	}
	return doAnswer(t, req)
}

// doAnswer sends req and reads the whole answer.
func doAnswer(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// wantChallenge checks the no-token answer: 401, a bare challenge, no JSON.
func wantChallenge(t *testing.T, a answer) {
	t.Helper()
	if a.status != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", a.status)
	}
	if got := a.header.Get("WWW-Authenticate"); got != `Bearer realm="test"` {
		t.Errorf("WWW-Authenticate = %q, want a bare challenge", got)
	}
	if got := a.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
	if strings.Contains(a.header.Get("Content-Type"), "json") || json.Valid([]byte(a.body)) {
		t.Errorf("a missing token must not get JSON: %q %q", a.header.Get("Content-Type"), a.body)
	}
}

// wantError checks an error answer with a code in challenge and body.
func wantError(t *testing.T, a answer, status int, code, description string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status = %d, want %d; body %q", a.status, status, a.body)
	}
	m := a.json(t)
	if m["error"] != code {
		t.Errorf("error = %q, want %q", m["error"], code)
	}
	if description != "" && m["error_description"] != description {
		t.Errorf("error_description = %q, want %q", m["error_description"], description)
	}
	wantHeader := fmt.Sprintf(`Bearer realm="test", error=%q, error_description=%q`, code, m["error_description"])
	if got := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, wantHeader) {
		t.Errorf("WWW-Authenticate = %q, want prefix %q", got, wantHeader)
	}
	if got := a.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
}

func TestRequireBearer(t *testing.T) {
	for _, alg := range jwktest.Algs {
		t.Run(alg, func(t *testing.T) {
			s := newAPI(t, alg, accesstoken.Config{}, middleware.BearerConfig{})
			iss := s.jwks.Issuer()
			admin := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
			good := jwktest.Sign(t, s.key, nil, admin)
			other := jwktest.NewKey(t, alg)

			t.Run("no Authorization header gets a bare challenge", func(t *testing.T) {
				wantChallenge(t, call(t, s.URL+"/admin"))
			})
			t.Run("Basic scheme gets a bare challenge", func(t *testing.T) {
				wantChallenge(t, call(t, s.URL+"/admin", "Basic dXNlcjpwYXNz"))
			})
			t.Run("Bearer with nothing after it gets a bare challenge", func(t *testing.T) {
				wantChallenge(t, call(t, s.URL+"/admin", "Bearer"))
				wantChallenge(t, call(t, s.URL+"/admin", "Bearer    "))
			})
			t.Run("token in the query only gets a bare challenge", func(t *testing.T) {
				wantChallenge(t, call(t, s.URL+"/admin?access_token="+good))
			})
			t.Run("two Authorization headers get invalid_request", func(t *testing.T) {
				a := call(t, s.URL+"/admin", "Bearer "+good, "Bearer "+good)
				wantError(t, a, 400, "invalid_request", "more than one Authorization header")
			})
			t.Run("a space inside the token gets invalid_request", func(t *testing.T) {
				a := call(t, s.URL+"/admin", "Bearer "+good[:20]+" "+good[20:])
				wantError(t, a, 400, "invalid_request", "bearer token contains a space")
			})
			t.Run("valid token with the scope passes", func(t *testing.T) {
				a := call(t, s.URL+"/admin", "Bearer "+good)
				if a.status != 200 || a.body != "hello test-client pd_AdminWebApi" {
					t.Fatalf("got %d %q", a.status, a.body)
				}
			})
			t.Run("bearer in lower case and several spaces pass", func(t *testing.T) {
				a := call(t, s.URL+"/admin", "bearer   "+good)
				if a.status != 200 {
					t.Fatalf("got %d %q", a.status, a.body)
				}
			})
			t.Run("scope as an array passes", func(t *testing.T) {
				tok := jwktest.Sign(t, s.key, nil, jwktest.With(admin, "scope", []string{scope.ConnectWebAPI, scope.AdminWebAPI}))
				a := call(t, s.URL+"/admin", "Bearer "+tok)
				if a.status != 200 || a.body != "hello test-client pd_AdminWebApi pd_ConnectWebApi" {
					t.Fatalf("got %d %q", a.status, a.body)
				}
			})
			t.Run("valid token without the scope gets insufficient_scope", func(t *testing.T) {
				a := call(t, s.URL+"/connect", "Bearer "+good)
				wantError(t, a, 403, "insufficient_scope", "token lacks the scope this API requires")
				if got := a.header.Get("WWW-Authenticate"); !strings.HasSuffix(got, `, scope="pd_ConnectWebApi"`) {
					t.Errorf("WWW-Authenticate = %q, want the needed scope", got)
				}
				if m := a.json(t); m["scope"] != scope.ConnectWebAPI {
					t.Errorf("body scope = %q", m["scope"])
				}
			})

			hs256 := func() string {
				// An HS256 token keyed with the public key's bytes: the
				// classic algorithm-confusion attack.
				der, err := x509.MarshalPKIXPublicKey(s.key.Public())
				if err != nil {
					t.Fatal(err)
				}
				in := jwktest.Segment(map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": s.key.KID}) + "." + jwktest.Segment(admin)
				mac := hmac.New(sha256.New, der)
				mac.Write([]byte(in))
				return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
			}()
			parts := strings.Split(good, ".")
			tampered := parts[0] + "." + jwktest.Segment(jwktest.With(admin, "scope", "pd_AdminWebApi pd_ConnectWebApi")) + "." + parts[2]

			invalid := []struct {
				name, token, desc string
			}{
				{"garbage", "not-a-jwt", "token is malformed"},
				{"alg none", jwktest.Segment(map[string]any{"alg": "none", "typ": "at+jwt"}) + "." + jwktest.Segment(admin) + ".", "token signing algorithm not allowed"},
				{"HS256 keyed with the public key", hs256, "token signing algorithm not allowed"},
				{"tampered payload", tampered, "signature invalid"},
				{"signed by an unknown key", jwktest.Sign(t, other, nil, admin), "unknown signing key"},
				{"known kid but another key's signature", jwktest.Sign(t, other, map[string]any{"kid": s.key.KID}, admin), "signature invalid"},
				{"expired", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "exp", time.Now().Add(-time.Hour).Unix())), "token expired"},
				{"no exp", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "exp", nil)), "token lacks a required claim"},
				{"nbf in the future", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "nbf", time.Now().Add(time.Hour).Unix())), "token not valid yet"},
				{"iat in the future", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "iat", time.Now().Add(time.Hour).Unix())), "token issued in the future"},
				{"wrong iss", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "iss", "https://evil.example/ids")), "token issuer not accepted"},
				{"typ id+jwt", jwktest.Sign(t, s.key, map[string]any{"typ": "id+jwt"}, admin), "token type is not an access token"},
				{"crit header", jwktest.Sign(t, s.key, map[string]any{"crit": []string{"exp"}}, admin), "token has critical header parameters that are not supported"},
				{"scope as a number", jwktest.Sign(t, s.key, nil, jwktest.With(admin, "scope", 42)), "token scope claim is neither a string nor an array of strings"},
				{"10 KB of garbage", strings.Repeat("A", 10<<10), "token is malformed"},
			}
			for _, c := range invalid {
				t.Run(c.name+" gets invalid_token", func(t *testing.T) {
					a := call(t, s.URL+"/admin", "Bearer "+c.token)
					wantError(t, a, 401, "invalid_token", c.desc)
					if len(c.token) > 8 && (strings.Contains(a.body, c.token[:8]) || strings.Contains(a.header.Get("WWW-Authenticate"), c.token[:8])) {
						t.Errorf("answer echoes the token")
					}
				})
			}
		})
	}
}

func TestRequireBearerTypeOptional(t *testing.T) {
	s := newAPI(t, "ES256", accesstoken.Config{}, middleware.BearerConfig{})
	claims := jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	for _, typ := range []any{"JWT", "application/at+jwt", "AT+JWT", nil} {
		tok := jwktest.Sign(t, s.key, map[string]any{"typ": typ}, claims)
		if a := call(t, s.URL+"/admin", "Bearer "+tok); a.status != 200 {
			t.Errorf("typ %v: got %d %q", typ, a.status, a.body)
		}
	}
	strict := newAPI(t, "ES256", accesstoken.Config{RequireType: true}, middleware.BearerConfig{})
	tok := jwktest.Sign(t, strict.key, map[string]any{"typ": nil}, jwktest.Claims(strict.jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	wantError(t, call(t, strict.URL+"/admin", "Bearer "+tok), 401, "invalid_token", "token type is not an access token")
}

func TestRequireBearerAudience(t *testing.T) {
	s := newAPI(t, "ES256", accesstoken.Config{Audience: []string{"https://api.example"}}, middleware.BearerConfig{})
	claims := jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	wrong := jwktest.Sign(t, s.key, nil, claims)
	wantError(t, call(t, s.URL+"/admin", "Bearer "+wrong), 401, "invalid_token", "token audience not accepted")
	right := jwktest.Sign(t, s.key, nil, jwktest.With(claims, "aud", []string{"other", "https://api.example"}))
	if a := call(t, s.URL+"/admin", "Bearer "+right); a.status != 200 {
		t.Fatalf("got %d %q", a.status, a.body)
	}
}

func TestRequireScopeWithoutRequireBearerFailsClosed(t *testing.T) {
	h := middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("handler reached")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	a := call(t, srv.URL, "Bearer whatever")
	if a.status != 401 || a.header.Get("WWW-Authenticate") != `Bearer realm="idsauth"` {
		t.Fatalf("got %d %q", a.status, a.header.Get("WWW-Authenticate"))
	}
}

func TestRejectHookAndLogger(t *testing.T) {
	type rejection struct {
		status int
		err    error
	}
	var got []rejection
	logs, logger := testlog.New()
	hook := func(r *http.Request, status int, err error) { got = append(got, rejection{status, err}) }
	s := newAPI(t, "ES256", accesstoken.Config{},
		middleware.BearerConfig{OnReject: hook, Logger: logger})
	expired := jwktest.Sign(t, s.key, nil, jwktest.With(jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, time.Hour), "exp", 1))
	good := jwktest.Sign(t, s.key, nil, jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, time.Hour))
	call(t, s.URL+"/admin")
	call(t, s.URL+"/admin", "Bearer "+expired)
	call(t, s.URL+"/connect", "Bearer "+good)
	want := []struct {
		status int
		code   string
	}{{401, "no_token"}, {401, "expired"}, {403, "insufficient_scope"}}
	if len(got) != len(want) {
		t.Fatalf("hook got %v", got)
	}
	for i := range want {
		if got[i].status != want[i].status || accesstoken.ReasonCode(got[i].err) != want[i].code {
			t.Errorf("rejection %d = %v (%s), want %v", i, got[i], accesstoken.ReasonCode(got[i].err), want[i])
		}
	}
	if !errors.Is(got[1].err, accesstoken.ErrExpired) {
		t.Errorf("the hook's expired token is not ErrExpired: %#v", got[1].err)
	}
	for _, tok := range []string{expired, good} {
		for _, part := range strings.Split(tok, ".") {
			if strings.Contains(logs.String(), part) {
				t.Fatalf("log holds part of a token: %s", logs.String())
			}
		}
	}
	if n := strings.Count(logs.String(), "idsauth: request rejected"); n != 3 {
		t.Errorf("%d log lines, want 3:\n%s", n, logs.String())
	}
}

// nilValidator is a TokenValidator with a bug: it returns neither claims
// nor an error.
type nilValidator struct{}

func (nilValidator) Validate(context.Context, string, accesstoken.Presentation) (*accesstoken.Claims, error) {
	return nil, nil
}

func TestRequireBearerNilClaimsFailClosed(t *testing.T) {
	var reasons []error
	h := alice.New(middleware.RequireBearerWithConfig(nilValidator{}, middleware.BearerConfig{Realm: "test", OnReject: func(r *http.Request, status int, err error) {
		reasons = append(reasons, err)
	}}), middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("handler reached")
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	wantError(t, call(t, srv.URL, "Bearer a.b.c"), 401, "invalid_token", "token invalid")
	if len(reasons) != 1 || accesstoken.ReasonCode(reasons[0]) != "no_claims" {
		t.Fatalf("reasons = %v", reasons)
	}
}
