package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// startMCP serves, for each replica, an MCP endpoint (go-sdk's, stateless,
// behind mcpauth's Guard) at /r{i}/mcp whose validator introspects
// there: its tool "check" needs pd_ConnectWebApi; it takes DPoP and
// certificate-bound tokens, as the HTTP API does.
func (f *fleet) startMCP(t *testing.T) {
	t.Helper()
	mux := http.NewServeMux()
	f.mcp = f.tlsServer(t, mux, "mcp.seams.test")
	dp, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: f.mcp.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "seams", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "check"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "checked"}}}, nil, nil
	})
	endpoint := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	for i := range f.replicas {
		path := fmt.Sprintf("/r%d/mcp", i)
		g, err := mcpauth.New(t.Context(), mcpauth.Config{
			Resource: f.mcp.URL + path, Issuer: seamIssuer, Validator: f.introspecting(t, i),
			ToolScopes: map[string][]string{"check": {scope.ConnectWebAPI}},
			Bearer:     middleware.BearerConfig{DPoP: dp},
		})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle(path, g.GoSDK(endpoint))
	}
}

// callMCP calls the tool "check" of the MCP endpoint that introspects at
// replica i with tok, as callAPI calls the API.
func (f *fleet) callMCP(t *testing.T, i int, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	u := fmt.Sprintf("%s/r%d/mcp", f.mcp.URL, i)
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	cl.authorize(t, req, tok)
	var answer struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	switch st := f.do(t, &http.Client{Transport: f.transport(0, cl.cert)}, req, &answer); st {
	case http.StatusOK:
		if len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != "checked" {
			t.Fatalf("POST %s: 200 without the tool's answer: %+v", u, answer)
		}
		return ok
	case http.StatusUnauthorized:
		return dead
	case http.StatusForbidden:
		return noScope
	default:
		t.Fatalf("POST %s: %d", u, st)
		return ""
	}
}
