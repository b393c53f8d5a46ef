package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkGateDecide is the gate's work for one warm request as nginx
// asks it (/auth/nginx), in process: the forwarded request read, its
// path's readings, the route's chain (the token from the validator's
// cache), the upstream headers from the decision cache.
func BenchmarkGateDecide(b *testing.B) {
	iss := testIssuer(b)
	g, _ := startGate(b, issuerGate(b, iss.URL(), "api.gate.test", nil))
	tok := runnerToken(b, iss, "runner", "pd_AdminWebApi")
	r := httptest.NewRequest(http.MethodGet, "/auth/nginx", nil)
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("X-Forwarded-Method", "GET")
	r.Header.Set("X-Forwarded-Host", "api.gate.test")
	r.Header.Set("X-Forwarded-Uri", "/webapi/api/v3/demo/Admin/Users?page=1")
	r.Header.Set("X-Request-Id", "0123456789abcdef")
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	if w.Code != 200 {
		b.Fatalf("%d %s", w.Code, w.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := &discard{h: http.Header{}}
		g.ServeHTTP(w, r)
	}
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
