package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// process is the real examplesvc binary, running on a loopback port.
type process struct {
	cmd    *exec.Cmd
	base   string
	dir    string
	stderr *testlog.Buffer
	done   chan error
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build compiles examplesvc once for all tests.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "examplesvc-e2e")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "examplesvc")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func writeKey(t *testing.T, dir, name string, k *keys.Key) string {
	t.Helper()
	b, err := keys.EncodePEM(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func writeConfig(t *testing.T, dir string, keyFiles ...string) {
	t.Helper()
	writeConfigLimits(t, dir, nil, keyFiles...)
}

// keyedKey is the key of the configuration's private_key_jwt client,
// keyed, made once for the test binary.
var keyedKey = sync.OnceValue(func() *keys.Key {
	k, err := keys.Generate("ES256")
	if err != nil {
		panic(err)
	}
	return k
})

func keyedJWK() keys.JWK {
	j, err := keys.PublicJWKOf(keyedKey().Public())
	if err != nil {
		panic(err)
	}
	return j
}

// writeConfigLimits is writeConfig with the issuer's "limits" section.
func writeConfigLimits(t *testing.T, dir string, limits map[string]any, keyFiles ...string) {
	t.Helper()
	cfg := map[string]any{
		"issuer": "http://placeholder/ids", // tests replace it with -issuer or configSource.issuer
		"clients": []map[string]any{
			{"clientId": "admin", "secretHashes": []string{secret.HashSHA256("admin-secret").String()}, "scopes": []string{scope.AdminWebAPI}},
			{"clientId": "connect", "secretHashes": []string{secret.HashSHA256("connect-secret").String()}, "scopes": []string{scope.ConnectWebAPI}},
			// A client whose tokens are for another resource server.
			{"clientId": "payments", "secretHashes": []string{secret.HashSHA256("payments-secret").String()}, "scopes": []string{scope.AdminWebAPI}, "audience": []string{"https://payments.example/api"}},
			// A private_key_jwt client, whose key is keyedKey's.
			{"clientId": "keyed", "publicKeys": []any{map[string]any{"jwk": keyedJWK()}}, "scopes": []string{scope.AdminWebAPI},
				"audience": []string{"https://payments.example/api", "https://reports.example/api"}},
		},
		"scimTenants": []map[string]any{{"tenant": "acme", "tokenHashes": []string{secret.HashSHA256("acme-scim-token").String()}}},
	}
	var ks []map[string]string
	for _, f := range keyFiles {
		ks = append(ks, map[string]string{"file": f})
	}
	cfg["keys"] = ks
	if limits != nil {
		cfg["limits"] = limits
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Write then rename, so a reload never reads half a file.
	tmp := filepath.Join(dir, "config.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "config.json")); err != nil {
		t.Fatal(err)
	}
}

// start runs the binary with the config in dir on a free loopback port,
// with -issuer naming that port: the file's issuer is a placeholder.
func start(t *testing.T, dir string) *process {
	t.Helper()
	addr := freeAddr(t)
	return startArgs(t, dir, "-addr", addr, "-issuer", "http://"+addr+"/ids")
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startArgs runs the binary with the config in dir and args; the
// banner's first line says where it listens.
func startArgs(t *testing.T, dir string, args ...string) *process {
	t.Helper()
	bin := build(t)
	cmd := exec.Command(bin, append([]string{"-config", filepath.Join(dir, "config.json")}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, dir: dir, stderr: &testlog.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("no banner: %v\n%s", err, p.stderr.String())
	}
	const prefix = "idsauth example service listening on "
	if !strings.HasPrefix(first, prefix) {
		t.Fatalf("banner = %q", first)
	}
	p.base = strings.TrimSpace(strings.TrimPrefix(first, prefix))
	go func() { _, _ = io.Copy(io.Discard, lines); p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("examplesvc stderr:\n%s", p.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("examplesvc not healthy: %v\n%s", err, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *process) client(id, secret string, scopes ...string) *http.Client {
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: p.base + "/ids/connect/token", Scopes: scopes}
	return cc.Client(context.Background())
}

type reply struct {
	status int
	header http.Header
	body   string
	path   string // the escaped path of the URL called
}

func send(t *testing.T, c *http.Client, method, url, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b), resp.Request.URL.EscapedPath()}
}

// waitLog waits until the service's log holds s n times.
func (p *process) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(p.stderr.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q %d times:\n%s", s, n, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	k1 := jwktest.NewKey(t, "ES256")
	writeConfig(t, dir, writeKey(t, dir, "k1.pem", k1))
	p := start(t, dir)

	admin := p.client("admin", "admin-secret", scope.AdminWebAPI)
	connect := p.client("connect", "connect-secret", scope.ConnectWebAPI)
	plain := http.DefaultClient
	expired := jwktest.Sign(t, k1, nil, jwktest.With(jwktest.Claims(p.base+"/ids", scope.AdminWebAPI+" "+scope.ConnectWebAPI, time.Hour), "exp", time.Now().Add(-time.Hour).Unix()))

	api := p.base + "/webapi/api/v3/demo"
	families := []struct {
		name          string
		method, path  string
		body          string
		right, wrong  *http.Client
		wantRightCode int
	}{
		{"Admin API", "GET", api + "/Admin/Users?page=2&pageSize=10", "", admin, connect, 200},
		{"Connect API", "POST", api + "/Connect/Documents", `{"template":"welcome","data":{"name":"Ada","company":"Acme"}}`, connect, admin, 200},
		{"Connect Session API", "POST", api + "/Connect/Session", "", connect, admin, 201},
	}
	for _, f := range families {
		t.Run(f.name+" with the right scope", func(t *testing.T) {
			r := send(t, f.right, f.method, f.path, f.body)
			if r.status != f.wantRightCode {
				t.Fatalf("got %d %s", r.status, r.body)
			}
		})
		t.Run(f.name+" with the other scope is 403", func(t *testing.T) {
			r := send(t, f.wrong, f.method, f.path, f.body)
			if r.status != 403 || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
				t.Fatalf("got %d %v", r.status, r.header)
			}
		})
		t.Run(f.name+" without a token is a bare challenge", func(t *testing.T) {
			r := send(t, plain, f.method, f.path, f.body)
			if r.status != 401 || !bareChallenges(r.header.Values("WWW-Authenticate"), r.path) || json.Valid([]byte(r.body)) {
				t.Fatalf("got %d %v %q", r.status, r.header, r.body)
			}
		})
		for name, tok := range map[string]string{"expired": expired, "garbage": "garbage.token.here"} {
			t.Run(f.name+" with an "+name+" token is invalid_token JSON", func(t *testing.T) {
				r := send(t, plain, f.method, f.path, f.body, "Authorization", "Bearer "+tok)
				var body map[string]string
				if r.status != 401 || json.Unmarshal([]byte(r.body), &body) != nil || body["error"] != "invalid_token" || r.header.Get("Content-Type") != "application/json" {
					t.Fatalf("got %d %q", r.status, r.body)
				}
			})
		}
	}
	t.Run("Admin paging", func(t *testing.T) {
		r := send(t, admin, "GET", api+"/Admin/Users?page=3&pageSize=10", "")
		var page struct {
			Data          []map[string]any `json:"data"`
			PagingDetails map[string]int   `json:"pagingDetails"`
		}
		if err := json.Unmarshal([]byte(r.body), &page); err != nil || len(page.Data) != 5 || page.PagingDetails["totalPages"] != 3 || page.PagingDetails["totalCount"] != 25 || page.PagingDetails["page"] != 3 {
			t.Fatalf("page = %s", r.body)
		}
		if r := send(t, admin, "GET", api+"/Admin/Users?pageSize=1001", ""); r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("pageSize 1001: %d", r.status)
		}
		if r := send(t, admin, "GET", p.base+"/webapi/api/v3/nowhere/Admin/Users", ""); r.status != 404 {
			t.Fatalf("unknown data source: %d", r.status)
		}
	})
	t.Run("Connect Session lifecycle", func(t *testing.T) {
		r := send(t, connect, "POST", api+"/Connect/Session", "")
		var s map[string]any
		_ = json.Unmarshal([]byte(r.body), &s)
		id, _ := s["sessionId"].(string)
		if id == "" {
			t.Fatalf("create: %s", r.body)
		}
		if r := send(t, connect, "GET", api+"/Connect/Session/"+id, ""); r.status != 200 {
			t.Fatalf("read: %d", r.status)
		}
		if r := send(t, connect, "DELETE", api+"/Connect/Session/"+id, ""); r.status != 204 {
			t.Fatalf("delete: %d", r.status)
		}
		if r := send(t, connect, "GET", api+"/Connect/Session/"+id, ""); r.status != 404 {
			t.Fatalf("read after delete: %d", r.status)
		}
	})
	t.Run("Connect renders HTML, escaped", func(t *testing.T) {
		r := send(t, connect, "POST", api+"/Connect/Documents", `{"template":"welcome","format":"html","data":{"name":"<script>x</script>","company":"Acme"}}`)
		if r.status != 200 || r.header.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(r.body, "&lt;script&gt;") {
			t.Fatalf("got %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
		}
		if r := send(t, connect, "POST", api+"/Connect/Documents", `{"template":"nope"}`); r.status != 400 {
			t.Fatalf("unknown template: %d", r.status)
		}
	})
	scimUsers := p.base + "/webapi/scim-api/v1/acme/scim/Users"
	t.Run("SCIM with the tenant token", func(t *testing.T) {
		r := send(t, plain, "POST", scimUsers, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"ada@acme.example"}`, "Authorization", "Bearer acme-scim-token")
		if r.status != 201 || r.header.Get("Content-Type") != "application/scim+json" {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		r = send(t, plain, "GET", scimUsers+`?filter=userName%20eq%20%22ADA@acme.example%22`, "", "Authorization", "Bearer acme-scim-token")
		if r.status != 200 || !strings.Contains(r.body, `"totalResults":1`) {
			t.Fatalf("filter: %d %s", r.status, r.body)
		}
	})
	t.Run("SCIM with an identity-service token is a SCIM 401", func(t *testing.T) {
		tok, err := (&clientcredentials.Config{ClientID: "admin", ClientSecret: "admin-secret", TokenURL: p.base + "/ids/connect/token", Scopes: []string{scope.AdminWebAPI}}).Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := send(t, plain, "GET", scimUsers, "", "Authorization", "Bearer "+tok.AccessToken)
		if r.status != 401 || r.header.Get("Content-Type") != "application/scim+json" || !strings.Contains(r.body, `"status":"401"`) {
			t.Fatalf("got %d %s", r.status, r.body)
		}
	})
	t.Run("header bounds: a 16 KiB token is read, 64 KiB of headers is not", func(t *testing.T) {
		r := send(t, plain, "GET", api+"/Admin/Users", "", "Authorization", "Bearer "+strings.Repeat("a", 16<<10))
		if r.status != 401 || !strings.Contains(r.body, "invalid_token") {
			t.Fatalf("16 KiB token: %d %s", r.status, r.body)
		}
		r = send(t, plain, "GET", p.base+"/healthz", "", "X-Pad", strings.Repeat("a", 64<<10))
		if r.status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("64 KiB header: %d, want 431", r.status)
		}
	})
	t.Run("no secret or token in the log", func(t *testing.T) {
		logs := p.stderr.String()
		for _, s := range []string{"admin-secret", "connect-secret", "acme-scim-token", strings.Split(expired, ".")[2]} {
			if strings.Contains(logs, s) {
				t.Fatalf("log holds %q", s)
			}
		}
	})
}

// TestRotationBySIGHUP rotates the signing key with two reloads while
// clients keep calling, and expects not a single failed request.
func TestRotationBySIGHUP(t *testing.T) {
	dir := t.TempDir()
	k1, k2 := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "EdDSA")
	f1, f2 := writeKey(t, dir, "k1.pem", k1), writeKey(t, dir, "k2.pem", k2)
	writeConfig(t, dir, f1)
	p := start(t, dir)

	var calls, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := p.client("admin", "admin-secret", scope.AdminWebAPI)
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(p.base + "/webapi/api/v3/demo/Admin/Groups")
				if err != nil || resp.StatusCode != 200 {
					failures.Add(1)
				}
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				calls.Add(1)
			}
		}()
	}
	progress := func() {
		for n := calls.Load(); calls.Load() < n+50; {
			time.Sleep(5 * time.Millisecond)
		}
	}
	progress()
	writeConfig(t, dir, f1, f2) // publish the new key
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "configuration reloaded", 1)
	progress()
	writeConfig(t, dir, f2, f1) // the new key signs
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "configuration reloaded", 2)
	progress()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"issuer":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGHUP)
	p.waitLog(t, "reload refused", 1)
	progress()
	close(stop)
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of %d calls failed during rotation", failures.Load(), calls.Load())
	}
	// New tokens carry the new key's kid.
	tok, err := (&clientcredentials.Config{ClientID: "admin", ClientSecret: "admin-secret", TokenURL: p.base + "/ids/connect/token", Scopes: []string{scope.AdminWebAPI}}).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.stderr.String(), "signing_kid="+k2.KID) {
		t.Fatalf("reload log does not name the new signing key")
	}
	var header map[string]any
	b, _ := base64URLDecode(strings.Split(tok.AccessToken, ".")[0])
	_ = json.Unmarshal(b, &header)
	if header["kid"] != k2.KID {
		t.Fatalf("new tokens signed by %v, want %v", header["kid"], k2.KID)
	}
}

// TestGracefulShutdown sends SIGTERM while a request is being uploaded and
// expects that request to be answered before the process exits cleanly.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, writeKey(t, dir, "k1.pem", jwktest.NewKey(t, "ES256")))
	p := start(t, dir)
	tok, err := (&clientcredentials.Config{ClientID: "connect", ClientSecret: "connect-secret", TokenURL: p.base + "/ids/connect/token", Scopes: []string{scope.ConnectWebAPI}}).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", p.base+"/webapi/api/v3/demo/Connect/Documents", pr)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		status int
		body   string
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		res <- result{status: resp.StatusCode, body: string(b)}
	}()
	if _, err := pw.Write([]byte(`{"template":"welcome",`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the handler start reading
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "shutting down", 1)
	if _, err := pw.Write([]byte(`"data":{"name":"Ada","company":"Acme"}}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-res
	if r.err != nil || r.status != 200 || r.body != "Dear Ada,\n\nwelcome to Acme.\n" {
		t.Fatalf("in-flight request: %+v", r)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("process did not exit after SIGTERM")
	}
}

func base64URLDecode(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
