package issuer_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/eventtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/scope"
)

// TestEventsOfTheTokenEndpoint: every token request gives exactly one
// event, TokenIssued or TokenRefused, with the client ID only when it is
// registered and the limit that refused a 429; none holds a secret, a
// token, an unregistered client ID or an error_description. The refusal
// log, an observer fed by the same event, still logs each refusal once.
func TestEventsOfTheTokenEndpoint(t *testing.T) {
	rec := &eventtest.Recorder{}
	s := newServer(t, func(c *issuer.Config) {
		c.Limits = limit.Config{FailedAttemptsPerSubject: 2, FailedAttemptsPerAddress: 3, TrustedProxyHeader: "X-Forwarded-For"}
	}, issuer.WithObserver(rec))
	cc := func(kv ...string) string { return form(append([]string{"grant_type", "client_credentials"}, kv...)...) }
	long := strings.Repeat("m", 100+1)
	refused := func(status int, code, client string, limit string) observe.Event {
		return observe.Event{Kind: observe.TokenRefused, Status: status, Reason: code, ClientID: client, Limit: limit}
	}
	issued := func(client string, scopes ...string) observe.Event {
		return observe.Event{Kind: observe.TokenIssued, ClientID: client, Scopes: scopes}
	}
	cases := []struct {
		name, method, ctype, body, authz, addr string
		status                                 int
		want                                   observe.Event
	}{
		{"GET", "GET", "", "", "", "192.0.2.1", 405, refused(405, "invalid_request", "", "")},
		{"JSON body", "POST", "application/json", `{"grant_type":"client_credentials"}`, "", "192.0.2.1", 400, refused(400, "invalid_request", "", "")},
		{"parameter twice", "POST", formType, cc("scope", "a", "scope", "b"), "", "192.0.2.1", 400, refused(400, "invalid_request", "", "")},
		{"no grant_type", "POST", formType, form("client_id", "admin"), "", "192.0.2.1", 400, refused(400, "invalid_request", "", "")},
		{"password grant", "POST", formType, form("grant_type", "password", "username", "admin", "password", "hunter1"), "", "192.0.2.1", 400, refused(400, "unsupported_grant_type", "", "")},
		{"no credentials", "POST", formType, cc("scope", scope.AdminWebAPI), "", "192.0.2.1", 401, refused(401, "invalid_client", "", "")},
		{"Basic and a body secret", "POST", formType, cc("client_secret", "hunter1"), basic("admin", adminSecret), "192.0.2.1", 400, refused(400, "invalid_request", "", "")},
		{"over-long client_id", "POST", formType, cc("client_id", long, "client_secret", "x"), "", "192.0.2.1", 400, refused(400, "invalid_request", "", "")},
		{"unknown client", "POST", formType, cc("client_id", "mallory-<script>", "client_secret", "hunter3", "scope", scope.AdminWebAPI), "", "192.0.2.2", 401, refused(401, "invalid_client", "", "")},
		{"wrong secret", "POST", formType, cc("client_id", "admin", "client_secret", "hunter2", "scope", scope.AdminWebAPI), "", "192.0.2.3", 401, refused(401, "invalid_client", "admin", "")},
		{"grant not allowed", "POST", formType, cc("client_id", "codeonly", "client_secret", "x", "scope", scope.AdminWebAPI), "", "192.0.2.4", 400, refused(400, "unauthorized_client", "codeonly", "")},
		{"scope not allowed", "POST", formType, cc("scope", scope.ConnectWebAPI), basic("admin", adminSecret), "192.0.2.4", 400, refused(400, "invalid_scope", "admin", "")},
		{"issued", "POST", formType, cc("scope", scope.AdminWebAPI), basic("admin", adminSecret), "192.0.2.4", 200, issued("admin", scope.AdminWebAPI)},
		{"issued, two scopes", "POST", formType, cc("client_id", "connect", "client_secret", connectSecret, "scope", "pd_ConnectWebApi pd_AdminWebApi pd_ConnectWebApi"), "", "192.0.2.4", 200,
			issued("connect", scope.ConnectWebAPI, scope.AdminWebAPI)},
		{"another wrong secret", "POST", formType, cc("client_id", "admin", "client_secret", "hunter4", "scope", scope.AdminWebAPI), "", "192.0.2.3", 401, refused(401, "invalid_client", "admin", "")},
		{"client budget spent", "POST", formType, cc("client_id", "admin", "client_secret", "hunter5", "scope", scope.AdminWebAPI), "", "192.0.2.3", 429, refused(429, "slow_down", "admin", "client")},
		{"the first wrong secret repeated", "POST", formType, cc("client_id", "admin", "client_secret", "hunter2", "scope", scope.AdminWebAPI), "", "192.0.2.3", 401, refused(401, "invalid_client", "admin", "")},
	}
	for i := range 2 {
		cases = append(cases, struct {
			name, method, ctype, body, authz, addr string
			status                                 int
			want                                   observe.Event
		}{"unknown client " + strconv.Itoa(i), "POST", formType, cc("client_id", "mallory-"+strconv.Itoa(i), "client_secret", "hunter3", "scope", scope.AdminWebAPI), "", "192.0.2.2", 401, refused(401, "invalid_client", "", "")})
	}
	cases = append(cases, struct {
		name, method, ctype, body, authz, addr string
		status                                 int
		want                                   observe.Event
	}{"address budget spent", "POST", formType, cc("client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), "", "192.0.2.2", 429, refused(429, "slow_down", "admin", "address")})

	secrets := []string{adminSecret, connectSecret, "hunter1", "hunter2", "hunter3", "hunter4", "hunter5", "mallory", long}
	refusals := 0
	for _, c := range cases {
		req, err := http.NewRequest(c.method, s.tokenURL(), strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		req.Header.Set("X-Forwarded-For", c.addr)
		a := do(t, req)
		if a.status != c.status {
			t.Fatalf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.raw)
		}
		eventtest.Want(t, c.name, rec.Take(), c.want)
		if tok, ok := a.body["access_token"].(string); ok {
			secrets = append(secrets, tok)
		}
		if desc, ok := a.body["error_description"].(string); ok {
			secrets = append(secrets, desc)
			refusals++
		}
	}
	eventtest.Scan(t, rec.All(), []string{"admin", "connect", "codeonly"}, secrets...)
	if n := strings.Count(s.logs.String(), "token request refused"); n != refusals {
		t.Errorf("%d refusals, %d log lines:\n%s", refusals, n, s.logs.String())
	}
}
