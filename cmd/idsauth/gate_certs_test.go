package main

import (
	"crypto/tls"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/scope"
)

// TestGateCertificatesBehindProxies: a token bound to a client
// certificate (RFC 8705) passes a real nginx (which forwards the
// certificate it verified as $ssl_client_escaped_cert), a real HAProxy
// and a real Caddy (RFC 9440's Client-Cert, set by the recipes) with that
// certificate, and
// not with another, none, or a forwarding header the client wrote itself
// (the proxy replaces it; from no trusted address would the gate read
// it).
func TestGateCertificatesBehindProxies(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	mine, other := iss.ClientCertificate(t), iss.ClientCertificate(t)
	bound := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	for _, p := range []struct {
		name, header string
		start        func(t *testing.T, gateConfig func(host string) string) *behind
		spoof        string // the header as the client would forge it
	}{
		{"nginx", "X-SSL-Cert", startBehindNginx, url.PathEscape(string(certtest.PEM(mine.Leaf.Raw)))},
		{"haproxy", "Client-Cert", startBehindHAProxy, ":" + base64.StdEncoding.EncodeToString(mine.Leaf.Raw) + ":"},
		{"caddy", "Client-Cert", startBehindCaddy, ":" + base64.StdEncoding.EncodeToString(mine.Leaf.Raw) + ":"},
	} {
		t.Run(p.name, func(t *testing.T) {
			b := p.start(t, func(host string) string {
				return gateFile(t, iss, func(c map[string]any) {
					c["scheme"] = "https"
					c["routes"] = []any{map[string]any{"name": "admin", "host": host, "pathPrefix": "/webapi/api/v3", "scopes": []string{scope.AdminWebAPI}, "audience": []string{iss.Audience}}}
					c["certificates"] = map[string]any{"header": p.header}
				})
			})
			for _, c := range []struct {
				name   string
				cert   *tls.Certificate
				spoof  bool
				status int
				desc   string
			}{
				{"its certificate", &mine, false, 200, ""},
				{"another certificate", &other, false, 401, "token is bound to another client certificate"},
				{"none", nil, false, 401, "token is bound to a key"},
				{"none, and the header of the client's own", nil, true, 401, "token is bound to a key"},
				{"another, and the header of the client's own", &other, true, 401, "token is bound to another client certificate"},
			} {
				h := []string{"Authorization: Bearer " + bound}
				if c.spoof {
					h = append(h, p.header+": "+p.spoof)
				}
				resp, body := b.rawWith(t, c.cert, "GET", "/webapi/api/v3/demo/Admin/Users", h...)
				if resp.StatusCode != c.status || !strings.Contains(body, c.desc) {
					t.Errorf("%s: %d %s, want %d %q\n%s", c.name, resp.StatusCode, body, c.status, c.desc, b.log())
				}
			}
		})
	}
}

// TestGateDownFailsClosed: with the gate down, every proxy of the recipes
// refuses: nginx 500, HAProxy's action 503, Caddy 502; never the upstream.
func TestGateDownFailsClosed(t *testing.T) {
	iss := testIssuer(t)
	good := runnerToken(t, iss, "runner", "pd_AdminWebApi")
	for _, p := range []struct {
		name  string
		start func(t *testing.T, gateConfig func(host string) string) *behind
		want  int
	}{{"nginx", startBehindNginx, 500}, {"haproxy", startBehindHAProxy, 503}, {"caddy", startBehindCaddy, 502}} {
		t.Run(p.name, func(t *testing.T) {
			b := p.start(t, func(host string) string { return issuerGate(t, iss.URL(), host, nil) })
			b.gsrv.Close()
			if resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: Bearer "+good); resp.StatusCode != p.want {
				t.Errorf("the gate down: %d %s, want %d", resp.StatusCode, body, p.want)
			}
		})
	}
}
