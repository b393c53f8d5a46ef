package issuer

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// MTLSConfig configures mutual TLS (RFC 8705) at the issuer: client
// authentication by certificate (ClientConfig.TLSClientAuth and
// CertificateThumbprints) and tokens bound to the certificate a token
// request presents. The TLS server in front of the issuer asks the
// clients for their certificates (Go's tls.RequestClientCert, or a proxy
// that forwards them): the issuer reads the certificate of the
// connection, or CertificateHeader from TrustedProxies, and checks
// chains itself.
type MTLSConfig struct {
	// ClientCAs are PEM files of the certificate authorities whose
	// certificates tls_client_auth clients present: a client's certificate
	// must chain to one of them (through the intermediates it sends).
	// New and Reload read them; a relative path is read from Config.Dir.
	ClientCAs []string
	// ClientCACerts are more of them, for a Config built in code.
	ClientCACerts []*x509.Certificate
	// Alias is the issuer URL at a listener of its own that asks clients
	// for a certificate, such as "https://mtls.example.com/ids": the
	// discovery document then names its token, introspection and
	// revocation endpoints in mtls_endpoint_aliases (RFC 8705 §5), which
	// mutual TLS clients use, so that the main listener need not ask
	// anyone for a certificate. An https URL whose path is the issuer
	// URL's; the issuer serves it as its own (a DPoP proof may name
	// either). Empty: no alias.
	Alias string
	// CertificateHeader is the request header in which a TLS-terminating
	// proxy in front of the issuer forwards its client's certificate, in
	// one of the forms middleware.ForwardedCert reads (nginx's
	// $ssl_client_escaped_cert, PEM, base64 DER, Envoy's XFCC). It is
	// read only from TrustedProxies, and from them alone: their own
	// connection certificate is not their client's. Set both or neither.
	CertificateHeader string
	TrustedProxies    []netip.Prefix
}

// TLSClientAuth names the certificate of a tls_client_auth client (RFC
// 8705 §2.1.2): set exactly one field.
type TLSClientAuth struct {
	// SubjectDN is its subject, in RFC 4514's form, the most specific RDN
	// first ("CN=demo-mtls,O=Example"); .NET's form, as IdentityServer's
	// X509Name secrets hold it ("CN=demo-mtls, O=Example"), is read too.
	// Types match by OID and values exactly, case included.
	SubjectDN string
	// SANDNS, SANURI and SANEmail are a dNSName, a
	// uniformResourceIdentifier or an rfc822Name it holds among its
	// subject alternative names: DNS names without regard to case, an
	// email's domain too, a URI exactly.
	SANDNS   string
	SANURI   string
	SANEmail string
	// SANIP is an iPAddress it holds, compared as an address (RFC 5952
	// §8): "2001:db8::1" is "2001:0db8:0:0:0:0:0:1".
	SANIP string
}

// set reports whether any field of a is set.
func (a TLSClientAuth) set() bool { return a != TLSClientAuth{} }

// certAuth is how a client authenticates by certificate, compiled.
type certAuth struct {
	// tls_client_auth: one of these, set by TLSClientAuth.
	pki         bool
	subject     clientcert.DN
	dns, uri    string
	email       string
	ip          netip.Addr
	thumbprints []string // self_signed_tls_client_auth, as x5t#S256
}

// maxThumbprints bounds a client's CertificateThumbprints.
const maxThumbprints = 8

// compileCertAuth checks the certificate credentials of a client or an
// API resource, f naming it, and returns them: nil for none.
func compileCertAuth(f string, a TLSClientAuth, thumbprints []string, haveCAs bool) (*certAuth, error) {
	if !a.set() && len(thumbprints) == 0 {
		return nil, nil
	}
	ca := &certAuth{}
	if a.set() {
		n := 0
		for _, v := range []string{a.SubjectDN, a.SANDNS, a.SANURI, a.SANEmail, a.SANIP} {
			if v != "" {
				n++
			}
		}
		f := f + ".tlsClientAuth"
		var err error
		switch {
		case n > 1:
			return nil, fieldErr(f, "set one of subjectDn, sanDns, sanUri, sanIp and sanEmail (RFC 8705 §2.1.2: exactly one)")
		case !haveCAs:
			return nil, fieldErr(f, "needs mtls.clientCAs: the CAs its certificate must chain to")
		case a.SubjectDN != "":
			if ca.subject, err = clientcert.ParseDN(a.SubjectDN); err != nil {
				return nil, fieldErr(f+".subjectDn", "%v", err)
			}
		case a.SANDNS != "":
			ca.dns = strings.ToLower(strings.TrimSuffix(a.SANDNS, "."))
		case a.SANURI != "":
			if u, err := url.Parse(a.SANURI); err != nil || !u.IsAbs() {
				return nil, fieldErr(f+".sanUri", "want an absolute URI, got %q", a.SANURI)
			}
			ca.uri = a.SANURI
		case a.SANEmail != "":
			if local, domain, ok := strings.Cut(a.SANEmail, "@"); !ok || local == "" || domain == "" {
				return nil, fieldErr(f+".sanEmail", "want an address such as svc@example.com, got %q", a.SANEmail)
			}
			ca.email = a.SANEmail
		case a.SANIP != "":
			if ca.ip, err = netip.ParseAddr(a.SANIP); err != nil || ca.ip.Zone() != "" {
				return nil, fieldErr(f+".sanIp", "want an IPv4 or IPv6 address, got %q", a.SANIP)
			}
			ca.ip = ca.ip.Unmap()
		}
		ca.pki = true
	}
	if len(thumbprints) > maxThumbprints {
		return nil, fieldErr(f+".certificateThumbprints", "more than %d", maxThumbprints)
	}
	for i, t := range thumbprints {
		x5t, err := parseThumbprint(t)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s.certificateThumbprints[%d]", f, i), "%v", err)
		}
		ca.thumbprints = append(ca.thumbprints, x5t)
	}
	return ca, nil
}

