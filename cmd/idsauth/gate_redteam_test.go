package main

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/redistest"
	"github.com/idsauth/idsauth/scope"
)

// TestRedTeamGateSpoofing: from an address that is no trusted proxy, the
// forwarding headers are never read: a request to /auth naming a
// protected path, with a good token, is decided as what it is (GET
// /auth, no route: 403), never 200; a certificate header names no
// certificate; nginx's kept answers are given to no one; an Envoy that
// asks from elsewhere is denied whatever it asks.
func TestRedTeamGateSpoofing(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, func(c map[string]any) {
		c["trustedProxies"] = []string{"10.9.9.9/32"}
		c["certificates"] = map[string]any{"header": "X-Forwarded-Client-Cert"}
	}))
	good := iss.Token(t, scope.AdminWebAPI)
	get := func(path string, headers ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, gsrv.URL+path, nil)
		req.Host = testAPIHost
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/auth", "/auth/nginx", "/auth/nginx/answer"} {
		if resp := get(path, "Authorization", "Bearer "+good, "X-Forwarded-Method", "GET", "X-Forwarded-Host", testAPIHost,
			"X-Forwarded-Uri", "/webapi/api/v3/demo/Admin/Users", "X-Request-Id", "guessed"); resp.StatusCode == http.StatusOK {
			t.Errorf("%s from an untrusted address with forwarding headers: 200", path)
		}
	}
	mine := iss.ClientCertificate(t)
	bound := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	xfcc := `Cert="` + url.PathEscape(string(certtest.PEM(mine.Leaf.Raw))) + `"`
	if resp := get("/envoy/webapi/api/v3/demo/Admin/Users", "Authorization", "Bearer "+bound, "X-Forwarded-Client-Cert", xfcc); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a certificate header from an untrusted address: %d, want 401", resp.StatusCode)
	}
	c := checkClient(t, strings.TrimPrefix(gsrv.URL, "http://"))
	resp, err := c.Check(context.Background(), checkRequest("GET", "/webapi/api/v3/demo/Admin/Users", map[string]string{"authorization": "Bearer " + good}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetOkResponse() != nil || resp.GetDeniedResponse().GetStatus().GetCode() != 403 {
		t.Errorf("a Check from an untrusted peer: %v", resp)
	}
}

// TestRedTeamGateHeaders: nothing of the request reaches a header the
// proxy sends on in a way that could end it or add one: a forwarded URI
// with quotes and commas names a resource_metadata URL with them escaped,
// inside one challenge with its own parameters alone; a claim holding a
// line end (or any byte outside printable ASCII) goes upstream as an
// empty header, never as itself.
func TestRedTeamGateHeaders(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, func(c map[string]any) {
		c["claims"] = map[string]string{"client_id": "X-Client-Id", "tenant": "X-Tenant"}
	}))
	ask := func(uri, authz string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, gsrv.URL+"/auth", nil)
		req.Header.Set("X-Forwarded-Method", "GET")
		req.Header.Set("X-Forwarded-Host", testAPIHost)
		req.Header.Set("X-Forwarded-Uri", uri)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// A challenge is read as a proxy or client reads it: the scheme, then
	// name="value" pairs, no quote or backslash inside a value.
	challenge := regexp.MustCompile(`^Bearer ([a-z_]+="[^"\\]*"(, |$))+$`)
	names := regexp.MustCompile(`([a-z_]+)="[^"\\]*"`)
	for _, uri := range []string{`/webapi/api/v3/demo/x",error="invalid_token",x="`, `/webapi/api/v3/demo/a%22b%0d%0aSet-Cookie:%20x=y`,
		"/webapi/api/v3/demo/\u00e9\"", `/webapi/api/v3/demo/x\", error=\"y`} {
		resp := ask(uri, "")
		for _, ch := range resp.Header.Values("WWW-Authenticate") {
			var got []string
			for _, m := range names.FindAllStringSubmatch(ch, -1) {
				got = append(got, m[1])
			}
			if !challenge.MatchString(ch) || strings.Join(got, " ") != "realm resource_metadata" {
				t.Errorf("%q: WWW-Authenticate %q, parameters %q", uri, ch, got)
			}
		}
		if resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("%q: a Set-Cookie came out", uri)
		}
	}
	// Envoy's Check: its answer's headers reach Envoy as gRPC fields,
	// past no HTTP server that would replace a line end; a raw one in
	// the path is refused, and no header carries one.
	cc := checkClient(t, strings.TrimPrefix(gsrv.URL, "http://"))
	for _, uri := range []string{`/webapi/api/v3/demo/x",error="invalid_token",x="`, "/webapi/api/v3/demo/a\r\nSet-Cookie: x=y",
		"/webapi/api/v3/demo/a%0d%0aSet-Cookie:%20x=y", "/webapi/api/v3/demo/\u00e9\""} {
		resp, err := cc.Check(context.Background(), checkRequest("GET", uri, nil, ""))
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetDeniedResponse()
		if d == nil {
			t.Fatalf("Check %q: not denied: %v", uri, resp)
		}
		for _, h := range d.GetHeaders() {
			k, v := h.GetHeader().GetKey(), h.GetHeader().GetValue()
			if strings.ContainsAny(k+v, "\r\n") || k == "set-cookie" {
				t.Errorf("Check %q: header %q: %q", uri, k, v)
			}
			if k == "www-authenticate" {
				var got []string
				for _, m := range names.FindAllStringSubmatch(v, -1) {
					got = append(got, m[1])
				}
				if !challenge.MatchString(v) || strings.Join(got, " ") != "realm resource_metadata" {
					t.Errorf("Check %q: WWW-Authenticate %q, parameters %q", uri, v, got)
				}
			}
		}
	}
	// A realm that could end its quoted string is refused at load.
	if _, err := loadGateConfig(gateFile(t, iss, func(c map[string]any) { c["realm"] = `api", error="invalid_token` })); err == nil {
		t.Error("a realm with a quote was taken")
	}
	c := iss.Claims(scope.AdminWebAPI)
	c["tenant"] = "acme\r\nX-Injected: 1"
	resp := ask("/webapi/api/v3/demo/Admin/Users", "Bearer "+iss.Mint(t, c))
	if resp.StatusCode != 200 || resp.Header.Get("X-Tenant") != "" || resp.Header.Get("X-Injected") != "" || resp.Header.Get("X-Client-Id") != "test-client" {
		t.Errorf("a claim with a line end: %d %v", resp.StatusCode, resp.Header)
	}
	if _, ok := resp.Header["X-Tenant"]; !ok {
		t.Errorf("the claim's header is not sent empty, and a proxy would let the client's own through: %v", resp.Header)
	}
}

