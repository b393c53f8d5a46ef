package issuer_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// profileConfig gives c the profile, the client "multi" (both scopes, two
// resource audiences, client claims) and the API resources admin-api and
// connect-api.
func profileConfig(profile string) func(*issuer.Config) {
	return func(c *issuer.Config) {
		withReference(c)
		c.Profile = profile
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "multi", SecretHashes: []string{secret.HashSHA256("multi-secret").String()},
			Scopes:   []string{scope.AdminWebAPI, scope.ConnectWebAPI},
			Audience: map[string][]string{"rfc": {ordersAPI, billingAPI}}[profile],
			Claims:   []issuer.ClientClaim{{Type: "tenant", Value: "acme"}, {Type: "role", Value: "a"}, {Type: "role", Value: "b"}},
		})
	}
}

// TestProfileTable: each row of IdentityServer's table (CONTRACT.md
// §2.1), under both profiles, over real HTTP: status, error, description
// and WWW-Authenticate as each profile answers.
func TestProfileTable(t *testing.T) {
	type want struct {
		status    int
		code      string
		desc      string // "" means none; "*" means any
		challenge bool   // a Basic WWW-Authenticate
	}
	rows := []struct {
		name       string
		body       string
		authz      string
		rfc, idsrv want
	}{
		{"unknown client", form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), basic("nobody", "x"),
			want{401, "invalid_client", "client authentication failed", true}, want{400, "invalid_client", "", false}},
		{"wrong secret", form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), basic("multi", "wrong"),
			want{401, "invalid_client", "client authentication failed", true}, want{400, "invalid_client", "", false}},
		{"wrong secret in the body", form("grant_type", "client_credentials", "client_id", "multi", "client_secret", "wrong-too"), "",
			want{401, "invalid_client", "client authentication failed", false}, want{400, "invalid_client", "", false}},
		{"no client credentials", form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "",
			want{401, "invalid_client", "no client credentials", false}, want{400, "invalid_request", "", false}},
		{"grant_type missing", form("scope", scope.AdminWebAPI), basic("multi", "multi-secret"),
			want{400, "invalid_request", "grant_type is missing", false}, want{400, "unsupported_grant_type", "", false}},
		{"more than one resource", form("grant_type", "client_credentials", "scope", scope.AdminWebAPI, "resource", ordersAPI, "resource", billingAPI), basic("multi", "multi-secret"),
			want{200, "", "", false}, want{400, "invalid_target", "Multiple resource indicators not supported on token endpoint.", false}},
		{"openid asked", form("grant_type", "client_credentials", "scope", "openid"), basic("multi", "multi-secret"),
			want{400, "invalid_scope", "*", false}, want{400, "invalid_scope", "*", false}},
		{"offline_access asked", form("grant_type", "client_credentials", "scope", scope.AdminWebAPI+" offline_access"), basic("multi", "multi-secret"),
			want{400, "invalid_scope", "*", false}, want{400, "invalid_scope", "*", false}},
		{"scope omitted", form("grant_type", "client_credentials"), basic("multi", "multi-secret"),
			want{400, "invalid_scope", "scope is missing", false}, want{200, "", "", false}},
	}
	for _, profile := range []string{"rfc", "identityserver"} {
		s := newServer(t, profileConfig(profile))
		for _, row := range rows {
			w := row.rfc
			if profile == "identityserver" {
				w = row.idsrv
			}
			var header []string
			if row.authz != "" {
				header = []string{"Authorization", row.authz}
			}
			a := post(t, s.tokenURL(), formType, row.body, header...)
			desc, hasDesc := a.body["error_description"]
			switch {
			case a.status != w.status:
				t.Errorf("%s, %s: status %d, want %d (%s)", profile, row.name, a.status, w.status, a.raw)
			case w.status != 200 && a.body["error"] != w.code:
				t.Errorf("%s, %s: error %v, want %s", profile, row.name, a.body["error"], w.code)
			case w.status != 200 && w.desc == "" && hasDesc:
				t.Errorf("%s, %s: error_description %q, want none", profile, row.name, desc)
			case w.status != 200 && w.desc != "" && w.desc != "*" && desc != w.desc:
				t.Errorf("%s, %s: error_description %q, want %q", profile, row.name, desc, w.desc)
			case w.challenge != (a.header.Get("WWW-Authenticate") != ""):
				t.Errorf("%s, %s: WWW-Authenticate %q", profile, row.name, a.header.Get("WWW-Authenticate"))
			case w.status != 200 && a.header.Get("Cache-Control") != "no-store":
				t.Errorf("%s, %s: no Cache-Control: no-store", profile, row.name)
			}
		}
	}
}

