package conformance

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/internal/proctest"
	"github.com/idsauth/idsauth/secret"
)

// conformanceRun runs the built idsauth conformance with args, the
// client's secret in IDSAUTH_CLIENT_SECRET, a JUnit report beside, and
// returns its exit status and output.
func conformanceRun(t *testing.T, clientSecret string, args ...string) (int, string) {
	t.Helper()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(binary, append(append([]string{"conformance"}, args...), "-junit", junit)...)
	cmd.Env = append(os.Environ(), "IDSAUTH_CLIENT_SECRET="+clientSecret)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 2 {
		if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), "<testsuites>") {
			t.Errorf("no JUnit report: %v", err)
		}
	}
	if os.Getenv("IDSAUTH_CONFORMANCE_REPORTS") != "" {
		fmt.Printf("idsauth conformance %s\n%s\n", strings.Join(args, " "), out)
	}
	return code, string(out)
}

// servedIssuer runs idsauth serve on a free port whose URL is its issuer:
// clients "runner" (JWTs) and "runner-ref" (reference tokens), secret
// "runner-secret", both of the product's scopes; the API resource
// "gate-api" (secret "gate-api-secret") introspects.
func servedIssuer(t *testing.T) (*running, string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(binary, "gen-key", "-alg", "ES256", "-out", filepath.Join(dir, "signing.pem")).CombinedOutput(); err != nil {
		t.Fatalf("gen-key: %v\n%s", err, out)
	}
	port := proctest.FreePort(t)
	iss := "http://127.0.0.1:" + port + "/ids"
	hash := secret.HashSHA256("runner-secret").String()
	cfg := map[string]any{
		"issuer": iss, "keys": []any{map[string]string{"file": "signing.pem"}},
		"clients": []any{
			map[string]any{"clientId": "runner", "secretHashes": []string{hash}, "scopes": []string{"pd_AdminWebApi", "pd_ConnectWebApi"}},
			map[string]any{"clientId": "runner-ref", "secretHashes": []string{hash}, "scopes": []string{"pd_AdminWebApi", "pd_ConnectWebApi"}, "accessTokenType": "reference"},
		},
		"apiResources": []any{map[string]any{"name": "gate-api", "secretHashes": []string{secret.HashSHA256("gate-api-secret").String()}, "scopes": []string{"pd_AdminWebApi", "pd_ConnectWebApi"}}},
	}
	writeJSON(t, filepath.Join(dir, "idsauth.json"), cfg)
	return start(t, nil, "-config", filepath.Join(dir, "idsauth.json"), "-addr", "127.0.0.1:"+port, "-ops-addr", "127.0.0.1:0"), iss
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConformanceRunner: idsauth conformance, the built command, against
// the example service (its token endpoint and its API), against idsauth
// serve, against idsauth gate behind a real nginx in front of a Python
// upstream, and against a server that is wrong on purpose, which it must
// fail. With IDSAUTH_CONFORMANCE_REPORTS set (and go test -v), each
// report is printed; CI runs it as one of the module's tests.
func TestConformanceRunner(t *testing.T) {
	t.Run("the example service", func(t *testing.T) {
		dir := t.TempDir()
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "examplesvc"), "./examplesvc")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the example service: %v\n%s", err, out)
		}
		port := proctest.FreePort(t)
		base := "http://127.0.0.1:" + port
		proctest.Start(t, "127.0.0.1:"+port, filepath.Join(dir, "examplesvc"), "-addr", "127.0.0.1:"+port)
		if code, out := conformanceRun(t, "demo-admin-secret", "token-endpoint", "-issuer", base+"/ids", "-client-id", "demo-admin", "-scope", "pd_AdminWebApi"); code != 0 {
			t.Errorf("token-endpoint: exit %d\n%s", code, out)
		}
		if code, out := conformanceRun(t, "demo-admin-secret", "resource", "-url", base+"/webapi/api/v3/demo/Admin/Users", "-issuer", base+"/ids", "-client-id", "demo-admin", "-scope", "pd_AdminWebApi"); code != 0 {
			t.Errorf("resource: exit %d\n%s", code, out)
		}
	})
	srv, iss := servedIssuer(t)
	t.Run("serve", func(t *testing.T) {
		for _, client := range []string{"runner", "runner-ref"} {
			if code, out := conformanceRun(t, "runner-secret", "token-endpoint", "-issuer", iss, "-client-id", client, "-scope", "pd_AdminWebApi"); code != 0 {
				t.Errorf("%s: exit %d\n%s", client, code, out)
			}
		}
	})
	t.Run("the gate behind nginx", func(t *testing.T) {
		g := startGateBehindNginx(t, iss)
		for _, client := range []string{"runner", "runner-ref"} {
			if code, out := conformanceRun(t, "runner-secret", "gate", "-url", g.origin+"/webapi/api/v3/demo/Admin/Users", "-issuer", iss, "-client-id", client, "-scope", "pd_AdminWebApi", "-cacert", g.caFile); code != 0 {
				t.Errorf("%s: exit %d\n%s\nnginx:\n%s", client, code, out, g.ngx.Log())
			}
		}
	})
	t.Run("a server wrong on purpose", func(t *testing.T) {
		// It admits any token at all: the runner must fail it, and say
		// where.
		wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="wrong"`)
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, `{"data":[]}`)
		}))
		defer wrong.Close()
		code, out := conformanceRun(t, "runner-secret", "resource", "-url", wrong.URL+"/webapi/api/v3/demo/Admin/Users", "-issuer", iss, "-client-id", "runner", "-scope", "pd_AdminWebApi")
		if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "an expired token") {
			t.Errorf("exit %d against a server that admits any token, want 1:\n%s", code, out)
		}
	})
	if t.Failed() {
		t.Logf("idsauth serve's log:\n%s", strings.Join(srv.log(), "\n"))
	}
}

// gateBehindNginx is idsauth gate, the built command, behind a real nginx
// as docs/GATEWAY.md has it, in front of the Python upstream.
type gateBehindNginx struct {
	gate   *running
	ngx    *nginxtest.Server
	origin string
	ca     *certtest.CA
	caFile string
	file   string
}

// startGateBehindNginx starts the upstream, nginx in front of a gate on
// a port chosen first, and the gate for iss's tokens (JWTs and, through
// gate-api, reference tokens) with the route of the Admin API on nginx's
// origin.
func startGateBehindNginx(t *testing.T, iss string) *gateBehindNginx {
	t.Helper()
	up := proctest.Python(t, "../cmd/idsauth/testdata/upstream.py")
	dir := t.TempDir()
	ca := certtest.NewCA(t, "nginx")
	server := ca.Server(t)
	for name, data := range map[string][]byte{"api.pem": certtest.PEM(server.Leaf.Raw), "api-key.pem": certtest.KeyPEM(t, server), "ca.pem": certtest.PEM(ca.Cert.Raw)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gateAddr := "127.0.0.1:" + proctest.FreePort(t)
	conf := proctest.Recipe(t, "../docs/GATEWAY.md", "nginx", "listen 443 ssl", "listen 127.0.0.1:{{port}} ssl", "/etc/nginx/", dir+"/",
		"10.0.0.9:8181", gateAddr, "10.0.0.7:8080", up)
	ngx := nginxtest.Start(t, dir, conf)
	file := filepath.Join(dir, "gate.json")
	writeJSON(t, file, gateConfigFor(iss, ngx.Addr, "pd_AdminWebApi"))
	g := startCommand(t, []string{"GATE_API_SECRET=gate-api-secret"}, "gate", "gate listening", "-config", file, "-addr", gateAddr, "-ops-addr", "127.0.0.1:0")
	return &gateBehindNginx{gate: g, ngx: ngx, origin: "https://" + ngx.Addr, ca: ca, caFile: filepath.Join(dir, "ca.pem"), file: file}
}

// gateConfigFor is the gate's configuration for iss's tokens on host,
// its Admin route needing adminScope.
func gateConfigFor(iss, host, adminScope string) map[string]any {
	return map[string]any{
		"issuers": []any{map[string]any{"issuer": iss, "jwks": "discover", "introspection": map[string]any{"clientId": "gate-api", "secretEnv": "GATE_API_SECRET"}}},
		"routes": []any{map[string]any{"name": "admin", "host": host, "pathPrefix": "/webapi/api/v3/demo/Admin", "scopes": []string{adminScope},
			"audience": []string{iss + "/resources"}}},
		"trustedProxies": []string{"127.0.0.1"},
		"claims":         map[string]string{"client_id": "X-Client-Id", "scope": "X-Scope"},
		"dpop":           map[string]any{"requireNonce": true},
	}
}

// TestGateOperations: idsauth gate as an operator runs it: /healthz,
// /readyz (ready once the issuer's keys are in), /metrics (the
// decisions, by reason, and the reloads); SIGHUP applies a new file (a
// route that needs another scope now refuses the token that passed), a
// bad file changes nothing; SIGTERM drains and exits 0.
func TestGateOperations(t *testing.T) {
	_, iss := servedIssuer(t)
	g := startGateBehindNginx(t, iss)
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get(g.gate.ops + "/healthz"); st != 200 {
		t.Errorf("/healthz: %d %s", st, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, body := get(g.gate.ops + "/readyz")
		if st == 200 && strings.HasPrefix(body, "ready") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", st, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	call := func() int { return g.adminStatus(t, iss) }
	if st := call(); st != 200 {
		t.Fatalf("the Admin route with its scope: %d", st)
	}
	writeJSON(t, g.file, gateConfigFor(iss, g.ngx.Addr, "pd_ConnectWebApi"))
	g.gate.signal(t, syscall.SIGHUP)
	g.gate.waitLog(t, `"msg":"reloaded"`)
	if st := call(); st != 403 {
		t.Errorf("after a reload that asks another scope: %d, want 403", st)
	}
	if err := os.WriteFile(g.file, []byte(`{"issuers": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g.gate.signal(t, syscall.SIGHUP)
	g.gate.waitLog(t, "reload failed")
	if st := call(); st != 403 {
		t.Errorf("after a bad file: %d, want 403 still", st)
	}
	_, metrics := get(g.gate.ops + "/metrics")
	for _, want := range []string{`idsauth_reloads_total{result="ok"} 1`, `idsauth_reloads_total{result="failed"} 1`, "idsauth_build_info", `reason="insufficient_scope"`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q:\n%s", want, metrics)
		}
	}
	g.gate.signal(t, syscall.SIGTERM)
	if err := g.gate.cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v", err)
	}
}

// adminStatus calls the Admin route through nginx with a token of
// runner for pd_AdminWebApi, and returns the status.
func (g *gateBehindNginx) adminStatus(t *testing.T, iss string) int {
	t.Helper()
	tok, err := token(t.Context(), strings.TrimSuffix(iss, "/ids"), nil, "runner", "runner-secret")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, g.origin+"/webapi/api/v3/demo/Admin/Users", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: g.ca.Pool()}}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
