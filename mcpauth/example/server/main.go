// Command server is an MCP server protected by mcpauth: two tools of two
// scopes, list_users (pd_AdminWebApi) and open_session
// (pd_ConnectWebApi), which answer with the claims of the caller's
// token, at /mcp, with its protected resource metadata (RFC 9728).
//
//	go run ./example/server -addr 127.0.0.1:8090 -issuer http://127.0.0.1:8080/ids
//	go run ./example/server -sdk mcp-go ...      the same tools on mcp-go
//
// Its tokens come from the issuer (the example service's, say): they must
// name http://ADDR/mcp as their audience (RFC 8707), as an MCP client
// asks with "resource" (the example service's demo-mcp client may).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// tools are the server's tools and the scope each needs.
var tools = []struct{ name, scope, description string }{
	{"list_users", scope.AdminWebAPI, "Lists the users of the demo data source (needs pd_AdminWebApi)."},
	{"open_session", scope.ConnectWebAPI, "Opens a Connect session (needs pd_ConnectWebApi)."},
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address, host:port")
	issuer := flag.String("issuer", "http://127.0.0.1:8080/ids", "the issuer whose tokens the server takes")
	resource := flag.String("resource", "", "the MCP endpoint's public URL, the tokens' audience; empty: http://ADDR/mcp")
	sdk := flag.String("sdk", "go-sdk", "the MCP SDK that serves: go-sdk or mcp-go")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *issuer, *resource, *sdk, logger); err != nil {
		logger.Error("server stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, issuer, resource, sdk string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	origin := "http://" + ln.Addr().String()
	if resource == "" {
		resource = origin + "/mcp"
	}
	dpop, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: origin})
	if err != nil {
		return err
	}
	toolScopes := map[string][]string{}
	for _, t := range tools {
		toolScopes[t.name] = []string{t.scope}
	}
	guard, err := mcpauth.New(ctx, mcpauth.Config{
		Resource: resource, Issuer: issuer, ToolScopes: toolScopes,
		Bearer: middleware.BearerConfig{DPoP: dpop, Logger: logger},
	})
	if err != nil {
		return err
	}
	var endpoint http.Handler
	switch sdk {
	case "go-sdk":
		endpoint = guard.GoSDK(goSDKServer())
	case "mcp-go":
		endpoint = guard.Handler(mcpGoServer())
	default:
		return fmt.Errorf("-sdk %q: want go-sdk or mcp-go", sdk)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	mux.Handle("/.well-known/oauth-protected-resource/", guard.Metadata())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("MCP server (%s) at %s, tokens of %s\n", sdk, resource, issuer)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// answer is what a tool says: who called, with which scopes.
func answer(tool string, c *accesstoken.Claims, ok bool) string {
	if !ok {
		return tool + ": no token" // not reached behind the guard
	}
	return fmt.Sprintf("%s: called by %s with %s", tool, c.ClientID, c.Scopes)
}

func goSDKServer() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "idsauth-example", Version: "v1"}, nil)
	for _, t := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: t.name, Description: t.description}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			c, ok := mcpauth.Claims(req.Extra.TokenInfo)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(t.name, c, ok)}}}, nil, nil
		})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

func mcpGoServer() http.Handler {
	s := mcpgoserver.NewMCPServer("idsauth-example", "v1", mcpgoserver.WithToolCapabilities(false))
	for _, t := range tools {
		s.AddTool(mcpgo.NewTool(t.name, mcpgo.WithDescription(t.description)), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			c, ok := accesstoken.ClaimsFrom(ctx)
			return mcpgo.NewToolResultText(answer(t.name, c, ok)), nil
		})
	}
	return mcpgoserver.NewStreamableHTTPServer(s)
}
