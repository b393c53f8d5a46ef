package middleware_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// mtlsWorld is an API over TLS that asks its clients for a certificate
// (any: possession is what a binding needs), and tokens bound to one.
type mtlsWorld struct {
	srv         *httptest.Server
	key         *keys.Key
	mine, other tls.Certificate // two clients' certificates
}

// newMTLSWorld serves the API over TLS with tlsConfig, or plain HTTP
// without one.
func newMTLSWorld(t *testing.T, cfg accesstoken.Config, bc middleware.BearerConfig, tlsConfig *tls.Config) *mtlsWorld {
	t.Helper()
	k := jwktest.NewKey(t, "ES256")
	cfg.Issuer, cfg.Keys = iss, newCountingKeys(k)
	v := newValidator(t, cfg)
	h := middleware.RequireBearerWithConfig(v, bc)(middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	})))
	srv := httptest.NewUnstartedServer(h)
	if tlsConfig != nil {
		srv.TLS = tlsConfig
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	ca := certtest.NewCA(t, "clients")
	return &mtlsWorld{srv: srv, key: k, mine: ca.Issue(t, certtest.Leaf{}), other: certtest.SelfSigned(t, certtest.Leaf{})}
}

// askForCertificates is a server's TLS configuration that asks clients
// for a certificate, any.
func askForCertificates() *tls.Config { return &tls.Config{ClientAuth: tls.RequestClientCert} }

// token is a token for pd_AdminWebApi bound to c (nil: to nothing).
func (w *mtlsWorld) token(t *testing.T, c *tls.Certificate) string {
	claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	if c != nil {
		claims["cnf"] = map[string]any{"x5t#S256": clientcert.Thumbprint(c.Leaf.Raw)}
	}
	return jwktest.Sign(t, w.key, nil, claims)
}

// client is an HTTP client of the world's server presenting cert (nil:
// none), on connections of its own.
func (w *mtlsWorld) client(cert *tls.Certificate) *http.Client {
	tr := w.srv.Client().Transport.(*http.Transport).Clone()
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, u, token string, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// wantInvalidToken checks a 401 invalid_token answer with description.
func wantInvalidToken(t *testing.T, name string, a answer, description string) {
	t.Helper()
	if a.status != http.StatusUnauthorized {
		t.Errorf("%s: status %d %s, want 401", name, a.status, a.body)
		return
	}
	if m := a.json(t); m["error"] != "invalid_token" || m["error_description"] != description {
		t.Errorf("%s: body %v, want invalid_token %q", name, m, description)
	}
	if ch := a.header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, description) {
		t.Errorf("%s: challenge %q", name, ch)
	}
}

// TestCertificateBoundOverTLS: over a TLS connection that presented a
// certificate, a token bound to it passes; bound to another, or without
// a certificate, it gets the contract's 401 invalid_token; a plain
// bearer token passes either way.
func TestCertificateBoundOverTLS(t *testing.T) {
	for _, allow := range []bool{false, true} {
		w := newMTLSWorld(t, accesstoken.Config{AllowBoundTokens: allow}, middleware.BearerConfig{}, askForCertificates())
		u := w.srv.URL + "/admin"
		bound := w.token(t, &w.mine)
		if a := get(t, w.client(&w.mine), u, bound); a.status != 200 || a.body != "hello" {
			t.Errorf("allow %v: its certificate: %d %s", allow, a.status, a.body)
		}
		wantInvalidToken(t, "another certificate", get(t, w.client(&w.other), u, bound), "token is bound to another client certificate")
		if !allow {
			wantInvalidToken(t, "no certificate", get(t, w.client(nil), u, bound), "token is bound to a key")
		}
		plain := w.token(t, nil)
		for _, c := range []*tls.Certificate{&w.mine, nil} {
			if a := get(t, w.client(c), u, plain); a.status != 200 {
				t.Errorf("allow %v: a plain bearer token: %d %s", allow, a.status, a.body)
			}
		}
	}
}

// TestCertificateThumbprintOncePerConnection: the certificate's
// thumbprint is computed at a connection's first request, not again for
// the requests after it on the same connection.
func TestCertificateThumbprintOncePerConnection(t *testing.T) {
	w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{}, askForCertificates())
	bound := w.token(t, &w.mine)
	c := w.client(&w.mine)
	get(t, c, w.srv.URL+"/admin", bound) // the connection, and its thumbprint
	before := clientcert.Computed()
	for range 50 {
		if a := get(t, c, w.srv.URL+"/admin", bound); a.status != 200 {
			t.Fatalf("%d %s", a.status, a.body)
		}
	}
	if n := clientcert.Computed() - before; n != 0 {
		t.Fatalf("50 requests on one connection computed %d thumbprints, want none after its first", n)
	}
	if a := get(t, w.client(&w.mine), w.srv.URL+"/admin", bound); a.status != 200 || clientcert.Computed()-before != 1 {
		t.Fatalf("a new connection: %d, %d computed, want 1", a.status, clientcert.Computed()-before)
	}
}

