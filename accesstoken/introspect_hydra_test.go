package accesstoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// hydraAdmin is ORY Hydra v2's admin introspection endpoint
// (/admin/oauth2/introspect) on loopback: it takes no client
// authentication, and this one refuses any, an Authorization header or a
// client_id, client_secret or client_assertion in the form, so that a
// test sees none is sent. It answers as Hydra's handler writes its
// Introspection (oauth2/handler.go): "token_type" always "Bearer",
// "token_use" "access_token" or "refresh_token", "iss" the issuer URL
// with its trailing slash; a refresh token is active, with the access
// token's aud, whatever token_type_hint says.
type hydraAdmin struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string]string // by token; others are inactive
	calls   int
}

func newHydraAdmin(t *testing.T) *hydraAdmin {
	t.Helper()
	h := &hydraAdmin{answers: map[string]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/admin/oauth2/introspect" {
			http.NotFound(w, r)
			return
		}
		h.mu.Lock()
		h.calls++
		h.mu.Unlock()
		if err := r.ParseForm(); err != nil {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		for _, p := range []string{"client_id", "client_secret", "client_assertion", "client_assertion_type"} {
			if r.PostForm.Has(p) {
				http.Error(w, `{"error":"invalid_request","error_description":"no client authentication here: `+p+`"}`, http.StatusBadRequest)
				return
			}
		}
		if r.Header.Get("Authorization") != "" {
			http.Error(w, `{"error":"invalid_request","error_description":"no client authentication here"}`, http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		answer, ok := h.answers[r.PostForm.Get("token")]
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		if !ok {
			_, _ = io.WriteString(w, `{"active":false}`+"\n")
			return
		}
		_, _ = io.WriteString(w, answer+"\n")
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hydraAdmin) issuer() string   { return h.URL + "/" }
func (h *hydraAdmin) endpoint() string { return h.URL + "/admin/oauth2/introspect" }

// hydraAudience is the aud Hydra grants the test's tokens.
const hydraAudience = "https://api.example.test"

// answer registers token with Hydra's answer for a token of use
// ("access_token" or "refresh_token"), living ttl, with scope; extra
// members are added to it or, given null, dropped.
func (h *hydraAdmin) answer(token, use string, ttl time.Duration, sc string, extra map[string]any) {
	now := time.Now().Unix()
	m := map[string]any{
		"active": true, "scope": sc, "client_id": "reporting", "sub": "reporting",
		"exp": now + int64(ttl/time.Second), "iat": now, "nbf": now,
		"aud": []string{hydraAudience}, "iss": h.issuer(), "token_type": "Bearer", "token_use": use,
	}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers[token] = string(b)
}

func (h *hydraAdmin) introspector(t *testing.T, edit func(*accesstoken.Config)) *accesstoken.Validator {
	t.Helper()
	cfg := accesstoken.Config{
		Issuer: h.issuer(), Audience: []string{hydraAudience},
		Introspection: &accesstoken.Introspection{Endpoint: h.endpoint(), Unauthenticated: true, CacheBytes: -1},
	}
	if edit != nil {
		edit(&cfg)
	}
	v, err := accesstoken.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestIntrospectorRefusesHydraRefreshTokens: against Hydra's admin
// endpoint as it answers, a route takes the access token and refuses the
// refresh token, which Hydra calls active with the access token's aud
// and scope (issue 32): 401 invalid_token "token type is not an access
// token".
func TestIntrospectorRefusesHydraRefreshTokens(t *testing.T) {
	h := newHydraAdmin(t)
	const access, refresh = "ory_at_access-token-of-the-test", "ory_rt_refresh-token-of-the-test"
	h.answer(access, "access_token", time.Hour, scope.AdminWebAPI, nil)
	h.answer(refresh, "refresh_token", 30*24*time.Hour, "offline_access "+scope.AdminWebAPI, nil)
	api := httptest.NewServer(middleware.RequireBearer(h.introspector(t, nil))(middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		_, _ = io.WriteString(w, c.ClientID)
	}))))
	t.Cleanup(api.Close)
	call := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/webapi/api/v3/demo/Admin/Users", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := call(access); status != 200 || body != "reporting" {
		t.Fatalf("the access token: %d %s", status, body)
	}
	status, body := call(refresh)
	if status != 401 || !strings.Contains(body, `"error_description":"token type is not an access token"`) {
		t.Fatalf("the refresh token: %d %s", status, body)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls != 2 {
		t.Fatalf("%d calls to the endpoint, want 2", h.calls)
	}
}

// TestIntrospectorAnswerKinds: what each server says of a token's kind.
// An answer that names a refresh or ID token is refused with ErrType, and
// so is a token_type that names no kind known here (an allow-list); one
// that names an access token, or a scheme, is taken; one that says
// nothing (panva's oidc-provider and Spring Authorization Server leave
// token_type out of a refresh token's answer, and give it no aud) is
// refused by the audience, and taken with AnyAudience, as the godoc says.
func TestIntrospectorAnswerKinds(t *testing.T) {
	h := newHydraAdmin(t)
	strict := h.introspector(t, nil)
	anyAud := h.introspector(t, func(c *accesstoken.Config) { c.Audience, c.AnyAudience = nil, true })
	for i, c := range []struct {
		name  string
		extra map[string]any
		want  error
	}{
		{"Hydra, access_token", nil, nil},
		{"Hydra, refresh_token", map[string]any{"token_use": "refresh_token"}, accesstoken.ErrType},
		{"token_use id_token", map[string]any{"token_use": "id_token"}, accesstoken.ErrType},
		{"token_use a number", map[string]any{"token_use": 1}, accesstoken.ErrType},
		{"token_use null", map[string]any{"token_use": nil}, nil},
		{"IdentityServer, access_token", map[string]any{"token_use": nil, "token_type": "access_token"}, nil},
		{"IdentityServer, refresh_token", map[string]any{"token_use": nil, "token_type": "refresh_token"}, accesstoken.ErrType},
		{"RFC 8693's refresh token", map[string]any{"token_use": nil, "token_type": "urn:ietf:params:oauth:token-type:refresh_token"}, accesstoken.ErrType},
		{"RFC 8693's access token", map[string]any{"token_use": nil, "token_type": "urn:ietf:params:oauth:token-type:access_token"}, nil},
		{"an ID token", map[string]any{"token_use": nil, "token_type": "ID_TOKEN"}, accesstoken.ErrType},
		{"oidc-provider before v4, client_credentials", map[string]any{"token_use": nil, "token_type": "client_credentials"}, nil},
		{"token_type DPoP", map[string]any{"token_use": nil, "token_type": "DPoP"}, nil},
		{"token_type bearer, lower case", map[string]any{"token_use": nil, "token_type": "bearer"}, nil},
		{"token_type Access-Token", map[string]any{"token_use": nil, "token_type": "Access-Token"}, nil},
		{"a server's own JWT claim, access", map[string]any{"token_use": nil, "token_type": "access"}, nil},
		{"a server's own JWT claim, refresh", map[string]any{"token_use": nil, "token_type": "refresh"}, accesstoken.ErrType},
		{"RFC 8693's N_A: not an access token", map[string]any{"token_use": nil, "token_type": "N_A"}, accesstoken.ErrType},
		{"a name known nowhere", map[string]any{"token_use": nil, "token_type": "urn:ietf:params:oauth:token-type:jwt"}, accesstoken.ErrType},
		{"token_type an array", map[string]any{"token_use": nil, "token_type": []string{"Bearer"}}, accesstoken.ErrType},
		{"Keycloak, Bearer", map[string]any{"token_use": nil, "typ": "Bearer"}, nil},
		{"Keycloak, Refresh", map[string]any{"token_use": nil, "typ": "Refresh"}, accesstoken.ErrType},
		{"Keycloak, Offline", map[string]any{"token_use": nil, "typ": "Offline"}, accesstoken.ErrType},
		{"Keycloak, ID", map[string]any{"token_use": nil, "typ": "ID"}, accesstoken.ErrType},
		{"oidc-provider, a refresh token: nothing said, no aud", map[string]any{"token_use": nil, "token_type": nil, "aud": nil}, accesstoken.ErrAudience},
	} {
		tok := fmt.Sprintf("token-%d", i)
		h.answer(tok, "access_token", time.Hour, scope.AdminWebAPI, c.extra)
		_, err := strict.Validate(context.Background(), tok, accesstoken.Presentation{})
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want == accesstoken.ErrAudience {
			if _, err := anyAud.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
				t.Errorf("%s, AnyAudience: %v, want it taken (the case the godoc warns of)", c.name, err)
			}
		}
	}
}

