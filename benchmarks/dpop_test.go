package benchmarks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// BenchmarkDPoP measures a DPoP request through RequireBearer and
// RequireScope with the token's validation cached (a fresh ES256 proof
// each time, as a client sends), next to what it must cost at least: one
// proof verification (dpop.Verify alone) plus the same request with a
// cached bearer token. It reports each per request and
// dpop/(verify+bearer), the bound: at most 1.15, and the
// allocations of each part (dpop-allocs/op: issue 33's bound, at most
// 40). The proofs are made before the clock runs.
//
//	go test -run '^$' -bench DPoP -benchtime 3000x -cpu 1 .
func BenchmarkDPoP(b *testing.B) {
	const public = "https://api.example.test"
	const path = "/webapi/api/v3/demo/Admin/Users"
	k := jwktest.NewKey(b, "ES256")
	jwks := jwktest.NewJWKS(b, k)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: jwks.Issuer(), Audience: []string{jwks.Issuer() + "/resources"}})
	if err != nil {
		b.Fatal(err)
	}
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	dp, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: public, ReplayBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	h := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dp})(middleware.RequireScope(scope.AdminWebAPI)(ok))
	ck, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := clientauth.NewSigner(ck, "ES256", "")
	jkt, _ := signer.JKT()
	claims := jwktest.Claims(jwks.Issuer(), scope.AdminWebAPI, time.Hour)
	bearerTok := jwktest.Sign(b, k, nil, claims)
	claims["cnf"] = map[string]string{"jkt": jkt}
	boundTok := jwktest.Sign(b, k, nil, claims)

	b.StopTimer()
	n := b.N
	proofs := make([]string, 2*n+1) // n to verify, n to serve, one to warm the cache
	now := time.Now()
	for i := range proofs {
		if proofs[i], err = signer.Proof(http.MethodGet, public+path, boundTok, "", now); err != nil {
			b.Fatal(err)
		}
	}
	request := func(authz, proof string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://service.test"+path, nil)
		r.Header.Set("Authorization", authz)
		if proof != "" {
			r.Header.Set("DPoP", proof)
		}
		return r
	}
	serve := func(r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s %v", rec.Code, rec.Body, rec.Header())
		}
	}
	serve(request("Bearer "+bearerTok, ""))                 // warms the cache
	serve(request("DPoP "+boundTok, proofs[len(proofs)-1])) // likewise
	reqs := make([]*http.Request, n)
	for i := range reqs {
		reqs[i] = request("DPoP "+boundTok, proofs[n+i])
	}
	check := dpop.Check{Method: http.MethodGet, URL: public + path, AccessToken: boundTok, Now: now, Window: time.Minute, Leeway: 5 * time.Second}

	// Allocations are counted per part, as the process's mallocs across
	// each loop, so that a DPoP request's own count is told apart from
	// the proof verification's and the bearer request's.
	var ms runtime.MemStats
	mallocs := func() uint64 { runtime.ReadMemStats(&ms); return ms.Mallocs }
	b.StartTimer()
	m0, start := mallocs(), time.Now()
	for i := range n {
		if _, err := dpop.Verify(proofs[i], check); err != nil {
			b.Fatal(err)
		}
	}
	verify, verifyAllocs := time.Since(start), mallocs()-m0
	bearerReq := request("Bearer "+bearerTok, "")
	m0, start = mallocs(), time.Now()
	for range n {
		serve(bearerReq)
	}
	bearer, bearerAllocs := time.Since(start), mallocs()-m0
	m0, start = mallocs(), time.Now()
	for i := range n {
		serve(reqs[i])
	}
	withProof, dpopAllocs := time.Since(start), mallocs()-m0
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(verify), "verify-ns/op")
	b.ReportMetric(per(bearer), "bearer-ns/op")
	b.ReportMetric(per(withProof), "dpop-ns/op")
	b.ReportMetric(per(withProof)/(per(verify)+per(bearer)), "dpop/(verify+bearer)")
	b.ReportMetric(float64(verifyAllocs)/float64(n), "verify-allocs/op")
	b.ReportMetric(float64(bearerAllocs)/float64(n), "bearer-allocs/op")
	b.ReportMetric(float64(dpopAllocs)/float64(n), "dpop-allocs/op")
}
