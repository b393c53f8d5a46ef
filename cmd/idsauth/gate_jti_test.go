package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// TestGateDPoPJTIConsumer: where a proof's jti is consumed, as
// docs/GATEWAY.md says, behind a proxy, in front of a Go upstream that
// checks the proof too with a replay memory of its own. By default the
// gate consumes it: the first request reaches the upstream, which finds
// the proof fresh in its own memory, and the same proof again is refused
// at the gate, never reaching the upstream. With "jti": "upstream" the
// gate checks all but the replay: the same proof again passes the gate
// and the upstream refuses it, "its jti was already used".
func TestGateDPoPJTIConsumer(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	for _, c := range []struct {
		jti          string
		upstreamSeen int // requests the upstream decides: 1 when the gate refuses the replay, 2 when the upstream does
	}{{"", 1}, {"gate", 1}, {"upstream", 2}} {
		t.Run("jti "+c.jti, func(t *testing.T) {
			_, gsrv := startGate(t, gateFile(t, iss, func(m map[string]any) {
				d := map[string]any{}
				if c.jti != "" {
					d["jti"] = c.jti
				}
				m["dpop"] = d
			}))
			dp, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: "http://" + testAPIHost})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			upstream := middleware.RequireBearerWithConfig(iss.Validator(), middleware.BearerConfig{DPoP: dp})(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
			counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen++
				upstream.ServeHTTP(w, r)
			})
			h := fakeProxy(t, gsrv.URL, counted)
			tok := iss.DPoPToken(t, scope.AdminWebAPI)
			proof := iss.Proof(t, http.MethodGet, "http://"+testAPIHost+"/webapi/api/v3/demo/Admin/Users", tok, "")
			send := func() *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodGet, "http://"+testAPIHost+"/webapi/api/v3/demo/Admin/Users", nil)
				r.Header.Set("Authorization", "DPoP "+tok)
				r.Header.Set("DPoP", proof)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			if rec := send(); rec.Code != http.StatusOK || seen != 1 {
				t.Fatalf("the first proof: %d %s, the upstream asked %d times, want 200 and once", rec.Code, rec.Body, seen)
			}
			rec := send()
			if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "its jti was already used") {
				t.Errorf("the same proof again: %d %s, want 401, its jti was already used", rec.Code, rec.Body)
			}
			if seen != c.upstreamSeen {
				t.Errorf("the upstream decided %d requests, want %d (1: the gate consumes the jti, 2: the upstream does)", seen, c.upstreamSeen)
			}
		})
	}
}
