package accesstoken_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// The red-team pass over issue 32, item 2: a Validator's Introspection
// must take nothing but an access token's answer. These tests try the
// ways around it; each is a regression guard, those of the findings
// (F3, F4, F7) too, since they were fixed.

// rawEndpoint is an introspection endpoint on loopback that answers, for
// each token, the bytes the test gives, exactly (duplicate members and
// all), and records every request it gets.
type rawEndpoint struct {
	*httptest.Server
	mu       sync.Mutex
	answers  map[string]string
	calls    atomic.Int64
	requests []*http.Request // with PostForm parsed
}

func newRawEndpoint(t *testing.T) *rawEndpoint {
	t.Helper()
	e := &rawEndpoint{answers: map[string]string{}}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		_ = r.ParseForm()
		e.mu.Lock()
		e.requests = append(e.requests, r)
		answer, ok := e.answers[r.PostForm.Get("token")]
		e.mu.Unlock()
		if !ok {
			answer = `{"active":false}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(e.Close)
	return e
}

const rawAudience = "https://api.example.test"

func (e *rawEndpoint) set(token, answer string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answers[token] = answer
}

// config is a Validator's Config that introspects every token at e,
// with a secret.
func (e *rawEndpoint) config() accesstoken.Config {
	return accesstoken.Config{Issuer: e.URL, Audience: []string{rawAudience},
		Introspection: &accesstoken.Introspection{Endpoint: e.URL + "/introspect", ClientID: "my-api", ClientSecret: "api-secret"}}
}

// introspector is a Validator of e's config, edited by edit.
func (e *rawEndpoint) introspector(t *testing.T, edit func(*accesstoken.Introspection)) *accesstoken.Validator {
	t.Helper()
	cfg := e.config()
	if edit != nil {
		edit(cfg.Introspection)
	}
	v, err := accesstoken.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// activeAnswer is an active access token's answer with the members of
// kind (raw JSON members, each led by a comma) before and after the
// usual ones.
func activeAnswer(issuer, before, after string) string {
	exp := time.Now().Add(time.Hour).Unix()
	return fmt.Sprintf(`{"active":true%s,"scope":%q,"client_id":"reporting","aud":[%q],"iss":%q,"exp":%d%s}`,
		before, scope.AdminWebAPI, rawAudience, issuer, exp, after)
}

// TestRedTeamIntrospectorKindMembers: every way a kind member can come
// that introspection refuses today, and the access tokens it must go
// on taking. An answer naming a refresh token in token_use (any value but
// access_token), in token_type or typ (any case), a member of another
// JSON type than a string (a number, an array, an object, a boolean), and
// a member name written with a JSON escape (which is the same name) are
// refused with ErrType; null is absent; a scheme or access token's name
// is taken.
func TestRedTeamIntrospectorKindMembers(t *testing.T) {
	e := newRawEndpoint(t)
	in := e.introspector(t, func(c *accesstoken.Introspection) { c.CacheBytes = -1 })
	for i, c := range []struct {
		name    string
		members string
		refused bool
	}{
		{"token_use refresh_token", `,"token_use":"refresh_token"`, true},
		{"token_use Access_Token (not the exact name)", `,"token_use":"Access_Token"`, true},
		{"token_use access (Cognito's word)", `,"token_use":"access"`, true},
		{"token_use empty", `,"token_use":""`, true},
		{"token_use an object", `,"token_use":{"v":"access_token"}`, true},
		{"token_use true", `,"token_use":true`, true},
		{"token_use escaped name", `,"token\u005fuse":"refresh_token"`, true},
		{"token_type REFRESH_TOKEN", `,"token_type":"REFRESH_TOKEN"`, true},
		{"token_type urn refresh, upper case", `,"token_type":"URN:IETF:PARAMS:OAUTH:TOKEN-TYPE:REFRESH_TOKEN"`, true},
		{"token_type an object", `,"token_type":{"a":1}`, true},
		{"token_type a number", `,"token_type":7`, true},
		{"token_type escaped value", `,"token_type":"refresh\u005ftoken"`, true},
		{"typ OFFLINE", `,"typ":"OFFLINE"`, true},
		{"typ Logout", `,"typ":"Logout"`, true},
		{"typ Serialized-ID", `,"typ":"Serialized-ID"`, true},
		{"typ an array", `,"typ":["Bearer"]`, true},
		{"access token, Bearer and token_use", `,"token_type":"Bearer","token_use":"access_token"`, false},
		{"access token, typ at+jwt", `,"typ":"at+jwt"`, false},
		{"access token, token_type null", `,"token_type":null`, false},
		{"access token, no kind member", ``, false},
	} {
		tok := fmt.Sprintf("kind-%d", i)
		e.set(tok, activeAnswer(e.URL, c.members, ""))
		_, err := in.Validate(context.Background(), tok, accesstoken.Presentation{})
		switch {
		case c.refused && !errors.Is(err, accesstoken.ErrType):
			t.Errorf("%s: %v, want ErrType", c.name, err)
		case !c.refused && err != nil:
			t.Errorf("%s: %v, want it taken", c.name, err)
		}
	}
}

// TestRedTeamIntrospectorRefreshNamesItMisses (finding F3, fixed): names
// of a refresh (or ID) token that the kind check let through as an access
// token. The deny-lists were per member: "refresh" was refused in typ and
// not in token_type, "refresh_token" in token_type and not in typ;
// "refresh" is what many a server built on its own JWTs writes in
// token_type (the refresh token's own claim, copied into the answer as
// Keycloak copies typ), and "offline" likewise. Now token_type is held
// to an allow-list (Bearer, DPoP, PoP, access_token, its RFC 8693 URN,
// client_credentials, access), and typ to the one list of the other
// kinds' names.
func TestRedTeamIntrospectorRefreshNamesItMisses(t *testing.T) {
	e := newRawEndpoint(t)
	in := e.introspector(t, func(c *accesstoken.Introspection) { c.CacheBytes = -1 })
	for i, members := range []string{
		`,"token_type":"refresh"`,
		`,"token_type":"Refresh"`,
		`,"token_type":"refresh-token"`,
		`,"token_type":"offline"`,
		`,"token_type":"id"`,
		`,"typ":"refresh_token"`,
		`,"typ":"urn:ietf:params:oauth:token-type:refresh_token"`,
		`,"typ":"id_token"`,
		`,"token_type":"N_A"`,
		`,"token_type":"offline_access"`,
	} {
		tok := fmt.Sprintf("miss-%d", i)
		e.set(tok, activeAnswer(e.URL, members, ""))
		c, err := in.Validate(context.Background(), tok, accesstoken.Presentation{})
		switch {
		case err == nil:
			t.Errorf("%s: taken as an access token of %s", members[1:], c.ClientID)
		case !errors.Is(err, accesstoken.ErrType):
			t.Errorf("%s: %v, want ErrType", members[1:], err)
		}
	}
}

// TestRedTeamIntrospectorDuplicateMembers (finding F4, fixed): an answer
// that names a member twice was read last-wins, not necessarily as the
// server meant it: an answer with "active":false then "active":true, or
// with a refresh token's token_use then access_token, was taken. It needs
// an endpoint that writes such JSON (one that merges a token's stored
// claims into its answer, say); RFC 8259 leaves duplicate names' meaning
// open. An answer is read by jws.ReadClaims, as a JWT's claim set is: one
// with a duplicate member name is no introspection answer
// (ErrIntrospectionUnavailable).
func TestRedTeamIntrospectorDuplicateMembers(t *testing.T) {
	e := newRawEndpoint(t)
	in := e.introspector(t, func(c *accesstoken.Introspection) { c.CacheBytes = -1 })
	exp := time.Now().Add(time.Hour).Unix()
	for name, answer := range map[string]string{
		"active false, then true":  fmt.Sprintf(`{"active":false,"scope":%q,"aud":[%q],"exp":%d,"active":true}`, scope.AdminWebAPI, rawAudience, exp),
		"refresh, then access":     activeAnswer(e.URL, `,"token_use":"refresh_token"`, `,"token_use":"access_token"`),
		"typ Refresh, then Bearer": activeAnswer(e.URL, `,"typ":"Refresh"`, `,"typ":"Bearer"`),
		"aud of another, then ours": fmt.Sprintf(`{"active":true,"aud":["https://other.example"],"scope":%q,"exp":%d,"aud":[%q]}`,
			scope.AdminWebAPI, exp, rawAudience),
	} {
		tok := "dup-" + name
		e.set(tok, answer)
		if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
			t.Errorf("%s: %v, want ErrIntrospectionUnavailable", name, err)
		}
	}
}

// TestRedTeamIntrospectorRefusedKindIsNeverCached: a refresh token's
// answer is never cached, active or inactive: each validation asks again
// (a retry costs a call, as an unknown token's first does), concurrent
// ones share one call and all fail, and none of them makes the token
// pass later from the cache, nor makes an access token's answer fail.
func TestRedTeamIntrospectorRefusedKindIsNeverCached(t *testing.T) {
	e := newRawEndpoint(t)
	in := e.introspector(t, nil) // caches on
	e.set("refresh", activeAnswer(e.URL, `,"token_use":"refresh_token"`, ""))
	e.set("access", activeAnswer(e.URL, `,"token_use":"access_token"`, ""))
	for range 3 {
		if _, err := in.Validate(context.Background(), "refresh", accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrType) {
			t.Fatalf("refresh: %v", err)
		}
	}
	if n := e.calls.Load(); n != 3 {
		t.Fatalf("%d calls for 3 validations of a refused kind, want 3 (never cached)", n)
	}
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 16 {
		wg.Go(func() {
			if _, err := in.Validate(context.Background(), "refresh", accesstoken.Presentation{}); errors.Is(err, accesstoken.ErrType) {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if refused.Load() != 16 {
		t.Fatalf("%d of 16 concurrent validations refused", refused.Load())
	}
	before := e.calls.Load()
	for range 3 {
		if _, err := in.Validate(context.Background(), "access", accesstoken.Presentation{}); err != nil {
			t.Fatalf("access: %v", err)
		}
	}
	if n := e.calls.Load() - before; n != 1 {
		t.Fatalf("%d calls for an access token validated 3 times, want 1 (cached)", n)
	}
	// The endpoint now says the refresh token is an access token (the
	// server fixed, or lying): nothing cached stands in the way, and
	// nothing cached let it through before.
	e.set("refresh", `{"active":false}`)
	if _, err := in.Validate(context.Background(), "refresh", accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrInactive) {
		t.Fatalf("refresh, now inactive: %v", err)
	}
}

// TestRedTeamIntrospectorSendsOnlyWhatItIsTold: what goes on the wire. A
// config with a secret sends Basic and no client_id in the form; one with
// Unauthenticated and no ClientID sends no Authorization header and a
// form of token and token_type_hint alone; with a ClientID, client_id
// too, and still no secret. A config whose secret is empty is refused at
// construction, whatever else it says: Unauthenticated is never implied.
// An endpoint that redirects is not followed (the target gets nothing)
// and the token is refused.
func TestRedTeamIntrospectorSendsOnlyWhatItIsTold(t *testing.T) {
	e := newRawEndpoint(t)
	e.set("tok", activeAnswer(e.URL, "", ""))
	last := func() *http.Request {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.requests[len(e.requests)-1]
	}
	formKeys := func(r *http.Request) string { return strings.Join(slices.Sorted(maps.Keys(r.PostForm)), ",") }
	for _, c := range []struct {
		name      string
		edit      func(*accesstoken.Introspection)
		wantAuthz bool
		wantForm  string
	}{
		{"a secret", nil, true, "token,token_type_hint"},
		{"unauthenticated", func(c *accesstoken.Introspection) { c.ClientID, c.ClientSecret, c.Unauthenticated = "", "", true }, false, "token,token_type_hint"},
		{"unauthenticated with a ClientID", func(c *accesstoken.Introspection) { c.ClientSecret, c.Unauthenticated = "", true }, false, "client_id,token,token_type_hint"},
	} {
		in := e.introspector(t, func(cfg *accesstoken.Introspection) {
			cfg.CacheBytes = -1
			if c.edit != nil {
				c.edit(cfg)
			}
		})
		if _, err := in.Validate(context.Background(), "tok", accesstoken.Presentation{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := last()
		user, pass, basic := r.BasicAuth()
		switch {
		case basic != c.wantAuthz || (!c.wantAuthz && r.Header.Get("Authorization") != ""):
			t.Errorf("%s: Authorization %q, want one: %v", c.name, r.Header.Get("Authorization"), c.wantAuthz)
		case basic && (user != "my-api" || pass != "api-secret"):
			t.Errorf("%s: Basic %q %q", c.name, user, pass)
		case formKeys(r) != c.wantForm:
			t.Errorf("%s: form %s, want %s", c.name, formKeys(r), c.wantForm)
		case strings.Contains(r.PostForm.Encode(), "api-secret"):
			t.Errorf("%s: the secret in the form", c.name)
		}
	}
	for _, edit := range []func(*accesstoken.Introspection){
		func(c *accesstoken.Introspection) { c.ClientSecret = "" },
		func(c *accesstoken.Introspection) { c.ClientID, c.ClientSecret = "", "" },
		func(c *accesstoken.Introspection) { c.ClientSecret, c.Key = "", nil },
	} {
		cfg := e.config()
		edit(cfg.Introspection)
		if _, err := accesstoken.New(context.Background(), cfg); err == nil {
			t.Errorf("a config with empty credentials and no Unauthenticated was accepted: %+v", *cfg.Introspection)
		}
	}
	// A redirect is not followed, with credentials or without.
	var targetCalls atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		targetCalls.Add(1)
		_, _ = io.WriteString(w, activeAnswer(e.URL, "", ""))
	}))
	t.Cleanup(target.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/steal?"+url.Values{"from": {"x"}}.Encode(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	for _, unauth := range []bool{false, true} {
		in := e.introspector(t, func(c *accesstoken.Introspection) {
			c.Endpoint, c.CacheBytes = redirecting.URL, -1
			if unauth {
				c.ClientSecret, c.Unauthenticated = "", true
			}
		})
		if _, err := in.Validate(context.Background(), "tok", accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
			t.Errorf("redirected (unauthenticated %v): %v", unauth, err)
		}
	}
	if n := targetCalls.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

// TestRedTeamEndpointUserinfoIsACredential (finding F7, fixed): an
// introspection endpoint (or a JWKS URL) written with userinfo, as for an
// endpoint behind a proxy that takes Basic credentials
// ("https://api:secret@hydra.internal/admin/oauth2/introspect"), was
// logged as written on every failed call: the password reached the log,
// which no secret may. And with Unauthenticated, net/http turned that
// userinfo into an Authorization: Basic header: the "no client
// authentication" the config said was not what went on the wire. Every
// URL accesstoken fetches is now refused at construction if it holds
// userinfo, or does not parse: Introspection.Endpoint, JWKSConfig.URL,
// the issuer whose discovery document is read (Config.Issuer, one of
// Config.Issuers, JWKSConfig.Issuer), and the jwks_uri and
// introspection_endpoint that document names. The error names the field
// and holds nothing of the password; the server sees no request but the
// discovery document's, and no Authorization header at all.
func TestRedTeamEndpointUserinfoIsACredential(t *testing.T) {
	const password = "s3cr3t-userinfo-pass"
	var srv *httptest.Server
	withUserinfo := func(u string) string { return strings.Replace(u, "http://", "http://api:"+password+"@", 1) }
	var others, authz atomic.Int64 // requests but for discovery, and with an Authorization header
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			authz.Add(1)
		}
		if r.URL.Path != "/.well-known/openid-configuration" {
			others.Add(1)
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"introspection_endpoint":%q}`,
			srv.URL, withUserinfo(srv.URL)+"/jwks", withUserinfo(srv.URL)+"/introspect")
	}))
	t.Cleanup(srv.Close)
	set, err := accesstoken.ParseJWKS([]byte(`{"keys":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	logs, logger := testlog.New()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	aud := []string{rawAudience}
	newValidator := func(cfg accesstoken.Config) func() error {
		return func() error {
			cfg.Logger = logger
			_, err := accesstoken.New(ctx, cfg)
			return err
		}
	}
	newJWKS := func(cfg accesstoken.JWKSConfig) func() error {
		return func() error {
			cfg.Logger, cfg.RefreshInterval = logger, 10*time.Millisecond
			_, err := accesstoken.NewJWKS(ctx, cfg)
			return err
		}
	}
	for _, c := range []struct {
		name, field string
		make        func() error
	}{
		{"an unauthenticated introspection endpoint", "Config.Introspection.Endpoint", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud,
			Introspection: &accesstoken.Introspection{Endpoint: withUserinfo(srv.URL) + "/introspect", Unauthenticated: true}})},
		{"an introspection endpoint beside a secret", "Config.Introspection.Endpoint", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud, Keys: set,
			Introspection: &accesstoken.Introspection{Endpoint: withUserinfo(srv.URL) + "/introspect", ClientID: "my-api", ClientSecret: "api-secret"}})},
		{"a user name alone", "Config.Introspection.Endpoint", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud,
			Introspection: &accesstoken.Introspection{Endpoint: strings.Replace(srv.URL, "http://", "http://"+password+"@", 1), Unauthenticated: true}})},
		{"an endpoint that does not parse", "Config.Introspection.Endpoint", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud,
			Introspection: &accesstoken.Introspection{Endpoint: withUserinfo(srv.URL) + ":" + password + "/x", Unauthenticated: true}})},
		{"a JWKS URL", "JWKSConfig.URL", newJWKS(accesstoken.JWKSConfig{URL: withUserinfo(srv.URL) + "/jwks"})},
		{"a JWKS issuer", "JWKSConfig.Issuer", newJWKS(accesstoken.JWKSConfig{Issuer: withUserinfo(srv.URL)})},
		{"a validator's issuer, discovered", "Config.Issuer", newValidator(accesstoken.Config{Issuer: withUserinfo(srv.URL), Audience: aud})},
		{"a validator's issuer, its introspection endpoint discovered", "Config.Issuer", newValidator(accesstoken.Config{Issuer: withUserinfo(srv.URL), Audience: aud,
			Introspection: &accesstoken.Introspection{ClientID: "my-api", ClientSecret: "api-secret"}})},
		{"a validator's issuer, with keys", "Config.Issuer", newValidator(accesstoken.Config{Issuer: withUserinfo(srv.URL), Audience: aud, Keys: set})},
		{"one of Issuers", "Config.Issuers[1].Issuer", newValidator(accesstoken.Config{Issuers: []accesstoken.TrustedIssuer{
			{Issuer: srv.URL, Audience: aud, Keys: set}, {Issuer: withUserinfo(srv.URL) + "/b", Audience: aud}}})},
		{"a jwks_uri the discovery names", "jwks_uri", newJWKS(accesstoken.JWKSConfig{Issuer: srv.URL})},
		{"a validator's jwks_uri the discovery names", "jwks_uri", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud})},
		{"an introspection_endpoint the discovery names", "introspection_endpoint", newValidator(accesstoken.Config{Issuer: srv.URL, Audience: aud,
			Introspection: &accesstoken.Introspection{ClientID: "my-api", ClientSecret: "api-secret"}})},
	} {
		err := c.make()
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case !strings.Contains(err.Error(), c.field) || strings.Contains(err.Error(), password):
			t.Errorf("%s: %q, want it to name %s and not the password", c.name, err, c.field)
		}
	}
	// Nothing was fetched that a refusal guards: no call, no key set.
	if n, a := others.Load(), authz.Load(); n != 0 || a != 0 {
		t.Errorf("%d requests beside discovery, %d with an Authorization header; want none", n, a)
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the log holds the password: %s", logs.String())
	}
}
