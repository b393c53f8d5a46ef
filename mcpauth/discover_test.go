package mcpauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/mcpauth"
)

// TestDiscoveryRefuses: the client asks for no token, and says why, when
// the MCP server's metadata cannot be trusted to name the server the
// credentials go to.
func TestDiscoveryRefuses(t *testing.T) {
	var srv *httptest.Server
	docs := map[string]string{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="x", resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" && docs["redirect"] != "" {
			http.Redirect(w, r, strings.ReplaceAll(docs["redirect"], "SRV", srv.URL), http.StatusFound)
			return
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(strings.ReplaceAll(doc, "SRV", srv.URL)))
	}))
	defer srv.Close()
	for _, c := range []struct {
		name   string
		docs   map[string]string
		issuer string
		reason string
	}{
		{"no metadata", map[string]string{}, "", "no protected resource metadata"},
		{"another resource", map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"https://evil.example/mcp","authorization_servers":["SRV/ids"]}`}, "", "resource metadata names another resource"},
		{"no server", map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"SRV/mcp"}`}, "", "resource metadata names no authorization server"},
		{"another issuer", map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"SRV/mcp","authorization_servers":["SRV/ids"]}`}, "https://login.example.com/ids", "authorization server is not the configured issuer"},
		{"a server's metadata naming another issuer", map[string]string{
			"/.well-known/oauth-protected-resource/mcp":   `{"resource":"SRV/mcp","authorization_servers":["SRV/ids"]}`,
			"/.well-known/oauth-authorization-server/ids": `{"issuer":"https://evil.example/ids","token_endpoint":"https://evil.example/token"}`,
		}, "", "no authorization server metadata"},
		{"a token endpoint over plain http elsewhere", map[string]string{
			"/.well-known/oauth-protected-resource/mcp":   `{"resource":"SRV/mcp","authorization_servers":["SRV/ids"]}`,
			"/.well-known/oauth-authorization-server/ids": `{"issuer":"SRV/ids","token_endpoint":"http://as.example/token"}`,
		}, "", "an endpoint is neither https nor on loopback"},
		// Not followed, wherever it leads: here, to a document that would do.
		{"metadata redirected", map[string]string{"redirect": "SRV/elsewhere", "/elsewhere": `{"resource":"SRV/mcp","authorization_servers":["SRV/ids"]}`}, "", "no protected resource metadata"},
	} {
		clear(docs)
		for k, v := range c.docs {
			docs[k] = v
		}
		hc := mcpauth.Client(context.Background(), client.Config{ClientID: "c", ClientSecret: "s", Issuer: c.issuer})
		resp, err := hc.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{}`))
		var de *mcpauth.DiscoveryError
		if err == nil {
			resp.Body.Close()
		}
		if !errors.As(err, &de) || de.Reason != c.reason || de.Resource != srv.URL+"/mcp" {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
