package mcpauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/scope"
)

// recorder is an idsauthtest.TB that keeps what a checker reports.
type recorder struct {
	*testing.T
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// kitEndpoint is an MCP endpoint at /mcp of a server whose handler is
// set afterwards, and what CheckMCP is told of it.
func kitEndpoint(t *testing.T) (*httptest.Server, idsauthtest.MCPEndpoint) {
	srv := httptest.NewServer(nil)
	t.Cleanup(srv.Close)
	return srv, idsauthtest.MCPEndpoint{URL: srv.URL + "/mcp", Tool: "list_users", ToolScopes: []string{scope.AdminWebAPI}}
}

// TestCheckMCP: the kit's checker passes an endpoint of either SDK
// behind the Guard, found by discovery from the issuer's URL alone.
func TestCheckMCP(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for name, mount := range map[string]func(*mcpauth.Guard) http.Handler{
		"go-sdk": func(g *mcpauth.Guard) http.Handler { return g.GoSDK(goSDKHandler()) },
		"mcp-go": func(g *mcpauth.Guard) http.Handler { return g.Handler(mcpGoHandler()) },
	} {
		t.Run(name, func(t *testing.T) {
			srv, e := kitEndpoint(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g, err := mcpauth.New(ctx, mcpauth.Config{Resource: e.URL, Issuer: iss.URL(), ToolScopes: map[string][]string{e.Tool: e.ToolScopes}})
			if err != nil {
				t.Fatal(err)
			}
			srv.Config.Handler = mount(g)
			iss.CheckMCP(t, srv.Config.Handler, e)
		})
	}
}

// TestCheckMCPFindsGoSDKsOwnCheck: the checker is not satisfied by
// go-sdk's RequireBearerToken with a golang-jwt verifier, as go-sdk's
// documentation writes one: plain-text refusals without error=, no
// audience, no scope per tool.
func TestCheckMCPFindsGoSDKsOwnCheck(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	srv, e := kitEndpoint(t)
	verifier := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		var claims struct {
			jwt.RegisteredClaims
			Scope string `json:"scope"`
		}
		if _, err := jwt.ParseWithClaims(token, &claims, func(tok *jwt.Token) (any, error) {
			kid, _ := tok.Header["kid"].(string)
			keys, err := iss.VerificationKeys(context.Background(), kid, "ES256")
			if err != nil {
				return nil, err
			}
			return keys[0], nil
		}, jwt.WithValidMethods([]string{"ES256"})); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{Scopes: strings.Fields(claims.Scope), Expiration: claims.ExpiresAt.Time}, nil
	}
	srv.Config.Handler = auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource/mcp"})(goSDKHandler())
	r := &recorder{T: t}
	iss.CheckMCP(r, srv.Config.Handler, e)
	for _, want := range []string{
		"initialize: no token: WWW-Authenticate",
		"initialize: an expired token: body",
		"initialize: a token for another audience: status 200, want 401",
		"tools/call list_users: a token without the route's scope: status 200, want 403",
	} {
		if !strings.Contains(strings.Join(r.errors, "\n"), want) {
			t.Errorf("the checker did not report %q; it reported:\n%s", want, strings.Join(r.errors, "\n"))
		}
	}
}

// goSDKHandler is a stateless go-sdk endpoint of the tools.
func goSDKHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "idsauth-kit", Version: "v1"}, nil)
	for _, name := range toolNames {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
}
