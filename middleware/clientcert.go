package middleware

import (
	"net/netip"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// ForwardedCert is how a TLS-terminating proxy in front of the service
// (nginx, Envoy, IIS ARR, a load balancer) passes on its client's
// certificate, so that RequireBearer checks certificate-bound tokens (RFC
// 8705 §3) behind it. A request from one of TrustedProxies gets its
// client certificate from Header, and never from its own connection,
// whose certificate is the proxy's; a request from any other address gets
// the connection's, and its Header is never read, so that a client
// reaching the service directly cannot name a certificate it does not
// hold.
//
// The proxy must set Header on every request, replacing or removing any
// the client sent: nginx's proxy_set_header does, and sends none when the
// client presented no certificate. The forms read (see Header) cover
// nginx, Apache, Envoy and IIS ARR.
type ForwardedCert struct {
	// Header is the request header the proxy sets ("X-SSL-CERT",
	// "X-ARR-ClientCert", "X-Forwarded-Client-Cert"...; the forms read:
	// docs/RESOURCE-SERVER.md). Twice, or without a certificate, is none.
	Header string
	// TrustedProxies are the addresses the proxies connect from: RemoteAddr
	// must be in one (IPv4-mapped as IPv4; a Unix socket's peer never is).
	// Required.
	TrustedProxies []netip.Prefix
}

// source is f as the certificates' reader takes it; the connection's
// certificate alone for a nil f. It panics, as a
// misconfiguration, on an f that internal/clientcert refuses: without a
// Header or TrustedProxies, or whose Header names what it must not.
func (f *ForwardedCert) source() clientcert.Source {
	if f == nil {
		return clientcert.Connections()
	}
	src, err := clientcert.NewSource(f.Header, f.TrustedProxies)
	if err != nil {
		panic("middleware: BearerConfig.ForwardedCert." + err.Error())
	}
	return src
}
