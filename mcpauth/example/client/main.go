// Command client is an MCP client whose tokens come from mcpauth.Client:
// it connects to an MCP server, finds the authorization server from the
// server's 401 as the MCP specification says, gets a token by the
// client_credentials grant for the server (RFC 8707 resource), lists
// the tools and calls those named by -call.
//
//	IDSAUTH_CLIENT_SECRET=demo-mcp-secret go run ./example/client -url http://127.0.0.1:8090/mcp -client-id demo-mcp -call list_users
//	go run ./example/client -url URL -client-id ID -key key.pem          private_key_jwt
//	go run ./example/client -url URL -client-id ID -dpop-key dpop.pem    DPoP-bound tokens
//
// The credential flags are idsauth token's: the secret is read from
// -secret-file, else the environment variable named by -secret-env
// (IDSAUTH_CLIENT_SECRET by default), never from a flag. The MCP
// conformance suite runs it with the server's URL as its last argument
// and its credentials in MCP_CONFORMANCE_CONTEXT (client_id, and
// client_secret or an ES256 private_key_pem), which it reads when the
// flags give none.
package main

import (
	"bufio"
	"context"
	"crypto"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgotransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/mcpauth"
)

type calls []string

func (c *calls) String() string     { return strings.Join(*c, ",") }
func (c *calls) Set(v string) error { *c = append(*c, v); return nil }

func main() {
	url := flag.String("url", "", "the MCP endpoint's URL (or the last argument)")
	clientID := flag.String("client-id", "", "the client ID")
	scopes := flag.String("scope", "", "the scopes to ask for, space-separated (none: those the server's 401 names)")
	keyFile := flag.String("key", "", "authenticate with this PEM private key (private_key_jwt) instead of a secret; with -cert, the certificate's key")
	certFile := flag.String("cert", "", "present this PEM client certificate (mutual TLS, RFC 8705)")
	dpopKey := flag.String("dpop-key", "", "bind the tokens to this PEM private key (DPoP, RFC 9449)")
	secretFile := flag.String("secret-file", "", "read the client secret from the first line of this file")
	secretEnv := flag.String("secret-env", "IDSAUTH_CLIENT_SECRET", "read the client secret from this environment variable")
	issuer := flag.String("issuer", "", "send the credentials only to this authorization server (empty: the one the MCP server names)")
	sdk := flag.String("sdk", "go-sdk", "the MCP SDK that calls: go-sdk or mcp-go")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	var toCall calls
	flag.Var(&toCall, "call", "call this tool (without arguments); repeatable")
	flag.Parse()
	if *url == "" && flag.NArg() > 0 {
		*url = flag.Arg(flag.NArg() - 1)
	}
	if err := run(*url, *clientID, *scopes, *keyFile, *certFile, *dpopKey, *secretFile, *secretEnv, *issuer, *sdk, *timeout, toCall, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// conformanceContext is what the MCP conformance suite hands a client.
type conformanceContext struct {
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	PrivateKeyPEM string `json:"private_key_pem"`
	Alg           string `json:"signing_algorithm"`
}

func run(url, clientID, scopes, keyFile, certFile, dpopKey, secretFile, secretEnv, issuer, sdk string, timeout time.Duration, toCall []string, out io.Writer) error {
	if url == "" {
		return errors.New("-url is required")
	}
	var cc conformanceContext
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if clientID == "" {
		clientID = cc.ClientID
	}
	if clientID == "" {
		return errors.New("-client-id is required")
	}
	cfg := client.Config{ClientID: clientID, Scopes: strings.Fields(scopes), Issuer: issuer, HTTPClient: &http.Client{Timeout: timeout}}
	var err error
	switch {
	case certFile != "":
		if keyFile == "" {
			keyFile = certFile
		}
		cert, cerr := tls.LoadX509KeyPair(certFile, keyFile)
		if cerr != nil {
			return cerr
		}
		cfg.Certificate = &cert
		if secretFile != "" || os.Getenv(secretEnv) != "" {
			cfg.ClientSecret, err = secret(secretFile, secretEnv)
		}
	case keyFile != "":
		cfg.Key, err = readKey(keyFile)
	case secretFile != "" || os.Getenv(secretEnv) != "":
		cfg.ClientSecret, err = secret(secretFile, secretEnv)
	case cc.PrivateKeyPEM != "":
		cfg.Key, err = keys.ParsePEM([]byte(cc.PrivateKeyPEM))
		cfg.KeyAlg = cc.Alg
	case cc.ClientSecret != "":
		cfg.ClientSecret = cc.ClientSecret
	default:
		return fmt.Errorf("no credentials: -key, -cert, -secret-file, or the environment variable %s", secretEnv)
	}
	if err != nil {
		return err
	}
	if dpopKey != "" {
		if cfg.DPoPKey, err = readKey(dpopKey); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	hc := mcpauth.Client(ctx, cfg)
	switch sdk {
	case "go-sdk":
		return withGoSDK(ctx, url, hc, toCall, out)
	case "mcp-go":
		return withMCPGo(ctx, url, hc, toCall, out)
	}
	return fmt.Errorf("-sdk %q: want go-sdk or mcp-go", sdk)
}

func withGoSDK(ctx context.Context, url string, hc *http.Client, toCall []string, out io.Writer) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "idsauth-example-client", Version: "v1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer sess.Close()
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	for _, t := range list.Tools {
		fmt.Fprintln(out, "tool:", t.Name)
	}
	for _, name := range toCall {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil {
			return err
		}
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				fmt.Fprintln(out, t.Text)
			}
		}
	}
	return nil
}

func withMCPGo(ctx context.Context, url string, hc *http.Client, toCall []string, out io.Writer) error {
	c, err := mcpgoclient.NewStreamableHttpClient(url, mcpgotransport.WithHTTPBasicClient(hc))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcpgo.Implementation{Name: "idsauth-example-client", Version: "v1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return err
	}
	for _, t := range list.Tools {
		fmt.Fprintln(out, "tool:", t.Name)
	}
	for _, name := range toCall {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		for _, c := range res.Content {
			if t, ok := c.(mcpgo.TextContent); ok {
				fmt.Fprintln(out, t.Text)
			}
		}
	}
	return nil
}

// readKey reads a PEM private key.
func readKey(file string) (crypto.Signer, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	k, err := keys.ParsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return k, nil
}

// secret reads the client secret from the first line of file, else the
// environment variable envName.
func secret(file, envName string) (string, error) {
	if file == "" {
		return os.Getenv(envName), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 4<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if line = strings.TrimRight(line, "\r\n"); line == "" {
		return "", fmt.Errorf("%s: no secret on its first line", file)
	}
	return line, nil
}
