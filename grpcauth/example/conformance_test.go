package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// grpcurlVersion is the grpcurl the conformance test drives; .ci/run
// installs it, and the test installs it when it is not there.
const grpcurlVersion = "v1.9.4"

// TestGrpcurlAgainstTheExample drives the example, built and started as a
// user runs it, with grpcurl, a foreign client, over a loopback TCP port;
// its tokens come from the real example service (examplesvc), built and
// started too: reflection and health answer without a token; without a
// token, with a token without the scope, and with a malformed one the
// calls are refused with the contract's codes and messages; the right
// token gets the caller's client ID, in a unary call and in each message
// of a server-streaming call.
func TestGrpcurlAgainstTheExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two servers and grpcurl: run without -short")
	}
	grpcurl := findGrpcurl(t)
	dir := t.TempDir()
	build(t, filepath.Join(dir, "examplesvc"), "github.com/idsauth/idsauth/examplesvc")
	build(t, filepath.Join(dir, "example"), ".")

	httpAddr := freeAddr(t)
	start(t, filepath.Join(dir, "examplesvc"), "-addr", httpAddr)
	issuer := "http://" + httpAddr + "/ids"
	waitHTTP(t, issuer+"/.well-known/openid-configuration")
	grpcAddr := freeAddr(t)
	start(t, filepath.Join(dir, "example"), "-addr", grpcAddr, "-issuer", issuer)
	waitTCP(t, grpcAddr)

	admin := token(t, issuer, "demo-admin", "demo-admin-secret", "pd_AdminWebApi")
	connect := token(t, issuer, "demo-connect", "demo-connect-secret", "pd_ConnectWebApi")

	grpcurlRun := func(args ...string) (string, bool) {
		t.Helper()
		cmd := exec.Command(grpcurl, append([]string{"-plaintext", "-max-time", "20"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err == nil
	}
	const unary, streaming = "grpc.testing.TestService/UnaryCall", "grpc.testing.TestService/StreamingOutputCall"
	cases := []struct {
		name string
		args []string
		ok   bool
		want []string
	}{
		{"reflection, no token", []string{grpcAddr, "list"}, true, []string{"grpc.testing.TestService", "grpc.health.v1.Health"}},
		{"health, no token", []string{grpcAddr, "grpc.health.v1.Health/Check"}, true, []string{`"status": "SERVING"`}},
		{"no token", []string{"-d", "{}", grpcAddr, unary}, false, []string{"Code: Unauthenticated", "Message: no bearer token"}},
		{"a token without the scope", []string{"-H", "authorization: Bearer " + connect, "-d", "{}", grpcAddr, unary}, false,
			[]string{"Code: PermissionDenied", "Message: insufficient_scope: pd_AdminWebApi"}},
		{"a malformed token", []string{"-H", "authorization: Bearer not.a-jwt.at-all", "-d", "{}", grpcAddr, unary}, false,
			[]string{"Code: Unauthenticated", "Message: invalid_token: malformed"}},
		{"the right token", []string{"-H", "authorization: Bearer " + admin, "-d", "{}", grpcAddr, unary}, true,
			[]string{`"username": "demo-admin"`, `"oauthScope": "pd_AdminWebApi"`}},
		{"the other scope's method, its token", []string{"-H", "authorization: Bearer " + connect, grpcAddr, "grpc.testing.TestService/EmptyCall"}, true, []string{"{"}},
		{"a streaming call, the right token", []string{"-H", "authorization: Bearer " + admin, "-d", `{"responseParameters":[{},{},{}]}`, grpcAddr, streaming}, true,
			[]string{`"body": "ZGVtby1hZG1pbg=="`}}, // base64 of demo-admin
		{"a streaming call, no token", []string{"-d", `{"responseParameters":[{}]}`, grpcAddr, streaming}, false, []string{"Code: Unauthenticated", "Message: no bearer token"}},
	}
	for _, c := range cases {
		out, ok := grpcurlRun(c.args...)
		if ok != c.ok {
			t.Errorf("%s: grpcurl succeeded: %t, want %t:\n%s", c.name, ok, c.ok, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: grpcurl printed no %q:\n%s", c.name, w, out)
			}
		}
		if strings.Contains(out, admin[len(admin)-16:]) || strings.Contains(out, connect[len(connect)-16:]) {
			t.Errorf("%s: the answer holds part of a token:\n%s", c.name, out)
		}
	}
	out, _ := grpcurlRun("-H", "authorization: Bearer "+admin, "-d", `{"responseParameters":[{},{},{}]}`, grpcAddr, streaming)
	if n := strings.Count(out, `"body": "ZGVtby1hZG1pbg=="`); n != 3 {
		t.Errorf("the streaming call gave %d messages, want 3:\n%s", n, out)
	}
}

// findGrpcurl returns grpcurl at grpcurlVersion: on PATH or in GOBIN, or
// installed from the module proxy into the user's cache.
func findGrpcurl(t *testing.T) string {
	t.Helper()
	gopath := strings.TrimSpace(goEnv(t, "GOPATH"))
	candidates := []string{filepath.Join(gopath, "bin", "grpcurl")}
	if p, err := exec.LookPath("grpcurl"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	for _, c := range candidates {
		if out, err := exec.Command("go", "version", "-m", c).Output(); err == nil && strings.Contains(string(out), "github.com/fullstorydev/grpcurl\t"+grpcurlVersion) {
			return c
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	bin := filepath.Join(cache, "idsauth-grpcurl-"+grpcurlVersion)
	cmd := exec.Command("go", "install", "github.com/fullstorydev/grpcurl/cmd/grpcurl@"+grpcurlVersion)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing grpcurl %s: %v\n%s", grpcurlVersion, err, out)
	}
	return filepath.Join(bin, "grpcurl")
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func build(t *testing.T, out, pkg string) {
	t.Helper()
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// start runs bin until the test ends, then stops it by its PID.
func start(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s printed:\n%s", filepath.Base(bin), logs.String())
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP and waitTCP wait, by polling, for a server to answer; what
// they wait for is an answer, never a duration.
func waitHTTP(t *testing.T, u string) {
	t.Helper()
	for range 300 {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200", u)
}

func waitTCP(t *testing.T, addr string) {
	t.Helper()
	for range 300 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// token asks the example service's token endpoint for a token.
func token(t *testing.T, issuer, id, secret, scope string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, issuer+"/connect/token",
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(bufio.NewReader(io.LimitReader(resp.Body, 1<<20))).Decode(&body); err != nil || body.AccessToken == "" {
		t.Fatalf("token for %s: %d, %v", id, resp.StatusCode, err)
	}
	return body.AccessToken
}
