package middleware_test

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/middleware"
)

// TestBehindNginx: a real nginx terminates TLS, asks its clients for a
// certificate (any: possession is what the binding needs), and forwards
// it as nginx's documentation has it ($ssl_client_escaped_cert) to the
// API, which trusts the header from nginx's address alone. A token bound
// to a certificate passes with it, and not with another, none, or a
// header the client wrote itself: nginx replaces it. curl, a client that
// is not Go's, presents its certificate from PEM files.
func TestBehindNginx(t *testing.T) {
	w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{ForwardedCert: &middleware.ForwardedCert{
		Header:         "X-SSL-CERT",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	}}, nil)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "nginx")
	server := ca.Server(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("server.pem", certtest.PEM(server.Leaf.Raw))
	write("server-key.pem", certtest.KeyPEM(t, server))
	caFile := write("ca.pem", certtest.PEM(ca.Cert.Raw))
	ngx := nginxtest.Start(t, dir, `
	server {
		listen 127.0.0.1:{{port}} ssl;
		ssl_certificate {{dir}}/server.pem;
		ssl_certificate_key {{dir}}/server-key.pem;
		ssl_verify_client optional_no_ca;
		location / {
			proxy_pass `+w.srv.URL+`;
			proxy_set_header X-SSL-CERT $ssl_client_escaped_cert;
		}
	}`)
	u := "https://" + ngx.Addr + "/admin"
	client := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	bound := w.token(t, &w.mine)
	if a := get(t, client(&w.mine), u, bound); a.status != 200 || a.body != "hello" {
		t.Fatalf("its certificate through nginx: %d %s\nnginx: %s", a.status, a.body, ngx.Log())
	}
	wantInvalidToken(t, "another certificate", get(t, client(&w.other), u, bound), "token is bound to another client certificate")
	wantInvalidToken(t, "no certificate", get(t, client(nil), u, bound), "token is bound to a key")
	spoof := strings.ReplaceAll(string(certtest.PEM(w.mine.Leaf.Raw)), "\n", "%0A")
	wantInvalidToken(t, "a header of the client's own", get(t, client(nil), u, bound, "X-SSL-CERT", spoof), "token is bound to a key")
	wantInvalidToken(t, "a header of the client's own beside another certificate", get(t, client(&w.other), u, bound, "X-SSL-CERT", spoof), "token is bound to another client certificate")

	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed, and CI must run this test (.ci/run installs it)")
		}
		t.Skip("curl is not installed")
	}
	certFile, keyFile := write("client.pem", certtest.PEM(w.mine.Leaf.Raw)), write("client-key.pem", certtest.KeyPEM(t, w.mine))
	otherFile, otherKey := write("other.pem", certtest.PEM(w.other.Leaf.Raw)), write("other-key.pem", certtest.KeyPEM(t, w.other))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"curl with its certificate", []string{"--cert", certFile, "--key", keyFile}, "200 hello"},
		{"curl without", nil, "401 "},
		{"curl without, a header of its own", []string{"-H", "X-SSL-CERT: " + spoof}, "401 "},
		{"curl without, a header of its own in lower case", []string{"-H", "x-ssl-cert: " + spoof}, "401 "},
		{"curl with another certificate, a header of its own", []string{"--cert", otherFile, "--key", otherKey, "-H", "X-SSL-CERT: " + spoof}, "401 "},
	} {
		args := append([]string{"-sS", "--cacert", caFile, "-H", "Authorization: Bearer " + bound, "-w", "%{http_code} ", "-o", filepath.Join(dir, "answer"), u}, tc.args...)
		out, err := exec.Command(curl, args...).CombinedOutput()
		body, _ := os.ReadFile(filepath.Join(dir, "answer"))
		got := string(out)
		if tc.want == "200 hello" {
			got += string(body)
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q (body %s)", tc.name, got, err, tc.want, body)
		}
	}
}