// TestRedTeamDPoPReplayThroughTwoProxies: two gates behind two nginx, one
// Redis for their proofs' jtis: a proof taken through one proxy is
// refused through the other, "its jti was already used"; with a memory of
// each gate's own, it would pass the second (which the test shows too,
// so that it can fail).
func TestRedTeamDPoPReplayThroughTwoProxies(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	rds := redistest.Start(t)
	both := func(shared bool) (*behind, *behind) {
		conf := func(host string) string {
			return gateFile(t, iss, func(c map[string]any) {
				c["scheme"] = "https"
				// One public host for both proxies, as behind one name: the
				// proof's htu is the same through either.
				c["routes"] = []any{map[string]any{"name": "admin", "host": "api.gate.test", "pathPrefix": "/webapi/api/v3", "scopes": []string{scope.AdminWebAPI}, "audience": []string{iss.Audience}}}
				d := map[string]any{}
				if shared {
					d["replays"] = map[string]any{"redis": map[string]any{"address": rds.Addr, "prefix": "replay-test:" + t.Name() + ":"}}
				}
				c["dpop"] = d
			})
		}
		return startBehindNginx(t, conf), startBehindNginx(t, conf)
	}
	tok := iss.DPoPToken(t, scope.AdminWebAPI)
	proof := iss.Proof(t, http.MethodGet, "https://api.gate.test/webapi/api/v3/demo/Admin/Users", tok, "")
	for _, shared := range []bool{true, false} {
		a, b := both(shared)
		first, body := viaHost(t, a, tok, proof)
		if first != http.StatusOK {
			t.Fatalf("shared %v: the proof through the first proxy: %d %s", shared, first, body)
		}
		second, body := viaHost(t, b, tok, proof)
		switch {
		case shared && (second != http.StatusUnauthorized || !strings.Contains(body, "its jti was already used")):
			t.Errorf("the same proof through the second proxy, one Redis: %d %s", second, body)
		case !shared && second != http.StatusOK:
			t.Errorf("the same proof through the second proxy, a memory each: %d %s (the replay the shared store stops)", second, body)
		}
	}
}

// viaHost sends a DPoP request to b as a client of api.gate.test would.
func viaHost(t *testing.T, b *behind, tok, proof string) (int, string) {
	t.Helper()
	resp, body := b.request(t, nil, "api.gate.test", "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: DPoP "+tok, "DPoP: "+proof)
	return resp.StatusCode, body
}
