package benchmarks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// mtlsSetup is a token bound to a client certificate (RFC 8705), beside
// the setup's bearer token, and the requests that present them.
type mtlsSetup struct {
	*setup
	cert  *x509.Certificate
	bound string
}

func newMTLSSetup(b *testing.B) *mtlsSetup {
	s := newSetup(b, "ES256")
	cert := certtest.SelfSigned(b, certtest.Leaf{}).Leaf
	claims := jwktest.Claims(s.jwks.Issuer(), scope.AdminWebAPI, 24*time.Hour)
	claims["aud"] = []string{s.jwks.Issuer() + "/resources"}
	claims["cnf"] = map[string]any{"x5t#S256": clientcert.Thumbprint(cert.Raw)}
	return &mtlsSetup{setup: s, cert: cert, bound: jwktest.Sign(b, s.key, nil, claims)}
}

// forwardedHeader is the header nginx sets for the certificate, and the
// proxies it comes from (httptest.NewRequest's RemoteAddr is 192.0.2.1).
var forwardedCert = &middleware.ForwardedCert{Header: "X-SSL-CERT", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}

func mtlsHandler(b *testing.B, s *mtlsSetup, fwd *middleware.ForwardedCert) http.Handler {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: s.jwks.Issuer(), Audience: []string{s.jwks.Issuer() + "/resources"}})
	if err != nil {
		b.Fatal(err)
	}
	return alice.New(middleware.RequireBearerWithConfig(v, middleware.BearerConfig{ForwardedCert: fwd}), middleware.RequireScope(scope.AdminWebAPI)).Then(bare)
}

// runReq sends req through h b.N times and checks the answer.
func runReq(b *testing.B, h http.Handler, req *http.Request) {
	check := httptest.NewRecorder()
	h.ServeHTTP(check, req)
	if check.Code != http.StatusNoContent {
		b.Fatalf("the handler answered %d %s", check.Code, check.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func mtlsRequest(token string, conn *x509.Certificate, header string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/webapi/api/v3/demo/Admin/Users", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if conn != nil {
		// As net/http gives every request of a connection: one
		// ConnectionState, one *x509.Certificate.
		req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{conn}}
	}
	if header != "" {
		req.Header.Set("X-SSL-CERT", header)
	}
	return req
}

// BenchmarkMTLS runs one protected GET per iteration, warm (the token
// validated before): a bearer token over a connection without a
// certificate (the warm bearer path), the same over one with a
// certificate, a token bound to the connection's certificate (its
// thumbprint computed at the connection's first request, reused), and
// bound to a certificate that nginx forwards ($ssl_client_escaped_cert,
// its thumbprint remembered by its value); and, apart, what decoding and
// hashing a forwarded certificate costs when it is not remembered; and
// "alternating", the three warm requests in turn (see alternating).
func BenchmarkMTLS(b *testing.B) {
	s := newMTLSSetup(b)
	header := url.PathEscape(string(certtest.PEM(s.cert.Raw)))
	b.Run("bearer-warm", func(b *testing.B) { runReq(b, mtlsHandler(b, s, nil), mtlsRequest(s.token, nil, "")) })
	b.Run("bearer-warm-with-certificate", func(b *testing.B) { runReq(b, mtlsHandler(b, s, nil), mtlsRequest(s.token, s.cert, "")) })
	b.Run("bound-connection", func(b *testing.B) { runReq(b, mtlsHandler(b, s, nil), mtlsRequest(s.bound, s.cert, "")) })
	b.Run("bound-forwarded", func(b *testing.B) { runReq(b, mtlsHandler(b, s, forwardedCert), mtlsRequest(s.bound, nil, header)) })
	b.Run("alternating", func(b *testing.B) { alternating(b, s, header) })
	b.Run("forwarded-decode-uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ders, _, err := clientcert.Decode("X-SSL-CERT", header)
			if err != nil || clientcert.Thumbprint(ders[0]) == "" {
				b.Fatal(err)
			}
		}
	})
}

