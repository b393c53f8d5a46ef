package mcpauth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/proctest"
)

// built holds the programs the tests build once per run.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// programs builds the example service, the example server and the
// example client, once, and returns the folder that holds them.
func programs(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "mcpauth-examples-")
		if built.err != nil {
			return
		}
		for name, pkg := range map[string]string{
			"examplesvc": "github.com/idsauth/idsauth/examplesvc",
			"server":     "./example/server",
			"client":     "./example/client",
		} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, name), pkg).CombinedOutput()
			if err != nil {
				built.err = &buildError{pkg, string(out)}
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

type buildError struct{ pkg, out string }

func (e *buildError) Error() string { return "go build " + e.pkg + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// demo is the example service with its demo configuration, its demo-mcp
// client allowed the example server's URL, and the example server.
type demo struct {
	bin       string
	issuer    string // the example service's issuer URL
	mcpURL    string // the example server's endpoint
	svc, mcps *proctest.Process
}

// startDemo starts the example service and the example server of sdk.
func startDemo(t *testing.T, sdk string) *demo {
	t.Helper()
	bin := programs(t)
	svcAddr, mcpAddr := "127.0.0.1:"+proctest.FreePort(t), ""
	for mcpAddr == "" || mcpAddr == svcAddr { // a port just freed may come twice
		mcpAddr = "127.0.0.1:" + proctest.FreePort(t)
	}
	d := &demo{bin: bin, issuer: "http://" + svcAddr + "/ids", mcpURL: "http://" + mcpAddr + "/mcp"}
	cfg, err := os.ReadFile("../examplesvc/default-config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), `"http://127.0.0.1:8090/mcp"`) {
		t.Fatal("the demo configuration allows demo-mcp no longer the example server's default URL")
	}
	// The file as it is but for demo-mcp's audience, and without
	// demo-mtls, whose CAs the example service adds to the embedded file
	// alone.
	var doc map[string]any
	if err := json.Unmarshal(bytes.ReplaceAll(cfg, []byte("http://127.0.0.1:8090/mcp"), []byte(d.mcpURL)), &doc); err != nil {
		t.Fatal(err)
	}
	clients := doc["clients"].([]any)
	doc["clients"] = slices.DeleteFunc(clients, func(c any) bool { return c.(map[string]any)["clientId"] == "demo-mtls" })
	cfg, _ = json.Marshal(doc)
	file := filepath.Join(t.TempDir(), "idsauth.json")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	d.svc = proctest.Start(t, svcAddr, filepath.Join(bin, "examplesvc"), "-addr", svcAddr, "-config", file, "-issuer", d.issuer)
	d.mcps = proctest.Start(t, mcpAddr, filepath.Join(bin, "server"), "-addr", mcpAddr, "-issuer", d.issuer, "-sdk", sdk)
	return d
}

// client runs the example client with args and the environment env, and
// returns what it printed, its standard error after its output.
func (d *demo) client(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(d.bin, "client"), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// token is a token of demo-mcp for the example server, from the example
// service, as any client of it gets one.
func (d *demo) token(t *testing.T) string {
	t.Helper()
	cfg := client.Config{ClientID: "demo-mcp", ClientSecret: "demo-mcp-secret", TokenURL: d.issuer + "/connect/token",
		Resources: []string{d.mcpURL}, Scopes: []string{"pd_AdminWebApi", "pd_ConnectWebApi"}}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// TestExamples: the example client, of either SDK, calls both tools of
// the example server, of either SDK, with tokens of the example service,
// by secret, and bound to a DPoP key.
func TestExamples(t *testing.T) {
	dpopFile := filepath.Join(t.TempDir(), "dpop.pem")
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dpopFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := []string{"IDSAUTH_CLIENT_SECRET=demo-mcp-secret"}
	for _, server := range []string{"go-sdk", "mcp-go"} {
		d := startDemo(t, server)
		for _, c := range []struct {
			name string
			args []string
		}{
			{"go-sdk, a secret", []string{"-url", d.mcpURL, "-client-id", "demo-mcp"}},
			{"mcp-go, a secret", []string{"-url", d.mcpURL, "-client-id", "demo-mcp", "-sdk", "mcp-go"}},
			{"go-sdk, DPoP", []string{"-url", d.mcpURL, "-client-id", "demo-mcp", "-dpop-key", dpopFile, "-issuer", d.issuer}},
		} {
			out, err := d.client(t, secret, append(c.args, "-call", "list_users", "-call", "open_session")...)
			want := "tool: list_users\ntool: open_session\nlist_users: called by demo-mcp with pd_AdminWebApi pd_ConnectWebApi\nopen_session: called by demo-mcp with pd_AdminWebApi pd_ConnectWebApi\n"
			if err != nil || out != want {
				t.Errorf("%s server, %s client: %v\n%s", server, c.name, err, out)
			}
		}
		// A scope asked alone, the other stepped up for the tool that
		// needs it.
		out, err := d.client(t, secret, "-url", d.mcpURL, "-client-id", "demo-mcp", "-scope", "pd_AdminWebApi", "-call", "list_users", "-call", "open_session")
		if err != nil || !strings.Contains(out, "list_users: called by demo-mcp with pd_AdminWebApi\nopen_session: called by demo-mcp with pd_AdminWebApi pd_ConnectWebApi") {
			t.Errorf("%s server, step-up: %v\n%s", server, err, out)
		}
		// Credentials for another issuer are not sent to this one.
		out, err = d.client(t, secret, "-url", d.mcpURL, "-client-id", "demo-mcp", "-issuer", "https://login.example.com/ids")
		if err == nil || !strings.Contains(out, "authorization server is not the configured issuer") {
			t.Errorf("%s server, another issuer: %v\n%s", server, err, out)
		}
	}
}
