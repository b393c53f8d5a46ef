package issuer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

const (
	refSecret     = "reference-secret"
	adminAPISec   = "admin-api-secret"
	connectAPISec = "connect-api-secret"
)

// withReference adds the client "ref" (pd_AdminWebApi), whose tokens are
// reference tokens, and two API resources: admin-api (pd_AdminWebApi) and
// connect-api (pd_ConnectWebApi).
func withReference(c *issuer.Config) {
	c.Clients = append(c.Clients,
		issuer.ClientConfig{ClientID: "ref", SecretHashes: []string{secret.HashSHA256(refSecret).String()},
			Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference", AccessTokenLifetime: 600 * time.Second},
		issuer.ClientConfig{ClientID: "ref2", SecretHashes: []string{secret.HashSHA256(refSecret).String()},
			Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference"})
	c.APIResources = []issuer.APIResourceConfig{
		{Name: "admin-api", SecretHashes: []string{secret.HashSHA256(adminAPISec).String()}, Scopes: []string{scope.AdminWebAPI}},
		{Name: "connect-api", SecretHashes: []string{secret.HashSHA256(connectAPISec).String()}, Scopes: []string{scope.ConnectWebAPI}},
	}
}

func (s *server) introspectURL() string { return s.URL + "/ids/connect/introspect" }
func (s *server) revocationURL() string { return s.URL + "/ids/connect/revocation" }

// referenceToken gets a token for client id with x/oauth2.
func referenceToken(t *testing.T, s *server, id, pass string, scopes ...string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: id, ClientSecret: pass, TokenURL: s.tokenURL(), Scopes: scopes}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

func introspect(t *testing.T, s *server, api, pass, token string) answer {
	t.Helper()
	return post(t, s.introspectURL(), formType, form("token", token), "Authorization", basic(api, pass))
}

// TestReferenceTokenLifecycle: a reference token is opaque, introspects
// active with its fields for the API whose scope it carries, inactive
// for another API, and inactive once its client has revoked it.
func TestReferenceTokenLifecycle(t *testing.T) {
	s := newServer(t, withReference)
	tok := referenceToken(t, s, "ref", refSecret, scope.AdminWebAPI)
	if strings.Count(tok, ".") != 0 || len(tok) < 43 {
		t.Fatalf("not an opaque handle of 256 bits: %q", tok)
	}
	a := introspect(t, s, "admin-api", adminAPISec, tok)
	if a.status != http.StatusOK || a.body["active"] != true {
		t.Fatalf("introspection: %d %s", a.status, a.raw)
	}
	for name, want := range map[string]any{"scope": scope.AdminWebAPI, "client_id": "ref", "iss": s.issuerURL(), "token_type": "Bearer"} {
		if a.body[name] != want {
			t.Errorf("%s = %v, want %v", name, a.body[name], want)
		}
	}
	exp, _ := a.body["exp"].(float64)
	iat, _ := a.body["iat"].(float64)
	if exp-iat != 600 || a.body["nbf"] != a.body["iat"] {
		t.Errorf("times: iat %v nbf %v exp %v", a.body["iat"], a.body["nbf"], a.body["exp"])
	}
	if jti, _ := a.body["jti"].(string); len(jti) < 20 {
		t.Errorf("jti %q", jti)
	}
	if aud, _ := a.body["aud"].([]any); len(aud) != 1 || aud[0] != s.issuerURL()+"/resources" {
		t.Errorf("aud %v", a.body["aud"])
	}
	if got := introspect(t, s, "connect-api", connectAPISec, tok); got.status != 200 || got.raw != `{"active":false}`+"\n" {
		t.Fatalf("another API's introspection: %d %q", got.status, got.raw)
	}
	// Another client cannot revoke it.
	if r := post(t, s.revocationURL(), formType, form("token", tok), "Authorization", basic("admin", adminSecret)); r.status != 200 {
		t.Fatalf("revocation by another client: %d %s", r.status, r.raw)
	}
	if a := introspect(t, s, "admin-api", adminAPISec, tok); a.body["active"] != true {
		t.Fatal("another client's revocation revoked it")
	}
	if r := post(t, s.revocationURL(), formType, form("token", tok, "token_type_hint", "access_token"), "Authorization", basic("ref", refSecret)); r.status != 200 || r.raw != "" {
		t.Fatalf("revocation: %d %q", r.status, r.raw)
	}
	if a := introspect(t, s, "admin-api", adminAPISec, tok); a.raw != `{"active":false}`+"\n" {
		t.Fatalf("after revocation: %s", a.raw)
	}
}

// TestIntrospectionOfJWTs: this issuer's JWTs introspect too, with the
// same filtering; a JWT's revocation answers 200 and changes nothing.
func TestIntrospectionOfJWTs(t *testing.T) {
	s := newServer(t, withReference)
	jwt := referenceToken(t, s, "connect", connectSecret, scope.ConnectWebAPI, scope.AdminWebAPI)
	if strings.Count(jwt, ".") != 2 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	a := introspect(t, s, "connect-api", connectAPISec, jwt)
	if a.body["active"] != true || a.body["scope"] != scope.ConnectWebAPI || a.body["client_id"] != "connect" {
		t.Fatalf("connect-api: %s", a.raw)
	}
	if a := introspect(t, s, "admin-api", adminAPISec, jwt); a.body["active"] != true || a.body["scope"] != scope.AdminWebAPI {
		t.Fatalf("admin-api sees only its scope: %s", a.raw)
	}
	if r := post(t, s.revocationURL(), formType, form("token", jwt), "Authorization", basic("connect", connectSecret)); r.status != 200 {
		t.Fatalf("revoking a JWT: %d %s", r.status, r.raw)
	}
	if a := introspect(t, s, "connect-api", connectAPISec, jwt); a.body["active"] != true {
		t.Fatal("a JWT's revocation changed its introspection")
	}
	// A tampered JWT is inactive.
	tampered := jwt[:len(jwt)-4] + "AAAA"
	if tampered == jwt {
		tampered = jwt[:len(jwt)-4] + "BBBB"
	}
	if a := introspect(t, s, "connect-api", connectAPISec, tampered); a.raw != `{"active":false}`+"\n" {
		t.Fatalf("tampered: %s", a.raw)
	}
}

// TestIntrospectionRefusals: the inactive answer is exactly
// {"active":false} for every token that is not live; a wrong API secret
// is 401 invalid_client, with no hint, and spends the same failure
// budgets as a client's; a missing token is 400.
func TestIntrospectionRefusals(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withReference(c)
		c.Limits.FailedAttemptsPerSubject = 3
	})
	for name, tok := range map[string]string{
		"unknown":    "x8Qm4n2Zk1Vb7Tc5Yd3Wf9Hg6Jh0Lk2Pn4Rs6Tu8Vw",
		"empty":      "",
		"malformed":  "a.b.c",
		"over 8 KiB": strings.Repeat("A", 10000),
	} {
		if a := introspect(t, s, "admin-api", adminAPISec, tok); a.status != 200 || a.raw != `{"active":false}`+"\n" {
			t.Errorf("%s: %d %q", name, a.status, a.raw)
		}
	}
	if a := post(t, s.introspectURL(), formType, "", "Authorization", basic("admin-api", adminAPISec)); a.status != 400 || a.body["error"] != "invalid_request" {
		t.Errorf("no token: %d %s", a.status, a.raw)
	}
	if a := do(t, mustRequest(t, http.MethodGet, s.introspectURL())); a.status != 405 {
		t.Errorf("GET: %d", a.status)
	}
	tok := referenceToken(t, s, "ref", refSecret, scope.AdminWebAPI)
	// connect-api has not yet given its right secret from this address.
	for i := range 3 {
		a := introspect(t, s, "connect-api", "wrong-"+string(rune('a'+i)), tok)
		if a.status != 401 || a.body["error"] != "invalid_client" || a.body["error_description"] != "client authentication failed" || strings.Contains(a.raw, "active") {
			t.Fatalf("wrong secret %d: %d %s", i, a.status, a.raw)
		}
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "introspection request refused") || !strings.Contains(logs, "connect-api") || strings.Contains(logs, "wrong-a") {
		t.Fatalf("the refusals are not logged as the API's, or the secret is: %s", logs)
	}
	// The API's budget is spent, and this address never gave its right
	// secret: even the right secret waits. admin-api, which did, is not
	// locked out by connect-api's failures.
	if a := introspect(t, s, "admin-api", adminAPISec, tok); a.body["active"] != true {
		t.Fatalf("admin-api: %d %s", a.status, a.raw)
	}
	if a := introspect(t, s, "connect-api", connectAPISec, tok); a.status != 429 || a.body["error"] != "slow_down" {
		t.Fatalf("after the budget: %d %s", a.status, a.raw)
	}
	// A client of the same name would keep its own budget; a client is
	// no API resource.
	if a := introspect(t, s, "ref", refSecret, tok); a.status != 401 {
		t.Fatalf("a client introspected: %d %s", a.status, a.raw)
	}
}

// TestReferenceStoreFull: a client that holds its share of the token
// store (a quarter) gets no more tokens (503 temporarily_unavailable,
// logged once however often it asks), the other clients still get theirs,
// and no live token is forgotten.
func TestReferenceStoreFull(t *testing.T) {
	store := &tokenstore.Memory{MaxBytes: 8 << 10}
	s := newServer(t, withReference, issuer.WithTokenStore(store))
	ask := func(id string) answer {
		return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic(id, refSecret))
	}
	var live []string
	refused := 0
	for range 100 {
		a := ask("ref")
		if a.status == http.StatusServiceUnavailable {
			if a.body["error"] != "temporarily_unavailable" || a.header.Get("Retry-After") == "" {
				t.Fatalf("full: %s", a.raw)
			}
			refused++
			continue
		}
		if a.status != 200 {
			t.Fatalf("%d %s", a.status, a.raw)
		}
		live = append(live, a.body["access_token"].(string))
	}
	if len(live) == 0 || refused == 0 {
		t.Fatalf("%d tokens issued, %d refused: the share was never reached", len(live), refused)
	}
	if n := strings.Count(s.logs.String(), "no reference token issued: the client holds its share"); n != 1 {
		t.Errorf("the share logged at Error %d times for %d refusals, want 1: %s", n, refused, s.logs.String())
	}
	if a := ask("ref2"); a.status != 200 {
		t.Fatalf("another client, while ref holds its share: %d %s", a.status, a.raw)
	}
	for _, tok := range live {
		if a := introspect(t, s, "admin-api", adminAPISec, tok); a.body["active"] != true {
			t.Fatal("a live token was forgotten")
		}
	}
	// The discovery document lists both endpoints.
	d := do(t, mustRequest(t, http.MethodGet, s.issuerURL()+"/.well-known/openid-configuration"))
	if d.body["introspection_endpoint"] != s.introspectURL() || d.body["revocation_endpoint"] != s.revocationURL() {
		t.Fatalf("discovery: %s", d.raw)
	}
}

