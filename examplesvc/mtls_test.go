package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/scope"
)

// TestMutualTLSOnTheAPIs: with the demo configuration over TLS that asks
// for client certificates, demo-mtls authenticates with the certificate
// of testdata/mtls, and its token, bound to it, opens the Admin API over
// a connection that presents it and not over one that does not.
func TestMutualTLSOnTheAPIs(t *testing.T) {
	_, logger := testlog.New()
	srv := httptest.NewUnstartedServer(nil)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	svc, err := newService(t.Context(), configSource{issuer: srv.URL + "/ids", mtlsAlias: srv.URL + "/ids"}, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc.routes()
	cert, err := tls.LoadX509KeyPair("testdata/mtls/demo-mtls.pem", "testdata/mtls/demo-mtls-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{ClientID: "demo-mtls", BaseURL: srv.URL, Scopes: []string{scope.AdminWebAPI}, Certificate: &cert, HTTPClient: srv.Client()}
	resp, err := cfg.Client(context.Background()).Get(srv.URL + "/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("demo-mtls with its certificate: %s", resp.Status)
	}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/webapi/api/v3/demo/Admin/Users", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	r, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("its token without the certificate: %s %q", r.Status, r.Header.Values("WWW-Authenticate"))
	}
}

// TestBannerCurlLinesForDemoMTLS: the example service run with
// -mtls-addr prints demo-mtls's curl lines, and they work as printed,
// from the repository's root: a token bound to demo-mtls's certificate,
// then the Admin API's users with it.
func TestBannerCurlLinesForDemoMTLS(t *testing.T) {
	for _, tool := range []string{"curl", "bash", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed, and CI must run this test", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	bin := build(t)
	cmd := exec.Command(bin, "-addr", freeAddr(t), "-mtls-addr", freeAddr(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testlog.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("examplesvc stderr:\n%s", stderr)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var script []string
	deadline := time.After(30 * time.Second)
	for len(script) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the banner ended without demo-mtls's curl lines")
			}
			if strings.Contains(l, "demo-mtls.pem") {
				script = append(script, strings.TrimSpace(l))
			}
		case <-deadline:
			t.Fatal("no curl lines for demo-mtls in the banner")
		}
	}
	if !strings.HasPrefix(script[0], "TOKEN=$(curl") || !strings.HasPrefix(script[1], "curl") || !strings.Contains(script[0], "client_id=demo-mtls") {
		t.Fatalf("the lines: %q", script)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run := func(lines ...string) string {
		sh := exec.Command("bash", "-c", strings.Join(lines, "\n"))
		sh.Dir = root
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(script...); !strings.Contains(out, `"data":[`) || !strings.Contains(out, `"pagingDetails"`) {
		t.Fatalf("the banner's lines answered %s", out)
	}
	// The same token over a connection without the certificate.
	noCert := strings.Replace(strings.Replace(script[1], "--cert examplesvc/testdata/mtls/demo-mtls.pem", "", 1), "--key examplesvc/testdata/mtls/demo-mtls-key.pem", "", 1)
	if out := run(script[0], noCert+` -o /dev/null -w '%{http_code}'`); out != "401" {
		t.Fatalf("without the certificate: %s", out)
	}
}
