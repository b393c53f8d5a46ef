package middleware_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/middleware"
)

// TestNoRenegotiation: a client cannot present another certificate on a
// connection after its handshake. Go's TLS server does not renegotiate
// (and RFC 8705 §3 makes no use of renegotiation or of TLS 1.3's
// post-handshake authentication, which Go's server never asks for): when
// openssl s_client, over TLS 1.2, asks to renegotiate, the server answers
// with an alert and the connection ends, so a connection's certificate,
// the one its thumbprint was computed from, is the one of its handshake
// for its whole life.
func TestNoRenegotiation(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("openssl is not installed, and CI must run this test")
		}
		t.Skip("openssl is not installed")
	}
	w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{}, &tls.Config{ClientAuth: tls.RequestClientCert, MaxVersion: tls.VersionTLS12})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	_ = os.WriteFile(certFile, certtest.PEM(w.other.Leaf.Raw), 0o600)
	_ = os.WriteFile(keyFile, certtest.KeyPEM(t, w.other), 0o600)
	cmd := exec.Command("openssl", "s_client", "-connect", strings.TrimPrefix(w.srv.URL, "https://"), "-tls1_2", "-cert", certFile, "-key", keyFile)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen strings.Builder
	await := func(want string) bool {
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return false
				}
				seen.WriteString(l + "\n")
				if strings.Contains(l, want) {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !await("Verify return code") {
		t.Fatalf("no handshake:\n%s", seen.String())
	}
	_, _ = io.WriteString(stdin, "R\n")
	if !await("RENEGOTIATING") {
		t.Fatalf("openssl did not renegotiate:\n%s", seen.String())
	}
	// The token of another certificate, which a renegotiation would have
	// had to present.
	_, _ = io.WriteString(stdin, "GET /admin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+w.token(t, &w.mine)+"\r\n\r\n")
	for l := range lines {
		seen.WriteString(l + "\n")
	}
	got := seen.String()
	if !strings.Contains(got, "alert") || strings.Contains(got, "HTTP/1.1 ") {
		t.Fatalf("the server renegotiated, or answered after the request to:\n%s", got)
	}
}
