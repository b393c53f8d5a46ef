package idsauthtest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/kit"
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
	var kf *kit.Forwarding
	if fwd != nil {
		kf = &kit.Forwarding{Header: fwd.Header, TrustedProxies: fwd.TrustedProxies}
	}
	report(t, h, "CheckProtectedMTLS "+route, kit.MTLS(tokens{i, t}, kf, route, need, kit.UntrustedAddr(kf)))
}
