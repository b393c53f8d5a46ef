package connectauth

import (
	"context"
	"net/http"
	"net/netip"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// ForwardedCert is how a TLS-terminating proxy in front of the handler
// (nginx, Envoy, IIS ARR, a load balancer) passes on its client's
// certificate, with the same rule as an HTTP route's
// (middleware.ForwardedCert): a call from one of TrustedProxies gets its
// certificate from Header alone, never from its own connection, whose
// certificate is the proxy's; a call from any other address gets its
// connection's, and its Header is never read. The forms read and the
// proxies' settings: docs/RESOURCE-SERVER.md.
type ForwardedCert struct {
	// Header is the request header the proxy sets on every call, such as
	// "X-SSL-CERT" for nginx's $ssl_client_escaped_cert, or
	// "X-Forwarded-Client-Cert" (Envoy). Required.
	Header string
	// TrustedProxies are the addresses the proxies connect from, such as
	// 10.0.0.5/32. Required.
	TrustedProxies []netip.Prefix
}

// ClientCertificate wraps the Connect handler h (the http.Handler
// connect's NewXxxHandler returns) so that its calls carry, to the
// interceptor, the client certificate of their TLS connection (mutual
// TLS, RFC 8705), or the one Config.ForwardedCert's proxy forwards: a
// token bound to a certificate (cnf "x5t#S256") is then accepted with
// that certificate alone, and refused with another or none
// ("invalid_token: wrong_certificate", "invalid_token: bound_token"), as
// on an HTTP route. A Connect interceptor does not see the request;
// without this wrapper every call counts as presenting no certificate.
// The certificate's thumbprint is computed once per connection (or per
// forwarded value).
//
//	mux.Handle(path, auth.ClientCertificate(handler))
func (i *Interceptor) ClientCertificate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x5t := i.certs.Thumbprint(r); x5t != "" {
			r = r.WithContext(context.WithValue(r.Context(), certKey{}, x5t))
		}
		h.ServeHTTP(w, r)
	})
}

// source is f as the certificates' reader takes it: the connection's
// certificate alone for a nil f.
func (f *ForwardedCert) source() (clientcert.Source, error) {
	if f == nil {
		return clientcert.Connections(), nil
	}
	return clientcert.NewSource(f.Header, f.TrustedProxies)
}

type certKey struct{}

// peerCertificate is the thumbprint ClientCertificate put in ctx, or "".
func peerCertificate(ctx context.Context) string {
	s, _ := ctx.Value(certKey{}).(string)
	return s
}
