package connectauth_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestCertificateBoundTokensOverConnect: behind ClientCertificate, a
// token bound to a client certificate (RFC 8705) is accepted on a call
// over a TLS connection that presented it, and refused with another
// certificate or none; without the wrapper, the interceptor sees no
// certificate and refuses the token as bound.
func TestCertificateBoundTokensOverConnect(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth := newAuth(t, connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	mine, other := iss.ClientCertificate(t), iss.ClientCertificate(t)
	tok := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	for _, wrapped := range []bool{true, false} {
		var h http.Handler = handlers(connect.WithInterceptors(auth))
		if wrapped {
			h = auth.ClientCertificate(h)
		}
		srv := httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		srv.StartTLS()
		defer srv.Close()
		call := func(cert *tls.Certificate) error {
			tr := srv.Client().Transport.(*http.Transport).Clone()
			if cert != nil {
				tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
			}
			req := connect.NewRequest(wrapperspb.String("hi"))
			req.Header().Set("Authorization", "Bearer "+tok)
			_, err := connect.NewClient[str, str](&http.Client{Transport: tr}, srv.URL+sayProcedure).CallUnary(context.Background(), req)
			return err
		}
		for name, c := range map[string]struct {
			cert *tls.Certificate
			want string // "" passes
		}{
			"its certificate":     {&mine, map[bool]string{true: "", false: "invalid_token: bound_token"}[wrapped]},
			"another certificate": {&other, map[bool]string{true: "invalid_token: wrong_certificate", false: "invalid_token: bound_token"}[wrapped]},
			"no certificate":      {nil, "invalid_token: bound_token"},
		} {
			err := call(c.cert)
			if (c.want == "") != (err == nil) || (err != nil && (connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), c.want))) {
				t.Errorf("wrapped %v, %s: %v, want %q", wrapped, name, err, c.want)
			}
		}
	}
}
