package connectauth_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/scope"
)

// TestBehindNginx: a real nginx terminates TLS, asks its clients for a
// certificate and forwards it ($ssl_client_escaped_cert) to the Connect
// handler, which trusts the header from nginx's address alone
// (Config.ForwardedCert). A token bound to a certificate passes with it,
// unary and streaming, and not with another, none, or a header the
// client wrote itself: nginx replaces it.
func TestBehindNginx(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{
		Validator:     iss.Validator(),
		DefaultScopes: []string{scope.AdminWebAPI},
		ForwardedCert: &connectauth.ForwardedCert{
			Header:         "X-SSL-CERT",
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		},
	})
	backend := serve(t, auth.ClientCertificate(handlers(connect.WithInterceptors(auth))))

	dir := t.TempDir()
	ca := certtest.NewCA(t, "nginx")
	server := ca.Server(t)
	for name, data := range map[string][]byte{"server.pem": certtest.PEM(server.Leaf.Raw), "server-key.pem": certtest.KeyPEM(t, server)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ngx := nginxtest.Start(t, dir, `
	server {
		listen 127.0.0.1:{{port}} ssl;
		ssl_certificate {{dir}}/server.pem;
		ssl_certificate_key {{dir}}/server-key.pem;
		ssl_verify_client optional_no_ca;
		location / {
			proxy_pass `+backend+`;
			proxy_http_version 1.1;
			proxy_set_header X-SSL-CERT $ssl_client_escaped_cert;
		}
	}`)

	mine, other := iss.ClientCertificate(t), iss.ClientCertificate(t)
	bound := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	spoof := strings.ReplaceAll(string(certtest.PEM(mine.Leaf.Raw)), "\n", "%0A")
	newClients := func(cert *tls.Certificate) clients {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		base := "https://" + ngx.Addr
		return clients{
			say:   connect.NewClient[str, str](hc, base+sayProcedure),
			count: connect.NewClient[num, str](hc, base+countProcedure),
		}
	}
	ctx := func(header string) context.Context {
		ctx, info := connect.NewClientContext(context.Background())
		info.RequestHeader().Set("Authorization", "Bearer "+bound)
		if header != "" {
			info.RequestHeader().Set("X-SSL-CERT", header)
		}
		return ctx
	}
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		header string
		want   string // "" passes
	}{
		{"its certificate", &mine, "", ""},
		{"another certificate", &other, "", "invalid_token: wrong_certificate"},
		{"no certificate", nil, "", "invalid_token: bound_token"},
		{"a header of the client's own", nil, spoof, "invalid_token: bound_token"},
		{"a header of the client's own beside another certificate", &other, spoof, "invalid_token: wrong_certificate"},
	} {
		c := newClients(tc.cert)
		for kind, call := range map[string]func(context.Context) error{"unary": c.unary, "server-streaming": c.serverStream} {
			err := call(ctx(tc.header))
			if (tc.want == "") != (err == nil) || (err != nil && (connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), tc.want))) {
				t.Errorf("%s, %s: %v, want %q\nnginx: %s", tc.name, kind, err, tc.want, ngx.Log())
			}
		}
	}

	_, err := connectauth.New(connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI},
		ForwardedCert: &connectauth.ForwardedCert{Header: "X-SSL-CERT"}})
	if err == nil || !strings.HasPrefix(err.Error(), "connectauth.Config.ForwardedCert.TrustedProxies") {
		t.Errorf("a ForwardedCert without proxies: %v, want an error naming the field", err)
	}
}
