package mcpauth_test

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// hashOf is the configuration's hash of a secret.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + base64.StdEncoding.EncodeToString(sum[:])
}

// world is an authorization server (this module's issuer, at /ids, its
// RFC 8414 metadata at the host root) and an MCP endpoint at /mcp on
// another server, whose tokens name it as their audience.
type world struct {
	ids    *httptest.Server
	iss    *issuer.Issuer
	mcp    *httptest.Server
	mcpURL string
	key    crypto.Signer // mcp-key's
}

// The clients of the world's issuer, each allowed the MCP endpoint as
// its audience: mcp-all has both scopes, mcp-admin pd_AdminWebApi alone,
// mcp-key signs assertions, mcp-dpop must bind its tokens to a key,
// mcp-ref gets reference tokens. Every secret is "s3cret-" + the ID.
var worldClients = []string{"mcp-all", "mcp-admin", "mcp-key", "mcp-dpop", "mcp-ref"}

// newWorld starts the issuer and an MCP server with nothing mounted:
// serve mounts the endpoint.
func newWorld(t *testing.T, key crypto.Signer, opts ...func(*issuer.Config)) *world {
	t.Helper()
	ids, mcps := httptest.NewServer(nil), httptest.NewServer(nil)
	t.Cleanup(ids.Close)
	t.Cleanup(mcps.Close)
	return buildWorld(t, key, ids, mcps, opts...)
}

// buildWorld is newWorld on the servers given.
func buildWorld(t *testing.T, key crypto.Signer, ids, mcps *httptest.Server, opts ...func(*issuer.Config)) *world {
	t.Helper()
	w := &world{ids: ids, mcp: mcps, key: key}
	w.mcpURL = w.mcp.URL + "/mcp"
	cfg := &issuer.Config{Issuer: w.ids.URL + "/ids", EphemeralKey: true,
		APIResources: []issuer.APIResourceConfig{{Name: "mcp-api", SecretHashes: []string{hashOf("s3cret-api")}, Scopes: scope.All()}}}
	for _, id := range worldClients {
		c := issuer.ClientConfig{ClientID: id, Scopes: scope.All(), Audience: []string{w.mcpURL}}
		switch id {
		case "mcp-admin":
			c.Scopes = []string{scope.AdminWebAPI}
		case "mcp-key":
			c.PublicKeys = []issuer.ClientKeyConfig{{Key: key.Public()}}
		case "mcp-dpop":
			c.RequireDPoP = true
		case "mcp-ref":
			c.AccessTokenType = "reference"
		}
		if id != "mcp-key" {
			c.SecretHashes = []string{hashOf("s3cret-" + id)}
		}
		cfg.Clients = append(cfg.Clients, c)
	}
	for _, o := range opts {
		o(cfg)
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.iss = iss
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	mux.Handle("/.well-known/oauth-authorization-server/", iss.MetadataHandler())
	w.ids.Config.Handler = mux
	return w
}

// guard is the world's Guard for cfg, its Resource and Issuer filled
// in; the tools of serveGoSDK and serveMCPGo need their scopes.
func (w *world) guard(t *testing.T, cfg mcpauth.Config) *mcpauth.Guard {
	t.Helper()
	cfg.Resource, cfg.Issuer = w.mcpURL, w.iss.URL()
	if cfg.Bearer.DPoP == nil {
		d, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: w.mcp.URL})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Bearer.DPoP = d
	}
	if cfg.ToolScopes == nil {
		cfg.ToolScopes = map[string][]string{"list_users": {scope.AdminWebAPI}, "open_session": {scope.ConnectWebAPI}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := mcpauth.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// referenceValidator checks the world's JWTs and introspects its
// reference tokens, for the MCP endpoint's audience.
func (w *world) referenceValidator(t *testing.T) accesstoken.TokenValidator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer: w.iss.URL(), Audience: []string{w.mcpURL}, Keys: w.iss,
		Introspection: &accesstoken.Introspection{Endpoint: w.iss.URL() + "/connect/introspect", ClientID: "mcp-api", ClientSecret: "s3cret-api"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// whoami is what the tools answer: the client ID and scopes of the
// claims their handler found, and the tool's name.
func whoami(tool string, c *accesstoken.Claims, ok bool) string {
	if !ok {
		return tool + ": no claims"
	}
	return fmt.Sprintf("%s: %s %s", tool, c.ClientID, c.Scopes)
}

// toolNames are the tools of both servers: whoami needs no scope of its
// own, list_users pd_AdminWebApi, open_session pd_ConnectWebApi (the
// world's guard says so).
var toolNames = []string{"whoami", "list_users", "open_session"}

// serveGoSDK mounts a go-sdk server of the three tools behind g.GoSDK.
func (w *world) serveGoSDK(g *mcpauth.Guard) {
	s := mcp.NewServer(&mcp.Implementation{Name: "idsauth-test", Version: "v1"}, nil)
	for _, name := range toolNames {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			c, ok := mcpauth.Claims(req.Extra.TokenInfo)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: whoami(name, c, ok)}}}, nil, nil
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.GoSDK(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/", g.Metadata())
	w.mcp.Config.Handler = mux
}

// serveMCPGo mounts an mcp-go server of the three tools behind
// g.Handler.
func (w *world) serveMCPGo(g *mcpauth.Guard) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.Handler(mcpGoHandler()))
	mux.Handle("/.well-known/oauth-protected-resource/", g.Metadata())
	w.mcp.Config.Handler = mux
}

// mcpGoHandler is an mcp-go endpoint of the three tools, which answer
// whoami of the claims in their context.
func mcpGoHandler() http.Handler {
	s := mcpgoserver.NewMCPServer("idsauth-test", "v1", mcpgoserver.WithToolCapabilities(false))
	for _, name := range toolNames {
		s.AddTool(mcpgo.NewTool(name), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			c, ok := accesstoken.ClaimsFrom(ctx)
			return mcpgo.NewToolResultText(whoami(name, c, ok)), nil
		})
	}
	return mcpgoserver.NewStreamableHTTPServer(s)
}
