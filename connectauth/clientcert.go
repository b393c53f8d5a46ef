package connectauth

import (
	"context"
	"net/http"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// ClientCertificate wraps the Connect handler h (the http.Handler
// connect's NewXxxHandler returns) so that its calls carry, to the
// interceptor, the client certificate of their TLS connection (mutual
// TLS, RFC 8705): a token bound to a certificate (cnf "x5t#S256") is then
// accepted with that certificate alone, and refused with another or none
// ("invalid_token: wrong_certificate", "invalid_token: bound_token"), as
// on an HTTP route. A Connect interceptor does not see the connection;
// without this wrapper every call counts as presenting no certificate.
// The certificate's thumbprint is computed once per connection.
//
//	mux.Handle(path, auth.ClientCertificate(handler))
func (i *Interceptor) ClientCertificate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			r = r.WithContext(context.WithValue(r.Context(), certKey{}, clientcert.Of(r.TLS.PeerCertificates[0])))
		}
		h.ServeHTTP(w, r)
	})
}

type certKey struct{}

// peerCertificate is the thumbprint ClientCertificate put in ctx, or "".
func peerCertificate(ctx context.Context) string {
	s, _ := ctx.Value(certKey{}).(string)
	return s
}