// FuzzIntrospectionRequest sends arbitrary form bodies and Authorization
// values to the introspection and revocation endpoints. They must answer
// with no 5xx and Cache-Control: no-store, never echo a secret or the
// token, answer about a token only to the right API secret (an active
// answer only for the live token), and let nobody but its client revoke
// the live token.
func FuzzIntrospectionRequest(f *testing.F) {
	cfg := testConfig("http://127.0.0.1/ids")
	withReference(cfg)
	cfg.Limits = limit.Config{FailedAttemptsPerSubject: 1 << 30, FailedAttemptsPerAddress: 1 << 30}
	iss, err := issuer.New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	iss.ServeHTTP(rec, formRequest("token", form("grant_type", "client_credentials", "client_id", "ref", "client_secret", refSecret, "scope", scope.AdminWebAPI)))
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || answer.AccessToken == "" {
		f.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	live := answer.AccessToken
	for _, path := range []string{"introspect", "revocation"} {
		f.Add(path, form("token", live), basic("admin-api", adminAPISec))
		f.Add(path, form("token", live, "client_id", "admin-api", "client_secret", adminAPISec), "")
		f.Add(path, form("token", live, "token", live), basic("connect-api", connectAPISec))
		f.Add(path, form("token", live, "client_id", "ref", "client_secret", adminAPISec), basic("ref", refSecret))
		f.Add(path, "token=%zz", "Basic !!!")
		f.Add(path, form("token", "a.b.c", "token_type_hint", "refresh_token"), basic("admin", adminSecret))
		f.Add(path, strings.Repeat("token=x&", 3000), "")
	}
	f.Fuzz(func(t *testing.T, path, body, authz string) {
		if path != "introspect" {
			path = "revocation"
		}
		req := formRequest(path, body)
		if authz != "" {
			req.Header["Authorization"] = []string{authz}
		}
		rec := httptest.NewRecorder()
		iss.ServeHTTP(rec, req)
		out := rec.Body.String()
		switch {
		case rec.Code >= 500:
			t.Fatalf("status %d", rec.Code)
		case rec.Header().Get("Cache-Control") != "no-store":
			t.Fatal("no Cache-Control: no-store")
		case strings.Contains(out, live) || strings.Contains(out, refSecret) || strings.Contains(out, adminAPISec) || strings.Contains(out, adminSecret):
			t.Fatalf("the answer echoes a token or a secret: %q", out)
		}
		if path == "introspect" && rec.Code == 200 {
			if !holds(body, authz, adminAPISec) && !holds(body, authz, connectAPISec) {
				t.Fatalf("an answer without an API secret: %q", out)
			}
			if out != `{"active":false}`+"\n" && !strings.Contains(out, `"active":true`) {
				t.Fatalf("neither inactive nor active: %q", out)
			}
		}
		// The live token stays live unless its own client asked.
		check := httptest.NewRecorder()
		iss.ServeHTTP(check, formRequest("introspect", form("token", live, "client_id", "admin-api", "client_secret", adminAPISec)))
		if !strings.Contains(check.Body.String(), `"active":true`) {
			if !holds(body, authz, refSecret) {
				t.Fatalf("the live token was revoked by %q %q", body, authz)
			}
			t.Skip("its client revoked it: the rest of this run would prove nothing")
		}
	})
}

// formRequest is a form POST to the issuer's endpoint at path.
func formRequest(path, body string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ids/connect/"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// holds reports whether a request with body and authz carries secret, in
// the form or in Basic credentials: the fuzz target's question "could this
// request have authenticated?".
func holds(body, authz, secret string) bool {
	if u, err := url.QueryUnescape(body); err == nil && strings.Contains(u, secret) || strings.Contains(body, secret) {
		return true
	}
	if len(authz) < 6 || !strings.EqualFold(authz[:6], "Basic ") { // the scheme is case-insensitive
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(authz[6:])
	if err != nil {
		return false
	}
	u, err := url.QueryUnescape(string(raw))
	return strings.Contains(string(raw), secret) || err == nil && strings.Contains(u, secret)
}
