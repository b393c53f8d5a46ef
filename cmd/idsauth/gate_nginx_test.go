package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/internal/proctest"
	"github.com/idsauth/idsauth/issuer"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// pythonUpstream starts testdata/upstream.py, Python's http.server
// answering with what reached it.
func pythonUpstream(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("testdata/upstream.py")
	if err != nil {
		t.Fatal(err)
	}
	return proctest.Python(t, script)
}

// recipe is the block of docs/GATEWAY.md in lang (see proctest.Recipe).
func recipe(t *testing.T, lang string, replace ...string) string {
	t.Helper()
	return proctest.Recipe(t, "../../docs/GATEWAY.md", lang, replace...)
}

// behind is a gate behind a real proxy configured as docs/GATEWAY.md
// says, in front of the Python upstream, over TLS (its CA in caFile).
type behind struct {
	gsrv   *httptest.Server // the gate's
	addr   string           // the proxy's
	host   string           // the Host clients send, when not addr
	plain  bool             // plain HTTP, not TLS
	log    func() string
	g      *gate
	origin string // https://127.0.0.1:port
	ca     *certtest.CA
	caFile string
}

// startBehindNginx starts the upstream, the gate of the file gateConfig
// makes for the origin nginx listens on, and nginx.
func startBehindNginx(t *testing.T, gateConfig func(host string) string) *behind {
	t.Helper()
	up := pythonUpstream(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "nginx")
	server := ca.Server(t)
	for name, data := range map[string][]byte{"api.pem": certtest.PEM(server.Leaf.Raw), "api-key.pem": certtest.KeyPEM(t, server), "ca.pem": certtest.PEM(ca.Cert.Raw)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The gate starts first, on a placeholder host; once nginx has its
	// port, the gate reloads its file with the route's real host.
	file := gateConfig("placeholder.invalid")
	g, gsrv := startGate(t, file)
	conf := recipe(t, "nginx", "listen 443 ssl", "listen 127.0.0.1:{{port}} ssl", "/etc/nginx/", dir+"/",
		"10.0.0.9:8181", strings.TrimPrefix(gsrv.URL, "http://"), "10.0.0.7:8080", up)
	ngx := nginxtest.Start(t, dir, conf)
	if err := os.Rename(gateConfig(ngx.Addr), file); err != nil {
		t.Fatal(err)
	}
	if err := g.reloadConfig(); err != nil {
		t.Fatal(err)
	}
	return &behind{gsrv: gsrv, addr: ngx.Addr, log: ngx.Log, g: g, origin: "https://" + ngx.Addr, ca: ca, caFile: filepath.Join(dir, "ca.pem")}
}

// raw sends a request line written exactly as given, over TLS, and reads
// the answer: the client's bytes, not Go's cleaned URL.
func (b *behind) raw(t *testing.T, method, target string, headers ...string) (*http.Response, string) {
	t.Helper()
	return b.rawWith(t, nil, method, target, headers...)
}

// rawWith is raw presenting cert (nil: none) over TLS.
func (b *behind) rawWith(t *testing.T, cert *tls.Certificate, method, target string, headers ...string) (*http.Response, string) {
	t.Helper()
	host := b.host
	if host == "" {
		host = b.addr
	}
	return b.request(t, cert, host, method, target, headers...)
}

// request is rawWith with the Host header host.
func (b *behind) request(t *testing.T, cert *tls.Certificate, host, method, target string, headers ...string) (*http.Response, string) {
	t.Helper()
	// The TLS server name is the proxy's (its certificate's), whatever
	// Host the request names.
	sni := b.host
	if sni == "" {
		sni = b.addr
	}
	name, _, _ := strings.Cut(sni, ":")
	var conn net.Conn
	var err error
	if b.plain {
		conn, err = net.Dial("tcp", b.addr)
	} else {
		cfg := &tls.Config{RootCAs: b.ca.Pool(), ServerName: name}
		if cert != nil {
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		conn, err = tls.Dial("tcp", b.addr, cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// upstreamSaw is what the Python upstream answers: what reached it.
type upstreamSaw struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Read    string              `json:"read"`
	Headers map[string][]string `json:"headers"`
}

func sawOf(t *testing.T, body string) upstreamSaw {
	t.Helper()
	var s upstreamSaw
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("not the upstream's answer: %q", body)
	}
	return s
}

// writeGateConfig writes c to a file of its own and returns its path.
func writeGateConfig(t testing.TB, c map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "gate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issuerGate is the gate's configuration for testIssuer's tokens, JWTs
// and reference tokens, on host: the Admin API (pd_AdminWebApi) and the
// Connect API (pd_ConnectWebApi), the forwarded certificate in nginx's
// X-SSL-Cert; edit changes it.
func issuerGate(t testing.TB, issuerURL, host string, edit func(c map[string]any)) string {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "api-secret")
	if err := os.WriteFile(secret, []byte("api-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := map[string]any{
		"issuers": []any{map[string]any{"issuer": issuerURL, "jwks": "discover",
			"introspection": map[string]any{"clientId": "api", "secretFile": secret}}},
		"routes": []any{
			map[string]any{"name": "admin", "host": host, "pathPrefix": "/webapi/api/v3/demo/Admin", "scopes": []string{"pd_AdminWebApi"}, "audience": []string{issuerURL + "/resources"}},
			map[string]any{"name": "connect", "host": host, "pathPrefix": "/webapi/api/v3/demo/Connect", "scopes": []string{"pd_ConnectWebApi"}, "audience": []string{issuerURL + "/resources"}},
		},
		"trustedProxies": []string{"127.0.0.1"},
		"claims":         map[string]string{"client_id": "X-Client-Id", "scope": "X-Scope"},
		"certificates":   map[string]any{"header": "X-SSL-Cert"},
	}
	if edit != nil {
		edit(c)
	}
	return writeGateConfig(t, c)
}

// TestGateBehindNginx: idsauth conformance gate, through a real nginx
// configured as docs/GATEWAY.md's recipe says, in front of a Python
// upstream: every case of the contract reaches the client through nginx
// (its status, its WWW-Authenticate once, its body, which a plain
// auth_request drops), for a client of JWTs and one of reference tokens,
// with DPoP nonces given back through nginx; the claims reach the
// upstream, never the client's own headers of those names.
func TestGateBehindNginx(t *testing.T) {
	iss := testIssuer(t)
	b := startBehindNginx(t, func(host string) string {
		return issuerGate(t, iss.URL(), host, func(c map[string]any) { c["dpop"] = map[string]any{"requireNonce": true} })
	})
	target := b.origin + "/webapi/api/v3/demo/Admin/Users"
	for _, client := range []string{"runner", "runner-ref"} {
		code, out := runRunner(t, "gate", "-url", target, "-issuer", iss.URL(), "-client-id", client, "-scope", "pd_AdminWebApi", "-cacert", b.caFile)
		if code != 0 {
			t.Fatalf("%s: exit %d through nginx:\n%s\nnginx:\n%s", client, code, out, b.log())
		}
		for _, want := range []string{"pass dpop a proof without the server's nonce", "pass gate a valid token, and forwarding headers of the client's own", "pass metadata the document says"} {
			if !strings.Contains(squash(out), want) {
				t.Errorf("%s: no %q:\n%s", client, want, out)
			}
		}
	}
	good := runnerToken(t, iss, "runner", "pd_AdminWebApi")
	resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", "Authorization: Bearer "+good, "X-Client-Id: spoofed", "X-Scope: everything")
	saw := sawOf(t, body)
	if resp.StatusCode != 200 || strings.Join(saw.Headers["X-Client-Id"], ",") != "runner" || strings.Join(saw.Headers["X-Scope"], ",") != "pd_AdminWebApi" {
		t.Fatalf("the claims upstream: %d %+v", resp.StatusCode, saw)
	}
	// Each challenge once: auth_request copies one of a 401's, which the
	// gate leaves out of its first answer; the error_page's has them all.
	for name, c := range map[string]struct {
		authz      string
		challenges int
	}{"no token": {"", 2}, "an expired token": {"Bearer " + forgedExpired(t, iss), 1}} {
		h := []string{}
		if c.authz != "" {
			h = append(h, "Authorization: "+c.authz)
		}
		resp, body := b.raw(t, "GET", "/webapi/api/v3/demo/Admin/Users", h...)
		if resp.StatusCode != 401 || len(resp.Header.Values("WWW-Authenticate")) != c.challenges || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d, WWW-Authenticate %q (want %d, each once), Cache-Control %q\n%s", name, resp.StatusCode, resp.Header.Values("WWW-Authenticate"), c.challenges, resp.Header.Get("Cache-Control"), body)
		}
	}
}

// runnerToken is a token of testIssuer's client for scopes.
func runnerToken(t testing.TB, iss *issuer.Issuer, client, scopes string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: client, ClientSecret: "runner-secret", TokenURL: iss.TokenURL(), Scopes: strings.Fields(scopes), AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// forgedExpired is an expired token of a key of the test's own.
func forgedExpired(t *testing.T, iss *issuer.Issuer) string {
	t.Helper()
	rt, err := newRunnerTokens(t.Context(), client.Config{}, &issuerMetadata{Issuer: iss.URL()}, "")
	if err != nil {
		t.Fatal(err)
	}
	return rt.forge([]string{"pd_AdminWebApi"}, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }).Value
}
