package issuer_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// TestTokenEndpoint covers each row of CONTRACT.md §2.
func TestTokenEndpoint(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withMachineClients(c)
		c.Limits.FailedAttemptsPerSubject = 1000 // the rows fail often for signer
	})
	tu := s.tokenURL()
	signer, attacker := signerKey(), jwktest.NewKey(t, "ES256")
	assert := func(claims map[string]any, header ...any) string {
		h := map[string]any{}
		for i := 0; i+1 < len(header); i += 2 {
			h[header[i].(string)] = header[i+1]
		}
		return assertionFor(t, signer, "signer", tu, claims, h)
	}
	valid := assert(nil)
	now := time.Now()
	// hs256 is an assertion MACed with the signer's public key as the
	// secret: the algorithm-confusion attack.
	hs256 := func() string {
		pub, _ := json.Marshal(signer.PublicJWK())
		in := jwktest.Segment(map[string]any{"alg": "HS256", "kid": signer.KID}) + "." + strings.Split(assert(nil), ".")[1]
		mac := hmac.New(sha256.New, pub)
		mac.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	none := jwktest.Segment(map[string]any{"alg": "none"}) + "." + strings.Split(assert(nil), ".")[1] + "."
	// sameAsWrongSecret: an assertion failure answers exactly as a wrong
	// secret does.
	sameAsWrongSecret := func(t *testing.T, a answer) {
		if strings.TrimSpace(a.raw) != `{"error":"invalid_client","error_description":"client authentication failed"}` || a.header.Get("WWW-Authenticate") != "" {
			t.Errorf("answer %s %v differs from a wrong secret's", a.raw, a.header)
		}
	}
	audience := func(want ...string) func(t *testing.T, a answer) {
		return func(t *testing.T, a answer) {
			var claims struct{ Aud []string }
			decode(t, strings.Split(a.body["access_token"].(string), ".")[1], &claims)
			if strings.Join(claims.Aud, " ") != strings.Join(want, " ") {
				t.Errorf("aud = %v, want %v", claims.Aud, want)
			}
		}
	}
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
		{name: "a parameter spelled escaped and plain is given twice", contentType: formType, body: good + "&scop%65=" + scope.AdminWebAPI, status: 400, code: "invalid_request"},
		{name: "an unknown parameter is ignored", contentType: formType, body: good + "&audience=x&=&&", status: 200},
		{name: "an unknown parameter given twice is refused", contentType: formType, body: good + "&x=1&x=2", status: 400, code: "invalid_request"},
		{name: "a semicolon separator is refused", contentType: formType, body: strings.Replace(good, "&", ";", 1), status: 400, code: "invalid_request"},
		{name: "a bad percent-escape is refused", contentType: formType, body: good + "&x=%zz", status: 400, code: "invalid_request"},
		{name: "Basic that is not base64 is a Basic challenge", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", "Basic !!!"}, status: 401, code: "invalid_client",
			check: func(t *testing.T, a answer) {
				if got := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="`) {
					t.Errorf("WWW-Authenticate = %q", got)
				}
			}},
		{name: "Basic without a colon is a Basic challenge", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("admin"))}, status: 401, code: "invalid_client"},
		{name: "the Basic scheme in lower case", contentType: formType, body: form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header: []string{"Authorization", "basic " + strings.TrimPrefix(basic("admin", adminSecret), "Basic ")}, status: 200},
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
		{name: "scope missing, for a client set to get all its scopes", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "all", "client_secret", allSecret), status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["scope"] != scope.ConnectWebAPI+" "+scope.AdminWebAPI {
					t.Errorf("scope = %v, want every allowed scope", a.body["scope"])
				}
			}},
		{name: "an empty scope, for a client set to get all its scopes", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "all", "client_secret", allSecret, "scope", " "), status: 200},
		{name: "a scope asked for, for a client set to get all its scopes, is what it gets", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "all", "client_secret", allSecret, "scope", scope.AdminWebAPI), status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["scope"] != scope.AdminWebAPI {
					t.Errorf("scope = %v", a.body["scope"])
				}
			}},
		{name: "resource: the token is for that audience only", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI, "resource", ordersAPI), status: 200, check: audience(ordersAPI)},
		{name: "resource given twice: both, duplicates dropped", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI, "resource", billingAPI, "resource", ordersAPI, "resource", billingAPI), status: 200, check: audience(billingAPI, ordersAPI)},
		{name: "no resource: every audience of the client", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI), status: 200, check: audience(s.issuerURL()+"/resources", ordersAPI, billingAPI)},
		{name: "resource of the default audience, with a secret", contentType: formType, body: good + "&resource=" + url.QueryEscape(s.issuerURL()+"/resources"), status: 200, check: audience(s.issuerURL() + "/resources")},
		{name: "resource not allowed for the client", contentType: formType, body: good + "&resource=" + url.QueryEscape(ordersAPI), status: 400, code: "invalid_target"},
		{name: "one allowed resource and one not", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI, "resource", ordersAPI, "resource", "https://api.example/other"), status: 400, code: "invalid_target"},
		{name: "resource not an absolute URI", contentType: formType, body: good + "&resource=%2Fresources", status: 400, code: "invalid_target"},
		{name: "resource with a fragment", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI, "resource", ordersAPI+"#x"), status: 400, code: "invalid_target"},
		{name: "empty resource", contentType: formType, body: good + "&resource=", status: 400, code: "invalid_target"},
		{name: "private_key_jwt: a valid assertion gets a token", contentType: formType, body: assertionForm(valid, "scope", scope.AdminWebAPI), status: 200},
		{name: "private_key_jwt: the same assertion again is a replay", contentType: formType, body: assertionForm(valid, "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: PS256 by an inline JWK, aud an array with the issuer", contentType: formType, body: assertionForm(assertionFor(t, pssKey(), "pss", tu, map[string]any{"aud": []string{"https://elsewhere.example", s.issuerURL()}}, nil), "scope", scope.ConnectWebAPI), status: 200},
		{name: "private_key_jwt: with the same client_id in the body", contentType: formType, body: assertionForm(assert(nil), "client_id", "signer", "scope", scope.AdminWebAPI), status: 200},
		{name: "private_key_jwt: no kid in the header", contentType: formType, body: assertionForm(assert(nil, "kid", nil), "scope", scope.AdminWebAPI), status: 200},
		{name: "private_key_jwt: alg Ed25519 (RFC 9864) is EdDSA", contentType: formType, body: assertionForm(assertionFor(t, edKey(), "ed", tu, nil, map[string]any{"alg": "Ed25519"}), "scope", scope.AdminWebAPI), status: 200},
		{name: "private_key_jwt: EdDSA", contentType: formType, body: assertionForm(assertionFor(t, edKey(), "ed", tu, nil, nil), "scope", scope.AdminWebAPI), status: 200},
		{name: "private_key_jwt: a scope not allowed is invalid_scope after authentication", contentType: formType, body: assertionForm(assert(nil), "scope", scope.ConnectWebAPI), status: 400, code: "invalid_scope"},
		{name: "private_key_jwt: wrong aud", contentType: formType, body: assertionForm(assert(map[string]any{"aud": "https://elsewhere.example/token"}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: aud the issuer's resources", contentType: formType, body: assertionForm(assert(map[string]any{"aud": s.issuerURL() + "/resources"}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: no aud", contentType: formType, body: assertionForm(assert(map[string]any{"aud": nil}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: iss is not sub", contentType: formType, body: assertionForm(assert(map[string]any{"iss": "admin"}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: no iss", contentType: formType, body: assertionForm(assert(map[string]any{"iss": nil}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: expired", contentType: formType, body: assertionForm(assert(map[string]any{"iat": now.Add(-3 * time.Minute).Unix(), "exp": now.Add(-time.Minute).Unix()}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: exp an hour ahead", contentType: formType, body: assertionForm(assert(map[string]any{"exp": now.Add(time.Hour).Unix()}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: no exp", contentType: formType, body: assertionForm(assert(map[string]any{"exp": nil}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: exp a string", contentType: formType, body: assertionForm(assert(map[string]any{"exp": strconv.FormatInt(now.Add(time.Minute).Unix(), 10)}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: nbf in the future", contentType: formType, body: assertionForm(assert(map[string]any{"nbf": now.Add(2 * time.Minute).Unix(), "exp": now.Add(4 * time.Minute).Unix()}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: iat in the future", contentType: formType, body: assertionForm(assert(map[string]any{"iat": now.Add(2 * time.Minute).Unix()}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: no jti", contentType: formType, body: assertionForm(assert(map[string]any{"jti": nil}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: alg none", contentType: formType, body: assertionForm(none, "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: HS256 keyed with the client's public key", contentType: formType, body: assertionForm(hs256(), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: a key of another client", contentType: formType, body: assertionForm(assertionFor(t, pssKey(), "signer", tu, nil, nil), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: the client's kid, an attacker's key", contentType: formType, body: assertionForm(assertionFor(t, attacker, "signer", tu, nil, map[string]any{"kid": signer.KID}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: an unknown client", contentType: formType, body: assertionForm(assertionFor(t, attacker, "nobody", tu, nil, nil), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: a client with secrets only", contentType: formType, body: assertionForm(assertionFor(t, attacker, "admin", tu, nil, nil), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: a crit header", contentType: formType, body: assertionForm(assert(nil, "crit", []string{"exp"}), "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: not a JWT", contentType: formType, body: assertionForm("not.a-jwt", "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: another client_id in the body", contentType: formType, body: assertionForm(assert(nil), "client_id", "admin", "scope", scope.AdminWebAPI), status: 401, code: "invalid_client", check: sameAsWrongSecret},
		{name: "private_key_jwt: a secret and an assertion", contentType: formType, body: assertionForm(assert(nil), "client_id", "signer", "client_secret", "x", "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "private_key_jwt: Basic and an assertion", contentType: formType, body: assertionForm(assert(nil), "scope", scope.AdminWebAPI), header: []string{"Authorization", basic("admin", adminSecret)}, status: 400, code: "invalid_request"},
		{name: "private_key_jwt: another assertion type", contentType: formType, body: strings.Replace(assertionForm(assert(nil), "scope", scope.AdminWebAPI), "jwt-bearer", "saml2-bearer", 1), status: 400, code: "invalid_request"},
		{name: "private_key_jwt: an assertion type without an assertion", contentType: formType, body: form("grant_type", "client_credentials", "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "private_key_jwt: an assertion over 8 KiB", contentType: formType, body: assertionForm(assert(map[string]any{"pad": strings.Repeat("p", 8<<10)}), "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "private_key_jwt: sub over 100 characters", contentType: formType, body: assertionForm(assertionFor(t, attacker, strings.Repeat("s", 101), tu, nil, nil), "scope", scope.AdminWebAPI), status: 400, code: "invalid_request"},
		{name: "two scopes granted together, duplicates dropped", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", scope.ConnectWebAPI+" "+scope.AdminWebAPI+" "+scope.ConnectWebAPI), status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["scope"] != scope.ConnectWebAPI+" "+scope.AdminWebAPI || a.body["expires_in"] != float64(600) {
					t.Errorf("body = %v", a.body)
				}
			}},
		{name: "one scope asked twice, with tabs and spaces, is granted once", contentType: formType, body: form("grant_type", "client_credentials", "client_id", "connect", "client_secret", connectSecret, "scope", " "+scope.AdminWebAPI+"\t "+scope.AdminWebAPI+" "), status: 200,
			check: func(t *testing.T, a answer) {
				if a.body["scope"] != scope.AdminWebAPI {
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

// TestBodyBound: a body of exactly the bound is read, one byte more is
// refused, whether its length is declared or it comes chunked.
func TestBodyBound(t *testing.T) {
	s := newServer(t, nil)
	good := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI) + "&pad="
	for _, c := range []struct {
		size    int
		chunked bool
		status  int
	}{{16 << 10, false, 200}, {16<<10 + 1, false, 400}, {16 << 10, true, 200}, {16<<10 + 1, true, 400}} {
		body := good + strings.Repeat("x", c.size-len(good))
		var r io.Reader = strings.NewReader(body)
		if c.chunked {
			r = io.MultiReader(r) // no length known ahead: sent chunked
		}
		req, err := http.NewRequest(http.MethodPost, s.tokenURL(), r)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", formType)
		if c.chunked != (req.ContentLength <= 0) {
			t.Fatalf("chunked %v, ContentLength %d", c.chunked, req.ContentLength)
		}
		a := do(t, req)
		if a.status != c.status {
			t.Errorf("%d bytes, chunked %v: %d %s, want %d", c.size, c.chunked, a.status, a.raw, c.status)
		}
		if c.status == 400 && a.body["error_description"] != "request body larger than 16384 bytes" {
			t.Errorf("%d bytes, chunked %v: %s", c.size, c.chunked, a.raw)
		}
	}
}