// alternating serves a warm bearer request, the same bound to the
// connection's certificate, and bound to a forwarded one, in turn, in
// blocks of 1,000 each, and reports the bearer request's time and the
// median of what each bound one adds to it, the budget's figures: the
// host's drift falls on the three alike, where the sub-benchmarks above
// run seconds apart.
//
//	go test -run '^$' -bench 'MTLS/alternating' -benchtime 300000x -cpu 1 .
func alternating(b *testing.B, s *mtlsSetup, header string) {
	bearer, fwd := mtlsHandler(b, s, nil), mtlsHandler(b, s, forwardedCert)
	rb, rc, rf := mtlsRequest(s.token, nil, ""), mtlsRequest(s.bound, s.cert, ""), mtlsRequest(s.bound, nil, header)
	serve := [3]func(){
		func() { bearer.ServeHTTP(httptest.NewRecorder(), rb) },
		func() { bearer.ServeHTTP(httptest.NewRecorder(), rc) },
		func() { fwd.ServeHTTP(httptest.NewRecorder(), rf) },
	}
	for _, r := range []*http.Request{rb, rc} {
		runOnce(b, bearer, r)
	}
	runOnce(b, fwd, rf)
	const block = 1000
	var ns [3][]float64
	b.ResetTimer()
	for range max(1, b.N/block) {
		for i, f := range serve {
			start := time.Now()
			for range block {
				f()
			}
			ns[i] = append(ns[i], float64(time.Since(start).Nanoseconds())/block)
		}
	}
	b.StopTimer()
	extra := func(i int) float64 {
		d := make([]float64, len(ns[i]))
		for j := range d {
			d[j] = ns[i][j] - ns[0][j]
		}
		return medianOf(d)
	}
	b.ReportMetric(medianOf(ns[0]), "bearer-ns/req")
	b.ReportMetric(extra(1), "connection-extra-ns/req")
	b.ReportMetric(extra(2), "forwarded-extra-ns/req")
}

// runOnce serves req through h once and checks the answer.
func runOnce(b *testing.B, h http.Handler, req *http.Request) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		b.Fatalf("the handler answered %d %s", rec.Code, rec.Body)
	}
}

func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// TestMTLSBudget: a certificate-bound request adds no allocation to the
// warm bearer path (the presentation is an argument, the thumbprint
// remembered), whether its certificate is the connection's or forwarded;
// the times are printed (the budget: 0.3 µs and 1 µs), not asserted.
func TestMTLSBudget(t *testing.T) {
	res := map[string]testing.BenchmarkResult{}
	for _, name := range []string{"bearer-warm", "bound-connection", "bound-forwarded"} {
		res[name] = measured(t, func(b *testing.B) {
			s := newMTLSSetup(b)
			switch name {
			case "bearer-warm":
				runReq(b, mtlsHandler(b, s, nil), mtlsRequest(s.token, nil, ""))
			case "bound-connection":
				runReq(b, mtlsHandler(b, s, nil), mtlsRequest(s.bound, s.cert, ""))
			case "bound-forwarded":
				runReq(b, mtlsHandler(b, s, forwardedCert), mtlsRequest(s.bound, nil, url.PathEscape(string(certtest.PEM(s.cert.Raw)))))
			}
		})
	}
	base := res["bearer-warm"]
	for _, name := range []string{"bound-connection", "bound-forwarded"} {
		r := res[name]
		t.Logf("%s: %d ns/op, %d allocs/op (bearer: %d ns/op, %d allocs/op)", name, r.NsPerOp(), r.AllocsPerOp(), base.NsPerOp(), base.AllocsPerOp())
		if d := r.AllocsPerOp() - base.AllocsPerOp(); d > 0 {
			t.Errorf("%s adds %d allocations to the warm bearer path, want none", name, d)
		}
	}
}