// TestProfileWithOAuth2Clients: x/oauth2's clientcredentials, as a client
// of the product writes it, sees each profile's answers to the rows it
// can send: status and error code, or a token.
func TestProfileWithOAuth2Clients(t *testing.T) {
	type outcome struct {
		status int    // 0: a token
		code   string // the RetrieveError's
	}
	rows := []struct {
		name       string
		id, secret string
		scopes     []string
		params     url.Values
		rfc, idsrv outcome
	}{
		{"unknown client", "nobody", "x", []string{scope.AdminWebAPI}, nil, outcome{401, "invalid_client"}, outcome{400, "invalid_client"}},
		{"wrong secret", "multi", "wrong", []string{scope.AdminWebAPI}, nil, outcome{401, "invalid_client"}, outcome{400, "invalid_client"}},
		{"scope omitted", "multi", "multi-secret", nil, nil, outcome{400, "invalid_scope"}, outcome{}},
		{"two resources", "multi", "multi-secret", []string{scope.AdminWebAPI}, url.Values{"resource": {ordersAPI, billingAPI}}, outcome{}, outcome{400, "invalid_target"}},
		{"openid", "multi", "multi-secret", []string{"openid"}, nil, outcome{400, "invalid_scope"}, outcome{400, "invalid_scope"}},
		{"the right secret", "multi", "multi-secret", []string{scope.AdminWebAPI}, nil, outcome{}, outcome{}},
	}
	for _, profile := range []string{"rfc", "identityserver"} {
		s := newServer(t, profileConfig(profile))
		for _, row := range rows {
			want := row.rfc
			if profile == "identityserver" {
				want = row.idsrv
			}
			cc := clientcredentials.Config{ClientID: row.id, ClientSecret: row.secret, TokenURL: s.tokenURL(), Scopes: row.scopes, EndpointParams: row.params, AuthStyle: oauth2.AuthStyleInHeader}
			tok, err := cc.Token(context.Background())
			var re *oauth2.RetrieveError
			switch {
			case want.status == 0 && (err != nil || tok.AccessToken == ""):
				t.Errorf("%s, %s: %v, want a token", profile, row.name, err)
			case want.status != 0 && (!errors.As(err, &re) || re.Response.StatusCode != want.status || re.ErrorCode != want.code):
				t.Errorf("%s, %s: %v, want %d %s", profile, row.name, err, want.status, want.code)
			}
		}
	}
}

