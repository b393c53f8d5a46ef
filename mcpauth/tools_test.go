package mcpauth_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestCalledTools: the tools a body calls, read as broadly as any
// decoder might: a spelling that one SDK's decoder would take as a call
// of a tool must never pass the tool's scope check here.
func TestCalledTools(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       []string
		ok         bool
	}{
		{"a call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,{"name":"b"}]}}}`, []string{"a"}, true},
		{"params first", `{"params":{"arguments":{},"name":"a"},"method":"tools/call","id":1,"jsonrpc":"2.0"}`, []string{"a"}, true},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a"}}`, nil, true},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, nil, true},
		{"a batch", `[{"method":"tools/call","params":{"name":"a"}},{"method":"tools/list"},{"method":"tools/call","params":{"name":"b"}},{"method":"tools/call","params":{"name":"a"}}]`, []string{"a", "b"}, true},
		{"a batch of scalars", `[1,"x",[{"method":"tools/call","params":{"name":"a"}}]]`, nil, true},
		// Go's encoding/json takes the last of two members and matches a
		// name in any case: a decoder may take either member.
		{"method twice", `{"method":"tools/call","method":"tools/list","params":{"name":"a"}}`, []string{"a"}, true},
		{"method in another case after it", `{"method":"tools/call","Method":"tools/list","params":{"name":"a"}}`, []string{"a"}, true},
		{"Method alone", `{"METHOD":"tools/call","PARAMS":{"NAME":"a"}}`, []string{"a"}, true},
		{"name twice", `{"method":"tools/call","params":{"name":"a","name":"b","Name":"c"}}`, []string{"a", "b", "c"}, true},
		{"params twice", `{"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}`, []string{"a", "b"}, true},
		// encoding/json folds "ſ" (U+017F) to "s" and "K" (U+212A) to
		// "k", as strings.EqualFold does.
		{"params with a long s beside", `{"method":"tools/call","params":{"name":"a"},"paramſ":{"name":"b"}}`, []string{"a", "b"}, true},
		{"params with a long s, no name", `{"method":"tools/call","params":{"name":"a"},"paramſ":{"x":1}}`, []string{"a"}, true},
		{"an escape", `{"method":"tools\/call","params":{"name":"a"}}`, []string{"a"}, true},
		{"a name that is no string", `{"method":"tools/call","params":{"name":7}}`, nil, true},
		{"not JSON", `{"method":"tools/call",`, nil, false},
		{"two messages", `{"method":"tools/list"}{"method":"tools/call","params":{"name":"a"}}`, nil, false},
		{"a scalar", `"tools/call"`, nil, true},
	} {
		got, ok := mcpauth.CalledTools([]byte(c.body))
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestToolScopes: a call of a tool needs one of its scopes, answered as
// RequireScope answers (403 insufficient_scope naming them); the body
// reaches the endpoint as it came; a body that is not JSON, or larger
// than MaxBodyBytes, does not.
func TestToolScopes(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	srv := httptest.NewServer(nil)
	defer srv.Close()
	var got []byte
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := mcpauth.New(ctx, mcpauth.Config{Resource: srv.URL + "/mcp", Issuer: iss.URL(), MaxBodyBytes: 1024,
		Validator:  iss.Validator(),
		ToolScopes: map[string][]string{"delete_user": {scope.AdminWebAPI}, "open_session": {scope.ConnectWebAPI, scope.AdminWebAPI}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = g.Handler(endpoint)
	connect := iss.Token(t, scope.ConnectWebAPI)
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	for _, c := range []struct {
		name, body string
		status     int
		challenge  string
	}{
		{"a tool of another scope", call("delete_user"), 403, `Bearer realm="idsauth", error="insufficient_scope", error_description="token lacks the scope this API requires", scope="pd_AdminWebApi", resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`},
		{"a tool of one of its scopes", call("open_session"), 200, ""},
		{"a tool named nowhere", call("echo"), 200, ""},
		{"a batch with a tool of another scope", "[" + call("open_session") + "," + call("delete_user") + "]", 403, ""},
		{"not JSON", `{"method":`, 400, ""},
		{"too large", call("echo") + strings.Repeat(" ", 1024), 413, ""},
	} {
		got = nil
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+connect)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.challenge != "" && resp.Header.Get("WWW-Authenticate") != c.challenge) {
			t.Errorf("%s: %d %q", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if (c.status == 200) != bytes.Equal(got, []byte(c.body)) {
			t.Errorf("%s: the endpoint got %q", c.name, got)
		}
	}
}

// TestNewRefuses: a Config that could not do what it says is an error.
func TestNewRefuses(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	v := iss.Validator()
	for name, cfg := range map[string]mcpauth.Config{
		"no resource":            {Issuer: iss.URL(), Validator: v},
		"a resource with query":  {Resource: "https://mcp.example.com/mcp?x=1", Issuer: iss.URL(), Validator: v},
		"a resource not http(s)": {Resource: "urn:example:mcp", Issuer: iss.URL(), Validator: v},
		"no issuer":              {Resource: "https://mcp.example.com/mcp", Validator: v},
		"metadata of one's own":  {Resource: "https://mcp.example.com/mcp", Issuer: iss.URL(), Validator: v, Bearer: mcpBearerWithScopes()},
		"a negative body bound":  {Resource: "https://mcp.example.com/mcp", Issuer: iss.URL(), Validator: v, MaxBodyBytes: -1},
		"an issuer not there":    {Resource: "https://mcp.example.com/mcp", Issuer: "http://127.0.0.1:1/ids"},
	} {
		if _, err := mcpauth.New(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func mcpBearerWithScopes() middleware.BearerConfig {
	return middleware.BearerConfig{ChallengeScopes: []string{scope.AdminWebAPI}}
}