// parseThumbprint reads a certificate's SHA-256 thumbprint, as x5t#S256
// writes it or openssl prints it, into the x5t#S256 form.
func parseThumbprint(t string) (string, error) {
	if len(t) == 43 {
		if b, err := base64.RawURLEncoding.DecodeString(t); err == nil && len(b) == 32 {
			return t, nil
		}
	}
	h := strings.ReplaceAll(t, ":", "")
	b, err := hex.DecodeString(h)
	switch {
	case err == nil && len(b) == 32:
		return base64.RawURLEncoding.EncodeToString(b), nil
	case err == nil && len(b) == 20:
		return "", fmt.Errorf("a SHA-1 thumbprint (as IdentityServer's X509Thumbprint secrets hold): give the SHA-256 one, which openssl x509 -noout -fingerprint -sha256 prints")
	}
	return "", fmt.Errorf("want a SHA-256 thumbprint: 43 base64url characters (x5t#S256) or 64 hex digits, got %d characters", len(t))
}

// mtlsState is what MTLSConfig decides, compiled.
type mtlsState struct {
	pool      *x509.CertPool // nil without CAs
	source    clientcert.Source
	forwarded bool   // a proxy forwards certificates in a header (source reads it)
	verified  bool   // the TLS server refuses certificates outside its CAs (WithHandshakeVerification)
	alias     string // the alias issuer URL, without a trailing slash; "" none
	enabled   bool   // discovery speaks of mutual TLS
}

// selfSignedReach reports whether a self-signed client certificate can
// reach the issuer (self_signed_tls_client_auth, RFC 8705 §2.2): from a
// TLS server that takes any certificate, or from a proxy, whose
// handshake the issuer does not see.
func (m *mtlsState) selfSignedReach() bool { return !m.verified || m.forwarded }

// check checks m's fields, those the file names under "mtls", for an
// issuer at issuerURL.
func (m MTLSConfig) check(issuerURL *url.URL) (mtlsState, error) {
	st := mtlsState{enabled: len(m.ClientCAs) > 0 || len(m.ClientCACerts) > 0 || m.Alias != ""}
	for i, c := range m.ClientCACerts {
		if c == nil {
			return st, fieldErr(fmt.Sprintf("mtls.clientCACerts[%d]", i), "nil")
		}
	}
	if m.Alias != "" {
		u, err := url.Parse(m.Alias)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			strings.TrimSuffix(u.Path, "/") != strings.TrimSuffix(issuerURL.Path, "/") {
			return st, fieldErr("mtls.alias", "want an https URL whose path is the issuer's (%q), without query or fragment, got %q", issuerURL.Path, m.Alias)
		}
		st.alias = strings.TrimSuffix(m.Alias, "/")
	}
	if m.CertificateHeader == "" && len(m.TrustedProxies) == 0 {
		return st, nil
	}
	src, err := clientcert.NewSource(m.CertificateHeader, m.TrustedProxies)
	if se := (*clientcert.SettingError)(nil); errors.As(err, &se) {
		field := "mtls.trustedProxies"
		if se.Field == "Header" {
			field = "mtls.certificateHeader"
		}
		return st, fieldErr(field, "%s", se.Reason)
	}
	st.source, st.forwarded = src, true
	return st, nil
}

// loadCAs reads the CA files, from dir when relative, into a pool with
// the CAs given in code; nil when there are none.
func (m MTLSConfig) loadCAs(dir string) (*x509.CertPool, error) {
	if len(m.ClientCAs) == 0 && len(m.ClientCACerts) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range m.ClientCACerts {
		pool.AddCert(c)
	}
	for i, path := range m.ClientCAs {
		f := fmt.Sprintf("mtls.clientCAs[%d]", i)
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, causeErr(f, err)
		}
		n := 0
		for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fieldErr(f, "%s: %v", path, err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, fieldErr(f, "%s holds no PEM certificate", path)
		}
	}
	return pool, nil
}
