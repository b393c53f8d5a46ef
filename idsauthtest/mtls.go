package idsauthtest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/middleware"
)

// ClientCertificate returns a new self-signed client certificate (CN
// idsauthtest-client, clientAuth, valid for a day) with its key: what a
// client presents over mutual TLS (RFC 8705), for CertificateBoundToken
// and for a TLS client of your own (tls.Config.Certificates).
func (i *Issuer) ClientCertificate(t TB) tls.Certificate {
	t.Helper()
	return certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "idsauthtest-client"}})
}

// CertificateBoundToken returns a token for scopes bound to cert (cnf
// "x5t#S256", RFC 8705 §3.1), as the token endpoint issues it to a client
// that presents cert over mutual TLS: a route takes it only from a request
// that presents cert too.
func (i *Issuer) CertificateBoundToken(t TB, cert *x509.Certificate, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["cnf"] = map[string]string{"x5t#S256": clientcert.Thumbprint(cert.Raw)}
	return i.Mint(t, c)
}

// CheckProtectedMTLS runs the mutual TLS cases (RFC 8705 §3) for a route
// against h, whose RequireBearer has BearerConfig.ForwardedCert fwd (nil
// without one), and reports with t.Errorf each case h answers wrongly. A
// token bound to a client certificate gets past the middleware from a
// request whose TLS connection presented that certificate; with another
// certificate, none, or over plain HTTP as a plain bearer token it gets
// 401 invalid_token; without the route's scope, 403 insufficient_scope; a
// header that names the certificate, from an address that is no trusted
// proxy (of TEST-NET-1, -2 or -3, whichever fwd does not trust: the
// client's address in every case), gets 401 invalid_token. With fwd, from a trusted proxy's address (the first of
// fwd.TrustedProxies): the certificate in the header gets past, another
// one gets 401, and the proxy's own connection certificate, even the
// token's, without the header, gets 401. No answer echoes the token.
// Requests are served in process, with their TLS state and RemoteAddr
// set as a connection would set them. route is "METHOD /path", as for
// CheckProtected.
func (i *Issuer) CheckProtectedMTLS(t TB, h http.Handler, fwd *middleware.ForwardedCert, route string, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("idsauthtest: CheckProtectedMTLS needs the scopes the route requires")
	}
	mine, other := i.ClientCertificate(t).Leaf, i.ClientCertificate(t).Leaf
	tok := i.CertificateBoundToken(t, mine, need...)
	req := func(remote string, conn *x509.Certificate, header string, token string) *http.Request {
		r := newRequest(t, route, "Bearer "+token)
		r.RemoteAddr = remote
		r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true}
		if conn != nil {
			r.TLS.PeerCertificates = []*x509.Certificate{conn}
		}
		if header != "" && fwd != nil {
			r.Header.Set(fwd.Header, header)
		}
		return r
	}
	plain := func(r *http.Request) *http.Request { r.TLS = nil; return r }
	passes := func(p *problems, a answer) {
		if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
			p.addf("status %d: the middleware refused the token with its certificate (body %q, WWW-Authenticate %q)", a.status, a.body, a.header.Values("WWW-Authenticate"))
		}
	}
	invalid := func(p *problems, a answer) { p.oauthError(a, http.StatusUnauthorized, "invalid_token") }
	// The client reaches the service directly, from an address no proxy
	// of fwd has.
	untrusted := untrustedAddr(fwd)
	client := untrusted
	type row struct {
		name  string
		req   *http.Request
		check func(p *problems, a answer)
	}
	rows := []row{
		{"a certificate-bound token with its certificate", req(client, mine, "", tok), passes},
		{"a certificate-bound token with another certificate", req(client, other, "", tok), invalid},
		{"a certificate-bound token over TLS without a certificate", req(client, nil, "", tok), invalid},
		{"a certificate-bound token as a plain bearer token (no TLS)", plain(req(client, nil, "", tok)), invalid},
		{"a certificate-bound token without the route's scope", req(client, mine, "", i.CertificateBoundToken(t, mine, i.otherScope(need))), func(p *problems, a answer) {
			p.oauthError(a, http.StatusForbidden, "insufficient_scope")
		}},
	}
	header := forwarded(fwd, mine)
	spoofed := req(untrusted, nil, "", tok)
	for _, name := range []string{"X-SSL-CERT", "X-Client-Cert", "X-ARR-ClientCert", "X-Forwarded-Client-Cert"} {
		spoofed.Header.Set(name, forwarded(&middleware.ForwardedCert{Header: name}, mine))
	}
	if fwd != nil {
		spoofed.Header.Set(fwd.Header, header)
	}
	rows = append(rows, row{"its certificate in a header from an address that is no trusted proxy (" + untrusted + ")", spoofed, invalid})
	if fwd != nil && len(fwd.TrustedProxies) > 0 {
		proxy := netip.AddrPortFrom(fwd.TrustedProxies[0].Addr(), 443).String()
		rows = append(rows,
			row{"its certificate forwarded by a trusted proxy", req(proxy, nil, header, tok), passes},
			row{"another certificate forwarded by a trusted proxy", req(proxy, nil, forwarded(fwd, other), tok), invalid},
			row{"a trusted proxy's own connection certificate, without the header", req(proxy, mine, "", tok), invalid},
		)
	}
	for _, r := range rows {
		a := serve(h, r.req)
		var p problems
		r.check(&p, a)
		p.refusal(a, tok)
		for _, msg := range p {
			t.Errorf("CheckProtectedMTLS %s: %s: %s", route, r.name, msg)
		}
	}
}

// forwarded is c as a proxy forwards it in fwd's header: Envoy's XFCC, or
// nginx's escaped PEM, which the other forms' readers take too.
func forwarded(fwd *middleware.ForwardedCert, c *x509.Certificate) string {
	pemText := url.PathEscape(string(certtest.PEM(c.Raw)))
	if fwd != nil && strings.EqualFold(fwd.Header, "X-Forwarded-Client-Cert") {
		return `Cert="` + pemText + `"`
	}
	return pemText
}

// untrustedAddr is an address of the documentation's blocks (RFC 5737)
// that fwd does not trust.
func untrustedAddr(fwd *middleware.ForwardedCert) string {
	for _, a := range []string{"192.0.2.1", "198.51.100.1", "203.0.113.1"} {
		ip := netip.MustParseAddr(a)
		trusted := false
		if fwd != nil {
			for _, p := range fwd.TrustedProxies {
				trusted = trusted || p.Contains(ip)
			}
		}
		if !trusted {
			return a + ":40000"
		}
	}
	return "[2001:db8::1]:40000"
}