// TestIntrospectorUnknownTokenTypeIsLogged: a token_type that names no
// kind known here refuses the token, as a refresh token's does, and the
// log names it, so that the operator of a server that calls its access
// tokens so learns why every token is refused; a refresh token's name is
// refused without a line, and no line holds the token.
func TestIntrospectorUnknownTokenTypeIsLogged(t *testing.T) {
	h := newHydraAdmin(t)
	logs, logger := testlog.New()
	v := h.introspector(t, func(c *accesstoken.Config) { c.Logger = logger })
	const unknown, refresh = "token-of-an-unknown-kind", "token-of-a-refresh-kind"
	h.answer(unknown, "access_token", time.Hour, scope.AdminWebAPI, map[string]any{"token_use": nil, "token_type": "Jwt-Access"})
	h.answer(refresh, "access_token", time.Hour, scope.AdminWebAPI, map[string]any{"token_use": nil, "token_type": "Refresh"})
	if _, err := v.Validate(context.Background(), refresh, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrType) {
		t.Fatalf("a refresh token's name: %v", err)
	}
	if logs.String() != "" {
		t.Fatalf("a refresh token's name was logged: %s", logs.String())
	}
	if _, err := v.Validate(context.Background(), unknown, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrType) {
		t.Fatalf("a name known nowhere: %v", err)
	}
	if got := logs.String(); !strings.Contains(got, `token_type \"Jwt-Access\"`) || strings.Contains(got, unknown) {
		t.Fatalf("the log of a name known nowhere: %s", got)
	}
}

