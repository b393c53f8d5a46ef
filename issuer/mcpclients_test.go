package issuer_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/idsauth/idsauth/issuer"
)

// TestMCPClients: with MCPClients the metadata lists what the MCP SDKs'
// clients require (an authorization endpoint, PKCE's S256), still only
// the client_credentials grant, and the endpoint refuses every request
// with unsupported_response_type, never redirecting; without it the
// document lists neither and the path is not served.
func TestMCPClients(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := newServer(t, func(c *issuer.Config) { c.MCPClients = on })
		s.Config.Handler.(*http.ServeMux).Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler())
		for _, url := range []string{s.issuerURL() + "/.well-known/openid-configuration", s.URL + "/.well-known/oauth-authorization-server/ids"} {
			a := do(t, mustRequest(t, http.MethodGet, url))
			authz, pkce := a.body["authorization_endpoint"], stringList(a.body["code_challenge_methods_supported"])
			switch {
			case on && (authz != s.issuerURL()+"/connect/authorize" || !slices.Equal(pkce, []string{"S256"})):
				t.Errorf("MCPClients: %s: authorization_endpoint %v, code_challenge_methods_supported %v", url, authz, pkce)
			case !on && (authz != nil || pkce != nil):
				t.Errorf("without MCPClients: %s lists %v and %v", url, authz, pkce)
			}
			if g := stringList(a.body["grant_types_supported"]); !slices.Equal(g, []string{"client_credentials"}) {
				t.Errorf("grant_types_supported %v", g)
			}
		}
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			r := mustRequest(t, method, s.issuerURL()+"/connect/authorize?response_type=code&client_id=x&redirect_uri=https%3A%2F%2Fevil.example%2F&code_challenge=abc&code_challenge_method=S256")
			a := do(t, r)
			switch {
			case on && (a.status != 400 || a.body["error"] != "unsupported_response_type" || a.header.Get("Location") != "" || a.header.Get("Cache-Control") != "no-store"):
				t.Errorf("MCPClients: %s /connect/authorize: %d %s %v", method, a.status, a.raw, a.header)
			case !on && a.status != 404:
				t.Errorf("without MCPClients: %s /connect/authorize: %d", method, a.status)
			}
		}
	}
}
