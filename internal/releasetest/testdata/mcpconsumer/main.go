// Command mcpconsumer is an MCP server and client built on the published
// mcpauth module, as a user builds them: go-sdk's server behind
// mcpauth's Guard, its tokens from idsauth's issuer, and go-sdk's client
// whose HTTP client is mcpauth.Client. TestPublishedModulesInstall
// builds it in a fresh module that says mcpauth's go line, against the
// modules in a file-based proxy. It prints what it saw, and exits 1 when
// something went wrong.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/scope"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcpconsumer:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()
	ids, api := httptest.NewServer(nil), httptest.NewServer(nil)
	defer ids.Close()
	defer api.Close()
	sum := sha256.Sum256([]byte("reporting-secret"))
	iss, err := issuer.New(&issuer.Config{Issuer: ids.URL + "/ids", EphemeralKey: true, Clients: []issuer.ClientConfig{{
		ClientID: "reporting", SecretHashes: []string{"sha256:" + base64.StdEncoding.EncodeToString(sum[:])},
		Scopes: []string{scope.AdminWebAPI}, Audience: []string{api.URL + "/mcp"},
	}}}, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	ids.Config.Handler = iss
	guard, err := mcpauth.New(ctx, mcpauth.Config{Resource: api.URL + "/mcp", Issuer: iss.URL(), Scopes: []string{scope.AdminWebAPI}})
	if err != nil {
		return err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpconsumer", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		c, _ := mcpauth.Claims(req.Extra.TokenInfo)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "whoami: " + c.ClientID}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", guard.GoSDK(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	mux.Handle("/.well-known/oauth-protected-resource/", guard.Metadata())
	api.Config.Handler = mux

	resp, err := http.Post(api.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(out, "mcp without a token: %d\n", resp.StatusCode)

	hc := mcpauth.Client(ctx, client.Config{ClientID: "reporting", ClientSecret: "reporting-secret", Issuer: iss.URL()})
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpconsumer-client", Version: "v1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: api.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "mcp with the client's token: %q\n", res.Content[0].(*mcp.TextContent).Text)
	return nil
}