// TestIdentityServerTokenShape: under the identityserver profile a token
// carries scope as an array, no sub, the client's claims prefixed
// client_, a jti of 32 hex digits, nbf = iat, and as aud the API
// resources of its scopes; under rfc, the RFC 9068 shape, with the client
// claims too.
func TestIdentityServerTokenShape(t *testing.T) {
	hexJTI := regexp.MustCompile(`^[0-9A-F]{32}$`)
	for _, profile := range []string{"identityserver", "rfc"} {
		s := newServer(t, profileConfig(profile))
		for _, asked := range []string{scope.AdminWebAPI, scope.AdminWebAPI + " " + scope.ConnectWebAPI} {
			a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", asked), "Authorization", basic("multi", "multi-secret"))
			if a.status != 200 {
				t.Fatalf("%s: %d %s", profile, a.status, a.raw)
			}
			var claims map[string]any
			decode(t, strings.Split(a.body["access_token"].(string), ".")[1], &claims)
			jti, _ := claims["jti"].(string)
			if claims["client_tenant"] != "acme" || len(claims["client_role"].([]any)) != 2 || claims["client_id"] != "multi" || claims["nbf"] != claims["iat"] {
				t.Errorf("%s: claims %v", profile, claims)
			}
			if profile == "rfc" {
				if claims["sub"] != "multi" || hexJTI.MatchString(jti) || claims["scope"] != asked {
					t.Errorf("rfc: claims %v", claims)
				}
				continue
			}
			_, hasSub := claims["sub"]
			scopes, isArray := claims["scope"].([]any)
			wantAud := "admin-api"
			if strings.Contains(asked, " ") {
				wantAud = "admin-api connect-api"
			}
			aud := claims["aud"]
			if list, ok := aud.([]any); ok {
				parts := make([]string, len(list))
				for i, v := range list {
					parts[i] = v.(string)
				}
				aud = strings.Join(parts, " ")
			}
			if hasSub || !isArray || len(scopes) != len(strings.Fields(asked)) || !hexJTI.MatchString(jti) || aud != wantAud {
				t.Errorf("identityserver, scope %q: claims %v", asked, claims)
			}
		}
	}
}

// TestAuthorizationServerMetadata: the RFC 8414 document answers at the
// host root with the issuer's path inserted, lists what discovery lists,
// and nothing answers under /ids.
func TestAuthorizationServerMetadata(t *testing.T) {
	s := newServer(t, nil)
	mux := s.Config.Handler.(*http.ServeMux)
	mux.Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler())
	md := do(t, mustRequest(t, http.MethodGet, s.URL+"/.well-known/oauth-authorization-server/ids"))
	disc := do(t, mustRequest(t, http.MethodGet, s.issuerURL()+"/.well-known/openid-configuration"))
	if md.status != 200 || md.raw != disc.raw || md.body["issuer"] != s.issuerURL() || md.body["token_endpoint"] != s.tokenURL() {
		t.Fatalf("RFC 8414: %d %s\ndiscovery: %s", md.status, md.raw, disc.raw)
	}
	for _, wrong := range []string{"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/other", "/ids/.well-known/oauth-authorization-server"} {
		if a := do(t, mustRequest(t, http.MethodGet, s.URL+wrong)); a.status != 404 {
			t.Errorf("%s: %d", wrong, a.status)
		}
	}
}

// TestIdentityServerDPoPRows: the table's DPoP rows under each profile:
// two DPoP headers, and a client that requires DPoP sending none.
func TestIdentityServerDPoPRows(t *testing.T) {
	for profile, want := range map[string][2][2]string{
		"rfc":            {{"invalid_dpop_proof", "more than one DPoP header"}, {"invalid_request", "this client must send a DPoP proof"}},
		"identityserver": {{"invalid_request", "Too many DPoP headers provided."}, {"invalid_request", "Client requires DPoP and a DPoP header value was not provided."}},
	} {
		s := newServer(t, func(c *issuer.Config) { withDPoP(c); c.Profile = profile })
		key := dpopKey(t)
		two := dpopToken(t, s, "admin", adminSecret, proofFor(t, key, s.tokenURL(), ""), proofFor(t, key, s.tokenURL(), ""))
		none := dpopToken(t, s, "bound", "bound-secret")
		for i, a := range []answer{two, none} {
			if a.status != 400 || a.body["error"] != want[i][0] || a.body["error_description"] != want[i][1] || a.header.Get("WWW-Authenticate") != "" {
				t.Errorf("%s, row %d: %d %s", profile, i, a.status, a.raw)
			}
		}
	}
}
