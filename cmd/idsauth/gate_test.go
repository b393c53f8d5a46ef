package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// testRoute is the route of the gate's tests: the contract's Admin API.
const (
	testAPIHost = "api.gate.test"
	testRoute   = "GET /webapi/api/v3/demo/Admin/Users"
)

// gateFile is a gate's configuration for iss's tokens: one route on
// testAPIHost under /webapi/api/v3 that needs pd_AdminWebApi, the
// loopback trusted; edit changes it before it is written.
func gateFile(t *testing.T, iss *idsauthtest.Issuer, edit func(c map[string]any)) string {
	t.Helper()
	c := map[string]any{
		"issuers":        []any{map[string]any{"issuer": iss.URL(), "jwks": "discover"}},
		"routes":         []any{map[string]any{"name": "admin", "host": testAPIHost, "pathPrefix": "/webapi/api/v3", "scopes": []string{scope.AdminWebAPI}, "audience": []string{iss.Audience}}},
		"trustedProxies": []string{"127.0.0.1/32", "::1/128"},
		"scheme":         "http",
		"claims":         map[string]string{"client_id": "X-Client-Id", "scope": "X-Scope"},
	}
	if edit != nil {
		edit(c)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "gate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startGate runs the gate of the file in process, on a loopback
// httptest.Server.
func startGate(t testing.TB, file string) (*gate, *httptest.Server) {
	t.Helper()
	cfg, err := loadGateConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	g := &gate{daemon: newDaemon("gate", file, logger)}
	g.obs = &gateObserve{logger: logger, metrics: g.metrics}
	if g.shared, g.rdb, g.open, err = newGateShared(cfg, logger); err != nil {
		t.Fatal(err)
	}
	if g.rdb != nil {
		t.Cleanup(func() { g.rdb.Close() })
	}
	e, err := buildGate(cfg, g.shared, g.obs)
	if err != nil {
		t.Fatal(err)
	}
	g.engine.Store(e)
	t.Cleanup(func() { g.engine.Load().stop() })
	g.grpc = newGRPCServer(g)
	srv := httptest.NewUnstartedServer(g)
	srv.EnableHTTP2 = true
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return g, srv
}

// fakeProxy is a proxy in front of upstream that asks the gate at
// gateURL+"/auth" as Traefik's ForwardAuth does: the original request in
// X-Forwarded-*, its Authorization and DPoP headers, the client's
// certificate (from the request's TLS state) in X-Forwarded-Client-Cert;
// on 200 the claim headers onto the upstream request (the client's of
// those names replaced), on anything else the gate's answer to the
// client, unchanged.
func fakeProxy(t *testing.T, gateURL string, upstream http.Handler, copy ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(http.MethodGet, gateURL+"/auth", nil)
		req.Header.Set("X-Forwarded-Method", r.Method)
		req.Header.Set("X-Forwarded-Host", testAPIHost)
		req.Header.Set("X-Forwarded-Uri", r.URL.RequestURI())
		req.Header.Set("X-Forwarded-Proto", "http")
		for _, name := range []string{"Authorization", "Dpop"} {
			if v, ok := r.Header[name]; ok {
				req.Header[name] = v
			}
		}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			req.Header.Set("X-Forwarded-Client-Cert", `Cert="`+url.PathEscape(string(certtest.PEM(r.TLS.PeerCertificates[0].Raw)))+`"`)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("the gate: %v", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			for k, v := range resp.Header {
				if k != "Content-Length" && k != "Date" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(body)
			return
		}
		for _, name := range copy {
			r.Header[name] = resp.Header[name]
		}
		upstream.ServeHTTP(w, r)
	})
}

var echoUpstream = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"client":%q,"scope":%q}`, r.Header.Get("X-Client-Id"), r.Header.Get("X-Scope"))
})

// TestGateKeepsTheContract: the kit's tables (idsauthtest's checkers),
// through a proxy that asks the gate: the bearer cases, reference tokens,
// DPoP, and certificate-bound tokens; the claims reach the upstream.
func TestGateKeepsTheContract(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, nil))
	h := fakeProxy(t, gsrv.URL, echoUpstream, "X-Client-Id", "X-Scope")
	iss.CheckProtected(t, h, testRoute, scope.AdminWebAPI)

	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "http://"+testAPIHost+"/webapi/api/v3/demo/Admin/Users", nil)
	r.Header.Set("Authorization", "Bearer "+iss.Token(t, scope.AdminWebAPI))
	r.Header.Set("X-Client-Id", "spoofed")
	h.ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Body.String() != `{"client":"test-client","scope":"pd_AdminWebApi"}` {
		t.Fatalf("the claims upstream: %d %s", rec.Code, rec.Body)
	}
}

// TestGateAnswersAreTheMiddlewares: for every request of the tables, the
// gate's answer through the proxy is the middleware's, byte for byte: its
// status, every header but Date and Content-Length, and its body.
func TestGateAnswersAreTheMiddlewares(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, nil))
	md := &middleware.ResourceMetadata{Resource: "http://" + testAPIHost + "/webapi/api/v3", AuthorizationServers: []string{iss.URL()}, ScopesSupported: []string{scope.AdminWebAPI}}
	direct := middleware.PublicOrigin("http://" + testAPIHost)(middleware.RequireBearerWithConfig(iss.Validator(), middleware.BearerConfig{ResourceMetadata: md})(
		middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))))
	proxied := fakeProxy(t, gsrv.URL, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	compared := 0
	both := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, b := httptest.NewRecorder(), httptest.NewRecorder()
		direct.ServeHTTP(a, r.Clone(r.Context()))
		proxied.ServeHTTP(b, r.Clone(r.Context()))
		for _, rec := range []*httptest.ResponseRecorder{a, b} {
			rec.Header().Del("Date")
			rec.Header().Del("Content-Length")
		}
		var ha, hb bytes.Buffer
		_ = a.Header().Write(&ha)
		_ = b.Header().Write(&hb)
		if a.Code != b.Code || ha.String() != hb.String() || a.Body.String() != b.Body.String() {
			t.Errorf("%s %s: the middleware answers\n%d\n%s\n%s\nthe gate\n%d\n%s\n%s", r.Method, r.URL, a.Code, ha.String(), a.Body, b.Code, hb.String(), b.Body)
		}
		compared++
		for k, v := range a.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(a.Code)
		_, _ = w.Write(a.Body.Bytes())
	})
	iss.CheckProtected(t, both, testRoute, scope.AdminWebAPI)
	if compared < 15 {
		t.Fatalf("%d answers compared", compared)
	}
}

// TestGateDPoPAndCertificates: the kit's DPoP tables through the proxy
// and the gate, in each mode the gate's dpop section sets (the proof
// checked against the forwarded method and URL, the nonce given back
// through the proxy), and its certificate-bound tokens' table with the
// certificate the proxy forwards (a header the client wrote is never
// read: the proxy sets its own).
func TestGateDPoPAndCertificates(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	public := "http://" + testAPIHost
	for name, c := range map[string]struct {
		section map[string]any
		cfg     middleware.DPoPConfig
	}{
		"both schemes":          {map[string]any{}, middleware.DPoPConfig{PublicURL: public}},
		"DPoP alone":            {map[string]any{"required": true}, middleware.DPoPConfig{PublicURL: public, Required: true}},
		"nonces":                {map[string]any{"requireNonce": true}, middleware.DPoPConfig{PublicURL: public, RequireNonce: true}},
		"proofs of two minutes": {map[string]any{"proofMaxAgeSeconds": 120}, middleware.DPoPConfig{PublicURL: public, ProofMaxAge: 2 * time.Minute}},
	} {
		t.Run(name, func(t *testing.T) {
			_, gsrv := startGate(t, gateFile(t, iss, func(m map[string]any) { m["dpop"] = c.section }))
			iss.CheckProtectedDPoP(t, fakeProxy(t, gsrv.URL, echoUpstream), c.cfg, testRoute, scope.AdminWebAPI)
		})
	}
	_, gsrv := startGate(t, gateFile(t, iss, func(m map[string]any) {
		m["certificates"] = map[string]any{"header": "X-Forwarded-Client-Cert"}
	}))
	iss.CheckProtectedMTLS(t, fakeProxy(t, gsrv.URL, echoUpstream), nil, testRoute, scope.AdminWebAPI)
}

// TestGateAssertionUpstream: the gate signs an assertion for the route,
// which a Go upstream checks in one line with the gate's published key
// (/.well-known/jwks.json), finding the token's claims; the assertion
// reaches the upstream for a good token alone, and the client's own
// assertion header is replaced.
func TestGateAssertionUpstream(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	k, err := keys.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := keys.EncodePEM(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "gate-key.pem")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	_, gsrv := startGate(t, gateFile(t, iss, func(c map[string]any) {
		c["assertion"] = map[string]any{"keyFile": keyFile, "issuer": "https://gate.example.test", "lifetimeSeconds": 20}
	}))
	gateKeys, err := accesstoken.NewJWKS(t.Context(), accesstoken.JWKSConfig{URL: gsrv.URL + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	upstream := middleware.RequireGateAssertion(middleware.GateAssertionConfig{Issuer: "https://gate.example.test", Audience: "admin", Keys: gateKeys})(
		middleware.RequireScope(scope.AdminWebAPI)(echoUpstream))
	h := fakeProxy(t, gsrv.URL, upstream, "X-Client-Id", "X-Scope", "X-Idsauth-Assertion")
	call := func(headers ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "http://"+testAPIHost+"/webapi/api/v3/demo/Admin/Users", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	good := iss.Token(t, scope.AdminWebAPI)
	if rec := call("Authorization", "Bearer "+good, "X-Idsauth-Assertion", "forged"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"client":"test-client"`) {
		t.Fatalf("a good token through the gate to an upstream that checks the assertion: %d %s", rec.Code, rec.Body)
	}
	// Around the gate: the upstream alone, with the token, or with an
	// assertion the client made.
	direct := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/webapi/api/v3/demo/Admin/Users", nil)
	r.Header.Set("Authorization", "Bearer "+good)
	r.Header.Set("X-Idsauth-Assertion", good)
	upstream.ServeHTTP(direct, r)
	if direct.Code != http.StatusForbidden {
		t.Fatalf("around the gate, an access token as the assertion: %d", direct.Code)
	}
}