// TestForwardedCertificate: behind a TLS-terminating proxy, the header
// it sets is the client's certificate, read only from the proxy's
// address, and then alone: the proxy's own connection certificate is not
// its client's, and a header from anywhere else is never read.
func TestForwardedCertificate(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	elsewhere := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	header := func(c tls.Certificate) string { return url.PathEscape(string(certtest.PEM(c.Leaf.Raw))) } // nginx's $ssl_client_escaped_cert
	t.Run("from a trusted proxy", func(t *testing.T) {
		w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{ForwardedCert: &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: loopback}}, askForCertificates())
		u, bound := w.srv.URL+"/admin", w.token(t, &w.mine)
		if a := get(t, w.client(nil), u, bound, "X-SSL-CERT", header(w.mine)); a.status != 200 {
			t.Errorf("its certificate forwarded: %d %s", a.status, a.body)
		}
		wantInvalidToken(t, "another forwarded", get(t, w.client(nil), u, bound, "X-SSL-CERT", header(w.other)), "token is bound to another client certificate")
		wantInvalidToken(t, "none forwarded", get(t, w.client(nil), u, bound), "token is bound to a key")
		// The proxy's own certificate, on its connection, is not its
		// client's: even the right one there is not taken.
		wantInvalidToken(t, "the proxy's connection certificate", get(t, w.client(&w.mine), u, bound), "token is bound to a key")
		wantInvalidToken(t, "two headers", get(t, w.client(nil), u, bound, "X-SSL-CERT", header(w.mine), "X-SSL-CERT", header(w.mine)), "token is bound to a key")
		wantInvalidToken(t, "garbage", get(t, w.client(nil), u, bound, "X-SSL-CERT", "garbage"), "token is bound to a key")
	})
	t.Run("from an address that is no trusted proxy", func(t *testing.T) {
		w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{ForwardedCert: &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: elsewhere}}, askForCertificates())
		u, bound := w.srv.URL+"/admin", w.token(t, &w.mine)
		wantInvalidToken(t, "a spoofed header", get(t, w.client(nil), u, bound, "X-SSL-CERT", header(w.mine)), "token is bound to a key")
		wantInvalidToken(t, "a spoofed header beside another certificate", get(t, w.client(&w.other), u, bound, "X-SSL-CERT", header(w.mine)), "token is bound to another client certificate")
		if a := get(t, w.client(&w.mine), u, bound, "X-SSL-CERT", header(w.other)); a.status != 200 {
			t.Errorf("its connection certificate beside a spoofed header: %d %s", a.status, a.body)
		}
	})
	t.Run("without the setting", func(t *testing.T) {
		w := newMTLSWorld(t, accesstoken.Config{}, middleware.BearerConfig{}, nil)
		wantInvalidToken(t, "a header, no setting", get(t, http.DefaultClient, w.srv.URL+"/admin", w.token(t, &w.mine), "X-SSL-CERT", header(w.mine)), "token is bound to a key")
	})
}

// TestForwardedCertMisconfigured: a header without trusted proxies (or
// the reverse) would be anyone's to set: RequireBearerWithConfig panics.
func TestForwardedCertMisconfigured(t *testing.T) {
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys()})
	p := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, f := range []middleware.ForwardedCert{
		{Header: "X-SSL-CERT"},
		{TrustedProxies: p},
		{Header: "Authorization", TrustedProxies: p},
		{Header: "X SSL", TrustedProxies: p},
		{Header: "X-SSL-CERT", TrustedProxies: []netip.Prefix{{}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: no panic", f)
				}
			}()
			middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ForwardedCert: &f})
		}()
	}
}

// blindValidator is a validator of one's own that reads no presentation:
// it checks no binding at all.
type blindValidator struct{ v *accesstoken.Validator }

func (b blindValidator) Validate(_ context.Context, tok string, _ accesstoken.Presentation) (*accesstoken.Claims, error) {
	return b.v.Validate(context.Background(), tok, accesstoken.Presentation{})
}

// TestCertificateCheckedWhateverTheValidator: a validator of one's own
// may ignore the presentation; RequireBearer still refuses a
// certificate that is not the token's.
func TestCertificateCheckedWhateverTheValidator(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	ignoring := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k), AllowBoundTokens: true})
	h := middleware.RequireBearer(blindValidator{ignoring})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	mine := certtest.SelfSigned(t, certtest.Leaf{})
	other := certtest.SelfSigned(t, certtest.Leaf{})
	claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
	claims["cnf"] = map[string]any{"x5t#S256": clientcert.Thumbprint(mine.Leaf.Raw)}
	tok := jwktest.Sign(t, k, nil, claims)
	for _, tc := range []struct {
		cert *x509.Certificate
		want int
	}{{mine.Leaf, 200}, {other.Leaf, 401}} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.cert}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.want {
			t.Errorf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
		}
	}
}
