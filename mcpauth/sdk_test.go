package mcpauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/scope"
)

// caller calls tools of an MCP endpoint through hc, as one SDK's client
// does: it connects (initialize), then calls each tool in turn.
type caller func(t *testing.T, url string, hc *http.Client, tools ...string) ([]string, error)

// goSDKClient is go-sdk's client over its streamable transport.
func goSDKClient(t *testing.T, url string, hc *http.Client, tools ...string) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "idsauth-test-client", Version: "v1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var out []string
	for _, tool := range tools {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool})
		if err != nil {
			return out, err
		}
		out = append(out, res.Content[0].(*mcp.TextContent).Text)
	}
	return out, nil
}

// mcpGoClient is mcp-go's client over its streamable transport.
func mcpGoClient(t *testing.T, url string, hc *http.Client, tools ...string) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	c, err := mcpgoclient.NewStreamableHttpClient(url, mcpgotransport.WithHTTPBasicClient(hc))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25" // what both SDKs speak
	init.Params.ClientInfo = mcpgo.Implementation{Name: "idsauth-test-client", Version: "v1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	var out []string
	for _, tool := range tools {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = tool
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return out, err
		}
		if res.IsError {
			return out, errors.New("tool error")
		}
		out = append(out, res.Content[0].(mcpgo.TextContent).Text)
	}
	return out, nil
}

// TestBothSDKs: each SDK's server behind the Guard, each SDK's client
// with mcpauth.Client, and each kind of credential and token: the client
// finds the issuer from the 401 alone, gets a token for the endpoint,
// and every tool's handler sees its claims; a tool of a scope the token
// lacks gets a token with it (step-up), or, when the client may not have
// it, the call fails.
func TestBothSDKs(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dpopKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]func(*world, *mcpauth.Guard){"go-sdk": (*world).serveGoSDK, "mcp-go": (*world).serveMCPGo}
	clients := map[string]caller{"go-sdk": goSDKClient, "mcp-go": mcpGoClient}
	for sname, serve := range servers {
		for cname, call := range clients {
			t.Run(sname+" server, "+cname+" client", func(t *testing.T) {
				w := newWorld(t, key)
				serve(w, w.guard(t, mcpauth.Config{Validator: w.referenceValidator(t)}))
				both := scope.AdminWebAPI + " " + scope.ConnectWebAPI
				for _, c := range []struct {
					name string
					cfg  client.Config
					want []string
					fail bool
				}{
					{"a secret, the challenge's scopes", client.Config{ClientID: "mcp-all", ClientSecret: "s3cret-mcp-all"},
						[]string{"whoami: mcp-all " + both, "list_users: mcp-all " + both, "open_session: mcp-all " + both}, false},
					{"a key", client.Config{ClientID: "mcp-key", Key: key},
						[]string{"whoami: mcp-key " + both, "list_users: mcp-key " + both, "open_session: mcp-key " + both}, false},
					{"DPoP", client.Config{ClientID: "mcp-dpop", ClientSecret: "s3cret-mcp-dpop", DPoPKey: dpopKey},
						[]string{"whoami: mcp-dpop " + both, "list_users: mcp-dpop " + both, "open_session: mcp-dpop " + both}, false},
					{"reference tokens", client.Config{ClientID: "mcp-ref", ClientSecret: "s3cret-mcp-ref"},
						[]string{"whoami: mcp-ref " + both, "list_users: mcp-ref " + both, "open_session: mcp-ref " + both}, false},
					{"one scope asked, the other stepped up", client.Config{ClientID: "mcp-all", ClientSecret: "s3cret-mcp-all", Scopes: []string{scope.AdminWebAPI}},
						[]string{"whoami: mcp-all " + scope.AdminWebAPI, "list_users: mcp-all " + scope.AdminWebAPI, "open_session: mcp-all " + both}, false},
					{"a scope the client may not have", client.Config{ClientID: "mcp-admin", ClientSecret: "s3cret-mcp-admin", Scopes: []string{scope.AdminWebAPI}},
						[]string{"whoami: mcp-admin " + scope.AdminWebAPI, "list_users: mcp-admin " + scope.AdminWebAPI}, true},
				} {
					hc := mcpauth.Client(context.Background(), c.cfg)
					got, err := call(t, w.mcpURL, hc, toolNames...)
					if (err != nil) != c.fail || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
						t.Errorf("%s: %v\n got %q\nwant %q", c.name, err, got, c.want)
					}
				}
			})
		}
	}
}

// TestGoSDKsClientCredentials: go-sdk's own client-credentials handler
// finds this module's issuer from the Guard's 401 and gets a token it
// takes, once the issuer lists what go-sdk requires of any server
// (issuer.Config.MCPClients); without it, go-sdk refuses the issuer
// ("does not implement PKCE").
func TestGoSDKsClientCredentials(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{true, false} {
		w := newWorld(t, key, func(c *issuer.Config) { c.MCPClients = on })
		w.serveGoSDK(w.guard(t, mcpauth.Config{}))
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: "mcp-all", ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "s3cret-mcp-all"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client-credentials", Version: "v1"}, nil)
		sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.mcpURL, OAuthHandler: h, MaxRetries: -1}, nil)
		if !on {
			if err == nil || !strings.Contains(err.Error(), "does not implement PKCE") {
				t.Errorf("without MCPClients: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "list_users"})
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "list_users: mcp-all "+scope.AdminWebAPI+" "+scope.ConnectWebAPI {
			t.Errorf("%v %v", res, err)
		}
		sess.Close()
	}
}

// TestGoSDKSeesNoToken: the request go-sdk gets carries a stand-in for
// the caller's token, so that a tool cannot pass the token on (MCP
// forbids it), and the claims the Guard accepted.
func TestGoSDKSeesNoToken(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, key)
	g := w.guard(t, mcpauth.Config{})
	s := mcp.NewServer(&mcp.Implementation{Name: "idsauth-test", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		c, ok := mcpauth.Claims(req.Extra.TokenInfo)
		text := whoami("whoami", c, ok) + " | " + req.Extra.Header.Get("Authorization")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	w.mcp.Config.Handler = g.GoSDK(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	hc := mcpauth.Client(context.Background(), client.Config{ClientID: "mcp-all", ClientSecret: "s3cret-mcp-all", Scopes: []string{scope.AdminWebAPI}})
	got, err := goSDKClient(t, w.mcpURL, hc, "whoami")
	if err != nil || len(got) != 1 || !strings.HasPrefix(got[0], "whoami: mcp-all "+scope.AdminWebAPI+" | Bearer idsauth-") {
		t.Errorf("%v %q", err, got)
	}
}
