package idsauthtest_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestCheckProtectedMTLS: the library's own chain passes every mutual
// TLS case, with a proxy's header and without; a chain that lets a
// certificate-bound token through as a bearer token, or that trusts the
// header from anywhere, is reported on the case that shows it.
func TestCheckProtectedMTLS(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	route := "GET /webapi/api/v3/demo/Admin/Users"
	chain := func(v accesstoken.TokenValidator, fwd *middleware.ForwardedCert) http.Handler {
		return alice.New(middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ForwardedCert: fwd}), middleware.RequireScope(scope.AdminWebAPI)).Then(ok)
	}
	nginx := &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}
	envoy := &middleware.ForwardedCert{Header: "X-Forwarded-Client-Cert", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}
	for name, fwd := range map[string]*middleware.ForwardedCert{"the connection's": nil, "nginx's header": nginx, "Envoy's, its proxy in TEST-NET-1": envoy} {
		rec := &recorder{TB: t}
		iss.CheckProtectedMTLS(rec, chain(iss.Validator(), fwd), fwd, route, scope.AdminWebAPI)
		if len(rec.errs) > 0 {
			t.Errorf("%s: the library's own chain was reported:\n%s", name, rec.report())
		}
	}
	for name, c := range map[string]struct {
		h    http.Handler
		said *middleware.ForwardedCert
		want string
	}{
		"bound tokens as bearer tokens": {chain(blindValidator(t, iss), nil), nil, "a certificate-bound token over TLS without a certificate: status 200, want 401"},
		"a header trusted from anywhere": {chain(iss.Validator(), &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}), nginx,
			"its certificate in a header from an address that is no trusted proxy (192.0.2.1:40000): status 200, want 401"},
		"no header read": {chain(iss.Validator(), nil), nginx, "its certificate forwarded by a trusted proxy: status 401"},
	} {
		rec := &recorder{TB: t}
		iss.CheckProtectedMTLS(rec, c.h, c.said, route, scope.AdminWebAPI)
		if !strings.Contains(rec.report(), c.want) {
			t.Errorf("%s: not reported: %q\nreport:\n%s", name, c.want, rec.report())
		}
	}
	// The token is the one a client presenting the certificate gets.
	cert := iss.ClientCertificate(t)
	c, err := iss.Validator().Validate(context.Background(), iss.CertificateBoundToken(t, cert.Leaf, scope.AdminWebAPI), accesstoken.Presentation{CertThumbprint: thumbprint(cert.Leaf)})
	if err != nil || c.X5T == "" {
		t.Fatalf("%+v %v", c, err)
	}
	var ve *accesstoken.ValidationError
	if _, err := iss.Validator().Validate(context.Background(), iss.CertificateBoundToken(t, cert.Leaf, scope.AdminWebAPI), accesstoken.Presentation{}); !errors.As(err, &ve) || ve.Code != "bound_token" {
		t.Fatalf("without its certificate: %v", err)
	}
}

// blind is a validator that reads no presentation and lets bound tokens
// through, forgetting their binding: what a route must not do.
type blind struct{ v *accesstoken.Validator }

func (b blind) Validate(_ context.Context, tok string, _ accesstoken.Presentation) (*accesstoken.Claims, error) {
	c, err := b.v.Validate(context.Background(), tok, accesstoken.Presentation{})
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.X5T = ""
	return &cp, nil
}

func blindValidator(t *testing.T, iss *idsauthtest.Issuer) blind {
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.Audience}, Keys: iss.Issuer, AllowBoundTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	return blind{v}
}

func thumbprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// A route that takes certificate-bound tokens (RFC 8705), here behind
// nginx, passes every mutual TLS case; in a test, pass t.
func ExampleIssuer_CheckProtectedMTLS() {
	t := &printer{}
	defer t.close()
	iss := idsauthtest.NewIssuer(t)
	fwd := &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32")}}
	h := alice.New(middleware.RequireBearerWithConfig(iss.Validator(), middleware.BearerConfig{ForwardedCert: fwd}),
		middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(listUsers)
	iss.CheckProtectedMTLS(t, h, fwd, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	fmt.Println("checked")
	// Output: checked
}
