package issuer_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/scope"
)

// TestTokenEndpoint covers each row of CONTRACT.md §2.
func TestTokenEndpoint(t *testing.T) {
	s := newServer(t, nil)
	good := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)
	cases := []struct {
		name        string
		method      string
		contentType string
		body        string
		header      []string
		status      int
		code        string
		check       func(t *testing.T, a answer)
	}{
		{name: "GET is 405 with Allow: POST", method: http.MethodGet, status: 405, code: "invalid_request",
			check: func(t *testing.T, a answer) {
				if a.header.Get("Allow") != "POST" {
					t.Errorf("Allow = %q", a.header.Get("Allow"))
				}
			}},
		{name: "PUT is 405", method: http.MethodPut, contentType: formType, body: good, status: 405, code: "invalid_request"},
		{name: "JSON content type is refused", contentType: "application/json", body: `{"grant_type":"client_credentials"}`, status: 400, code: "invalid_request"},
		{name: "no content type is refused", body: good, status: 400, code: "invalid_request"},
		{name: "charset parameter is accepted", contentType: formType + ";charset=UTF-8", body: good, status: 200},
		{name: "body over 16 KiB is refused", contentType: formType, body: good + "&pad=" + strings.Repeat("x", 16<<10), status: 400, code: "invalid_request"},
		{name: "a parameter given twice is refused", contentType: formType, body: good + "&scope=" + scope.AdminWebAPI, status: 400, code: "invalid_request"},
		{name: "grant_type missing", contentType: formType, body: form("client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "grant_type password is unsupported", contentType: formType, body: form("grant_type", "password", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), status: 400, code: "unsupported_grant_type"},
		{name: "no client credentials", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), status: 401, code: "invalid_client",
			check: func(t *testing.T, a answer) {
				if a.header.Get("WWW-Authenticate") != "" {
					t.Errorf("no Basic challenge expected without Basic, got %q", a.header.Get("WWW-Authenticate"))
				}
			}},
		{name: "credentials in Basic and in the body", contentType: formType, body: good, header: []string{"Authorization", basic("admin", adminSecret)}, status: 400, code: "invalid_request"},
		{name: "the same client_id in the body beside Basic is one method", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 200},
		{name: "another client_id in the body beside Basic is refused", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "connect", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 400, code: "invalid_request"},
		{name: "a body client_secret beside Basic is refused", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 400, code: "invalid_request"},
		{name: "an empty body client_secret beside Basic is refused", contentType: formType, body: form("grant_type", "client_credentials", "client_secret", "", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 400, code: "invalid_request"},
		{name: "client_id over 100 characters", contentType: formType, body: form("grant_type", "client_credentials", "client_id", strings.Repeat("a", 101), "client_secret", "x", "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "client_id of 100 multi-byte characters is only unknown", contentType: formType, body: form("grant_type", "client_credentials", "client_id", strings.Repeat("é", 100), "client_secret", "x", "scope", scope.AdminWebAPI), status: 401, code: "invalid_client"},
		{name: "client_secret over 100 characters in Basic", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", strings.Repeat("s", 101))}, status: 400, code: "invalid_request"},
		{name: "scope over 300 characters", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", strings.Repeat(scope.AdminWebAPI+" ", 21)), status: 400, code: "invalid_request"},
		{name: "unknown client", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "nobody", "client_secret", adminSecret, "scope", scope.AdminWebAPI), status: 401, code: "invalid_client"},
		{name: "wrong secret", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", "wrong", "scope", scope.AdminWebAPI), status: 401, code: "invalid_client"},
		{name: "wrong secret over Basic gets a Basic challenge", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", "wrong")}, status: 401, code: "invalid_client",
			check: func(t *testing.T, a answer) {
				if got := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="`) {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}},
		{name: "client not allowed client_credentials", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "codeonly", "client_secret", "x", "scope", scope.AdminWebAPI), status: 400, code: "unauthorized_client"},
		{name: "scope missing", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret), status: 400, code: "invalid_scope"},
		{name: "unknown scope", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", "pd_Everything"), status: 400, code: "invalid_scope"},
		{name: "scope not allowed for the client", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.ConnectWebAPI), status: 400, code: "invalid_scope"},
		{name: "one allowed and one not allowed scope", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI+" "+scope.ConnectWebAPI), status: 400, code: "invalid_scope"},
		{name: "success in the body", contentType: formType, body: good, status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["token_type"] != "Bearer" || a.body["expires_in"] != float64(3600) || a.body["scope"] != scope.AdminWebAPI {
					t.Errorf("body = %v", a.body)
				}
				if tok, _ := a.body["access_token"].(string); strings.Count(tok, ".") != 2 {
					t.Errorf("access_token = %q", tok)
				}
			}},
		{name: "success over Basic with a secret holding : % + /", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 200},
		{name: "two scopes granted together, duplicates dropped", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", scope.ConnectWebAPI+" "+scope.AdminWebAPI+" "+scope.ConnectWebAPI), status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["scope"] != scope.ConnectWebAPI+" "+scope.AdminWebAPI || a.body["expires_in"] != float64(600) {
					t.Errorf("body = %v", a.body)
				}
			}},
	}
	var issued []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequestWithContext(context.Background(), method, s.tokenURL(), strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			for i := 0; i+1 < len(c.header); i += 2 {
				req.Header.Add(c.header[i], c.header[i+1])
			}
			a := do(t, req)
			if a.status != c.status {
				t.Fatalf("status = %d, want %d; body %s", a.status, c.status, a.raw)
			}
			if a.header.Get("Content-Type") != "application/json" || a.header.Get("Cache-Control") != "no-store" || a.header.Get("Pragma") != "no-cache" {
				t.Errorf("headers = %v", a.header)
			}
			if c.code != "" {
				if a.body["error"] != c.code {
					t.Errorf("error = %v, want %q", a.body["error"], c.code)
				}
				if d, _ := a.body["error_description"].(string); d == "" {
					t.Errorf("no error_description")
				}
			}
			if strings.Contains(a.raw, adminSecret) || strings.Contains(a.raw, connectSecret) {
				t.Errorf("answer echoes a secret: %s", a.raw)
			}
			if tok, ok := a.body["access_token"].(string); ok {
				issued = append(issued, tok)
			}
			if c.check != nil {
				c.check(t, a)
			}
		})
	}
	if logs := s.logs.String(); strings.Contains(logs, adminSecret) || strings.Contains(logs, "wrong") || strings.Contains(logs, connectSecret) {
		t.Errorf("log holds a secret:\n%s", logs)
	}
	wantIssued := 0
	for _, c := range cases {
		if c.status == 200 {
			wantIssued++
		}
	}
	if len(issued) != wantIssued {
		t.Fatalf("%d tokens issued, want %d", len(issued), wantIssued)
	}
	for _, tok := range issued {
		for _, part := range strings.Split(tok, ".") {
			if strings.Contains(s.logs.String(), part) {
				t.Fatalf("log holds part of a token")
			}
		}
	}
	if n := strings.Count(s.logs.String(), "token request refused"); n < 15 {
		t.Errorf("only %d refusals logged; the log check above saw too little", n)
	}
}
