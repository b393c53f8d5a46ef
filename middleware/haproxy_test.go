package middleware_test

import (
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/haproxytest"
	"github.com/idsauth/idsauth/middleware"
)

// haproxyRecipe is the HAProxy block of docs/RESOURCE-SERVER.md, as a
// reader copies it, on the test's files and addresses.
func haproxyRecipe(t *testing.T, dir, backend string) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/RESOURCE-SERVER.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```haproxy\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/RESOURCE-SERVER.md has %d HAProxy blocks, want 1", len(blocks))
	}
	recipe := string(blocks[0][1])
	for _, s := range []string{"bind :443 ", "/etc/haproxy/", "10.0.0.7:8080"} {
		if !strings.Contains(recipe, s) {
			t.Fatalf("the recipe has no %q to replace:\n%s", s, recipe)
		}
	}
	return strings.NewReplacer("bind :443 ", "bind 127.0.0.1:{{port}} ", "/etc/haproxy/", dir+"/", "10.0.0.7:8080", backend).Replace(recipe)
}

// TestBehindHAProxy: a real HAProxy, configured as
// docs/RESOURCE-SERVER.md's recipe says, terminates TLS, asks its clients
// for a certificate (any), and forwards it as base64 DER to the API, which
// trusts the header from HAProxy's address alone. A token bound to a
// certificate passes with it, and not with another, none, or a header the
// client wrote itself. Without the recipe's del-header line, that header
// passes when the client presents no certificate: a client that holds a
// stolen token and the (public) certificate gets in, which is why the
// line is there.
func TestBehindHAProxy(t *testing.T) {
	w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{ForwardedCert: &middleware.ForwardedCert{
		Header:         "X-SSL-CERT",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	}}, nil)
	ca := certtest.NewCA(t, "haproxy")
	server := ca.Server(t)
	clients := certtest.NewCA(t, "clients")
	recipe := func(t *testing.T) (dir, conf string) {
		dir = t.TempDir()
		for name, data := range map[string][]byte{
			"api.pem":        append(certtest.PEM(server.Leaf.Raw), certtest.KeyPEM(t, server)...),
			"clients-ca.pem": certtest.PEM(clients.Cert.Raw),
		} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir, haproxyRecipe(t, dir, strings.TrimPrefix(w.srv.URL, "http://"))
	}
	// client presents cert whatever CAs HAProxy names (as curl does): the
	// recipe takes any certificate.
	client := func(cert *tls.Certificate) *http.Client {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	bound := w.token(t, &w.mine)
	spoof := base64.StdEncoding.EncodeToString(w.mine.Leaf.Raw) // as HAProxy forwards it

	t.Run("the recipe", func(t *testing.T) {
		dir, conf := recipe(t)
		hp := haproxytest.Start(t, dir, conf)
		u := "https://" + hp.Addr + "/admin"
		if a := get(t, client(&w.mine), u, bound); a.status != 200 || a.body != "hello" {
			t.Fatalf("its certificate through HAProxy: %d %s\nhaproxy: %s", a.status, a.body, hp.Log())
		}
		wantInvalidToken(t, "another certificate", get(t, client(&w.other), u, bound), "token is bound to another client certificate")
		wantInvalidToken(t, "no certificate", get(t, client(nil), u, bound), "token is bound to a key")
		wantInvalidToken(t, "a header of the client's own", get(t, client(nil), u, bound, "X-SSL-CERT", spoof), "token is bound to a key")
		wantInvalidToken(t, "a header of the client's own in lower case", get(t, client(nil), u, bound, "x-ssl-cert", spoof), "token is bound to a key")
		wantInvalidToken(t, "a header of the client's own beside another certificate", get(t, client(&w.other), u, bound, "X-SSL-CERT", spoof), "token is bound to another client certificate")
	})
	t.Run("without del-header", func(t *testing.T) {
		dir, conf := recipe(t)
		without := regexp.MustCompile(`(?m)^\s*http-request del-header .*\n`).ReplaceAllString(conf, "")
		if without == conf {
			t.Fatalf("the recipe has no del-header line:\n%s", conf)
		}
		hp := haproxytest.Start(t, dir, without)
		if a := get(t, client(nil), "https://"+hp.Addr+"/admin", bound, "X-SSL-CERT", spoof); a.status != 200 {
			t.Fatalf("without del-header, a header of the client's own: %d %s, want it let through (or this test shows nothing)", a.status, a.body)
		}
	})
}
