package idsauthtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/kit"
)

// MCPEndpoint is the MCP endpoint CheckMCP checks: its URL, and what its
// calls need.
type MCPEndpoint struct {
	// URL is the endpoint's canonical URL, such as
	// "http://127.0.0.1:8090/mcp": the resource of its metadata, and the
	// audience of the tokens CheckMCP mints (RFC 8707), which the
	// endpoint must check. Required.
	URL string
	// Scopes are the scopes every call needs, any one of them
	// (mcpauth.Config.Scopes). Empty: any valid token.
	Scopes []string
	// Tool is the name of a tool the endpoint serves; CheckMCP calls it.
	// Required.
	Tool string
	// ToolScopes are the scopes a call of Tool needs, any one of them
	// (mcpauth.Config.ToolScopes[Tool]), which must satisfy Scopes too.
	// Empty: Scopes.
	ToolScopes []string
}

// CheckMCP runs the contract's cases against an MCP endpoint served by
// h over streamable HTTP (MCP authorization), as CheckProtected does
// against an HTTP route, and reports with t.Errorf each case h answers
// wrongly. For an "initialize" request, and for a "tools/call" of
// e.Tool, each a JSON-RPC POST to e.URL: every case of CheckProtected
// (a token without the scope only where one is needed), its tokens
// naming e.URL as their audience; and on every 401, a challenge naming
// resource_metadata, whose document, asked of h, names e.URL as its
// resource and this issuer among its authorization servers. Mount the
// endpoint's metadata on h too (an mcpauth.Guard's Handler serves it),
// and give its guard a validator of this issuer's tokens for e.URL (an
// mcpauth.Config with this Issuer's URL and no Validator finds its keys
// by discovery).
func (i *Issuer) CheckMCP(t TB, h http.Handler, e MCPEndpoint) {
	t.Helper()
	u, err := url.Parse(e.URL)
	if err != nil || u.Host == "" || e.Tool == "" {
		t.Fatalf("idsauthtest: CheckMCP needs the endpoint's URL and a tool, got %q and %q", e.URL, e.Tool)
	}
	j := *i
	j.Audience = e.URL // the tokens are for the endpoint (RFC 8707)
	metadata := func(p *kit.Problems, a kit.Answer) {
		if a.Status != http.StatusUnauthorized {
			return
		}
		ch := strings.Join(a.Header.Values("WWW-Authenticate"), ", ")
		_, after, ok := strings.Cut(ch, `resource_metadata="`)
		mdURL, _, _ := strings.Cut(after, `"`)
		if !ok || mdURL == "" {
			p.Addf("WWW-Authenticate %q names no resource_metadata", ch)
			return
		}
		md, _ := kit.Handler{H: h}.Send(kit.Request{Method: http.MethodGet, Path: mdURL})
		var doc struct {
			Resource string   `json:"resource"`
			Servers  []string `json:"authorization_servers"`
		}
		if md.Status != http.StatusOK || json.Unmarshal([]byte(md.Body), &doc) != nil {
			p.Addf("resource_metadata %s: %d %q, want its JSON document", mdURL, md.Status, md.Body)
			return
		}
		if doc.Resource != e.URL || !slices.Contains(doc.Servers, i.URL()) {
			p.Addf("resource_metadata %s: resource %q, authorization_servers %q; want %q and %q", mdURL, doc.Resource, doc.Servers, e.URL, i.URL())
		}
	}
	call := func(body string) kit.Request {
		return kit.Request{Method: http.MethodPost, Path: e.URL, Body: body, Header: http.Header{
			"Content-Type": {"application/json"},
			"Accept":       {"application/json, text/event-stream"},
		}}
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idsauthtest","version":"1"}}}`
	tool, _ := json.Marshal(e.Tool)
	toolCall := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":` + string(tool) + `,"arguments":{}}}`
	need := e.ToolScopes
	if len(need) == 0 {
		need = e.Scopes
	}
	for _, c := range []struct {
		what string
		req  kit.Request
		need []string
	}{
		{"initialize", call(initialize), e.Scopes},
		{"tools/call " + e.Tool, call(toolCall), need},
	} {
		cases := kit.ProtectedRequest(tokens{&j, t}, kit.Handler{H: h}, c.req, c.need)
		for n := range cases {
			check := cases[n].Check
			cases[n].Check = func(p *kit.Problems, a kit.Answer) {
				check(p, a)
				metadata(p, a)
			}
		}
		report(t, h, "CheckMCP "+e.URL+" "+c.what, cases)
	}
}