// TestGateReloadRenamesTheClaims: a reload that names other claims (and
// another header for one) sends the new ones for a token whose decision
// was cached before it: an engine's decisions are its own.
func TestGateReloadRenamesTheClaims(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	file := gateFile(t, iss, nil)
	g, gsrv := startGate(t, file)
	tok := iss.Token(t, scope.AdminWebAPI)
	ask := func() http.Header {
		req, _ := http.NewRequest(http.MethodGet, gsrv.URL+"/auth", nil)
		req.Header.Set("X-Forwarded-Method", "GET")
		req.Header.Set("X-Forwarded-Host", testAPIHost)
		req.Header.Set("X-Forwarded-Uri", "/webapi/api/v3/demo/Admin/Users")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
	}
	if h := ask(); h.Get("X-Client-Id") != "test-client" || h.Get("X-Scope") != scope.AdminWebAPI {
		t.Fatalf("before: %v", h)
	}
	if err := os.Rename(gateFile(t, iss, func(c map[string]any) {
		c["claims"] = map[string]string{"sub": "X-Subject", "client_id": "X-Caller"}
	}), file); err != nil {
		t.Fatal(err)
	}
	if err := g.reloadConfig(); err != nil {
		t.Fatal(err)
	}
	if h := ask(); h.Get("X-Caller") != "test-client" || h.Get("X-Subject") != "test-client" || h.Get("X-Scope") != "" {
		t.Fatalf("after the reload: %v", h)
	}
}