// TestIntrospectorUnauthenticated: an endpoint that takes no client
// authentication is called with none when the config says so, and only
// then: a config without ClientSecret or Key and without Unauthenticated
// is refused at construction, as is Unauthenticated beside a credential
// or Local; a ClientID given with it is sent as client_id.
func TestIntrospectorUnauthenticated(t *testing.T) {
	h := newHydraAdmin(t)
	h.answer("tok", "access_token", time.Hour, scope.AdminWebAPI, nil)
	c, err := h.introspector(t, nil).Validate(context.Background(), "tok", accesstoken.Presentation{})
	if err != nil || c.ClientID != "reporting" || !c.Scopes.Has(scope.AdminWebAPI) {
		t.Fatalf("Unauthenticated: %+v %v", c, err)
	}
	withID := h.introspector(t, func(c *accesstoken.Config) { c.Introspection.ClientID = "my-api" })
	if _, err := withID.Validate(context.Background(), "tok", accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
		t.Fatalf("Unauthenticated with a ClientID, which this endpoint refuses: %v", err)
	}
	base := accesstoken.Config{Issuer: h.issuer(), Audience: []string{hydraAudience}}
	for name, edit := range map[string]func(*accesstoken.Config){
		"no credential":             func(*accesstoken.Config) {},
		"a ClientID, no credential": func(c *accesstoken.Config) { c.Introspection.ClientID = "my-api" },
		"Unauthenticated and a secret": func(c *accesstoken.Config) {
			c.Introspection.Unauthenticated, c.Introspection.ClientID, c.Introspection.ClientSecret = true, "my-api", "s"
		},
		"Unauthenticated and a key": func(c *accesstoken.Config) {
			c.Introspection.Unauthenticated, c.Introspection.ClientID, c.Introspection.Key = true, "my-api", apiKey()
		},
		"Unauthenticated and Local": func(c *accesstoken.Config) {
			c.Introspection.Unauthenticated, c.Introspection.Endpoint, c.Introspection.Local = true, "", newRefIssuer(t).iss
		},
		"Unauthenticated, no audience":    func(c *accesstoken.Config) { c.Introspection.Unauthenticated, c.Audience = true, nil },
		"Unauthenticated, no issuer":      func(c *accesstoken.Config) { c.Introspection.Unauthenticated, c.Issuer = true, "" },
		"a secret, no ClientID, no Local": func(c *accesstoken.Config) { c.Introspection.ClientSecret = "s" },
	} {
		cfg := base
		cfg.Introspection = &accesstoken.Introspection{Endpoint: h.endpoint()}
		edit(&cfg)
		if _, err := accesstoken.New(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
