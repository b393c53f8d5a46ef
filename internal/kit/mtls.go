package kit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/idsauth/idsauth/internal/certtest"
)

// Forwarding is where the route's proxies forward their clients'
// certificates: the header, and the proxies' addresses. A nil
// *Forwarding is no proxy.
type Forwarding struct {
	Header         string
	TrustedProxies []netip.Prefix
}

// MTLS is the table of a route that takes tokens bound to a client
// certificate (RFC 8705 §3), behind the proxies of fwd (nil: none). A
// token bound to a certificate gets past the middleware from a request
// whose TLS connection presented that certificate; with another
// certificate, none, or over plain HTTP as a plain bearer token it gets
// 401 invalid_token; without the route's scope, 403 insufficient_scope;
// a header that names the certificate, from an address that is no
// trusted proxy (the client's own), 401 invalid_token. With fwd, from a
// trusted proxy's address (the first of fwd.TrustedProxies): the
// certificate in the header gets past, another one gets 401, and the
// proxy's own connection certificate, even the token's, without the
// header, gets 401. client is the client's address: in process, one no
// proxy of fwd has (UntrustedAddr); "" for the sender's own.
func MTLS(tk Tokens, fwd *Forwarding, route string, need []string, client string) []Case {
	tok, mine := tk.CertificateBound(need)
	if tok.Skip != "" {
		return []Case{{Name: "certificate-bound tokens", Source: tok.Source, Skip: tok.Skip}}
	}
	other := tk.OtherCertificate()
	req := func(from string, conn Conn, cert *tls.Certificate, header string, token string) Request {
		r := NewRequest(route, "Bearer "+token)
		r.From, r.Conn, r.Cert = from, conn, cert
		if header != "" && fwd != nil {
			r.Header.Set(fwd.Header, header)
		}
		return r
	}
	passes := func(p *Problems, a Answer) {
		if a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
			p.Addf("status %d: the middleware refused the token with its certificate (body %q, WWW-Authenticate %q)", a.Status, a.Body, a.Header.Values("WWW-Authenticate"))
		}
	}
	invalid := func(p *Problems, a Answer) { p.OAuthError(a, http.StatusUnauthorized, "invalid_token") }
	// The client reaches the service directly, from an address no proxy
	// of fwd has.
	untrusted := client
	if untrusted == "" {
		untrusted = "the runner's own"
	}
	row := func(name string, r Request, check func(p *Problems, a Answer)) Case {
		return Case{Name: name, Source: tok.Source, Req: r, Token: tok.Value, Check: check}
	}
	scopeless := tk.CertificateBoundOtherScope(need, mine)
	lacks := Case{Name: "a certificate-bound token without the route's scope", Source: scopeless.Source, Skip: scopeless.Skip, Token: tok.Value, Check: func(p *Problems, a Answer) {
		p.OAuthError(a, http.StatusForbidden, "insufficient_scope")
	}}
	if scopeless.Skip == "" {
		lacks.Req = req(client, TLSConn, mine, "", scopeless.Value)
	}
	cases := []Case{
		row("a certificate-bound token with its certificate", req(client, TLSConn, mine, "", tok.Value), passes),
		row("a certificate-bound token with another certificate", req(client, TLSConn, other, "", tok.Value), invalid),
		row("a certificate-bound token over TLS without a certificate", req(client, TLSConn, nil, "", tok.Value), invalid),
		row("a certificate-bound token as a plain bearer token (no TLS)", req(client, PlainConn, nil, "", tok.Value), invalid),
		lacks,
	}
	header := forwarded(fwd, mine.Leaf)
	spoofed := req(client, TLSConn, nil, "", tok.Value)
	for _, name := range []string{"X-SSL-CERT", "X-Client-Cert", "X-ARR-ClientCert", "X-Forwarded-Client-Cert", "Client-Cert"} {
		spoofed.Header.Set(name, forwarded(&Forwarding{Header: name}, mine.Leaf))
	}
	if fwd != nil {
		spoofed.Header.Set(fwd.Header, header)
	}
	cases = append(cases, row("its certificate in a header from an address that is no trusted proxy ("+untrusted+")", spoofed, invalid))
	if fwd != nil && len(fwd.TrustedProxies) > 0 {
		proxy := netip.AddrPortFrom(fwd.TrustedProxies[0].Addr(), 443).String()
		cases = append(cases,
			row("its certificate forwarded by a trusted proxy", req(proxy, TLSConn, nil, header, tok.Value), passes),
			row("another certificate forwarded by a trusted proxy", req(proxy, TLSConn, nil, forwarded(fwd, other.Leaf), tok.Value), invalid),
			row("a trusted proxy's own connection certificate, without the header", req(proxy, TLSConn, mine, "", tok.Value), invalid),
		)
	}
	return cases
}

// forwarded is c as a proxy forwards it in fwd's header: Envoy's XFCC,
// RFC 9440's Client-Cert, or nginx's escaped PEM, which the other forms'
// readers take too.
func forwarded(fwd *Forwarding, c *x509.Certificate) string {
	pemText := url.PathEscape(string(certtest.PEM(c.Raw)))
	switch {
	case fwd != nil && strings.EqualFold(fwd.Header, "X-Forwarded-Client-Cert"):
		return `Cert="` + pemText + `"`
	case fwd != nil && strings.EqualFold(fwd.Header, "Client-Cert"):
		return ":" + base64.StdEncoding.EncodeToString(c.Raw) + ":"
	}
	return pemText
}

// UntrustedAddr is an address of the documentation's blocks (RFC 5737)
// that fwd (nil: no proxy) does not trust.
func UntrustedAddr(fwd *Forwarding) string {
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
