package conformance

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/internal/proctest"
	"github.com/idsauth/idsauth/scope"
)

// The gate's place in TestSeams: idsauth gate, the built command, behind
// a real nginx, one gate per replica, each introspecting there uncached
// (cacheSeconds -1), as the API that introspects does: nginx serves
// https://gate.seams.test/g{i}/..., asks gate i, and forwards the
// client's certificate (X-SSL-Cert); the gate takes DPoP-bound and
// certificate-bound tokens as the HTTP API does.
const atGate place = "idsauth gate behind nginx"

const seamGateURL = "https://gate.seams.test"

// seamGate is the gate's place: nginx, and its address.
type seamGate struct {
	ngx *nginxtest.Server
}

// startGate starts, for each replica, an idsauth gate introspecting
// there, and one nginx in front of them and of a Python upstream.
func (f *fleet) startGate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	up := proctest.Python(t, "../cmd/idsauth/testdata/upstream.py")
	server := f.serverCert(t, "gate.seams.test")
	for name, data := range map[string][]byte{"gate.pem": certtest.PEM(server.Leaf.Raw), "gate-key.pem": certtest.KeyPEM(t, server), "ca.pem": certtest.PEM(f.ca.Cert.Raw)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var upstreams, locations strings.Builder
	for i, r := range f.replicas {
		addr := "127.0.0.1:" + proctest.FreePort(t)
		file := filepath.Join(dir, fmt.Sprintf("gate%d.json", i))
		writeJSON(t, file, map[string]any{
			"issuers": []any{map[string]any{"issuer": seamIssuer, "caFile": filepath.Join(dir, "ca.pem"),
				"introspection": map[string]any{"endpoint": r.srv.URL + "/ids/connect/introspect", "clientId": "seams-api", "secretEnv": "SEAMS_API_SECRET"}}},
			"routes": []any{map[string]any{"name": fmt.Sprintf("g%d", i), "host": "gate.seams.test", "pathPrefix": fmt.Sprintf("/g%d", i),
				"scopes": []string{scope.ConnectWebAPI}, "audience": []string{seamIssuer + "/resources"}}},
			"trustedProxies": []string{"127.0.0.1"},
			"certificates":   map[string]any{"header": "X-SSL-Cert"},
			"dpop":           map[string]any{},
			"cacheSeconds":   -1,
		})
		startCommand(t, []string{"SEAMS_API_SECRET=" + seamAPISecret}, "gate", "gate listening", "-config", file, "-addr", addr, "-ops-addr", "127.0.0.1:0")
		fmt.Fprintf(&upstreams, "upstream gate%d { server %s; }\n", i, addr)
		fmt.Fprintf(&locations, `
		location /g%[1]d/ {
			auth_request /_gate%[1]d;
			error_page 401 403 = @answer%[1]d;
			proxy_pass http://%[2]s;
		}
		location = /_gate%[1]d {
			internal;
			proxy_pass http://gate%[1]d/auth/nginx;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Forwarded-Method $request_method;
			proxy_set_header X-Forwarded-Host $http_host;
			proxy_set_header X-Forwarded-Uri $request_uri;
			proxy_set_header X-Request-Id $request_id;
			proxy_set_header X-SSL-Cert $ssl_client_escaped_cert;
		}
		location @answer%[1]d {
			rewrite ^ /auth/nginx/answer? break;
			proxy_pass http://gate%[1]d;
			proxy_method GET;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Forwarded-Method $request_method;
			proxy_set_header X-Forwarded-Host $http_host;
			proxy_set_header X-Forwarded-Uri $request_uri;
			proxy_set_header X-Request-Id $request_id;
			proxy_set_header X-SSL-Cert $ssl_client_escaped_cert;
		}`, i, up)
	}
	f.gate = &seamGate{ngx: nginxtest.Start(t, dir, upstreams.String()+`
	server {
		listen 127.0.0.1:{{port}} ssl;
		ssl_certificate {{dir}}/gate.pem;
		ssl_certificate_key {{dir}}/gate-key.pem;
		ssl_verify_client optional_no_ca;
		`+locations.String()+`
	}`)}
}

// callGate calls replica i's route through nginx as cl does, with a DPoP
// proof for a DPoP-bound token, over a connection that presents cl's
// certificate.
func (f *fleet) callGate(t *testing.T, i int, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	u := fmt.Sprintf("%s/g%d/check", seamGateURL, i)
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	cl.authorize(t, req, tok)
	tc := &tls.Config{RootCAs: f.ca.Pool()}
	if cl.cert != nil {
		tc.Certificates = []tls.Certificate{*cl.cert}
	}
	ngx := f.gate.ngx.Addr
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ngx)
	}}}
	switch st := f.do(t, hc, req, nil); st {
	case http.StatusOK:
		return ok
	case http.StatusUnauthorized:
		return dead
	case http.StatusForbidden:
		return noScope
	default:
		t.Fatalf("GET %s through nginx and the gate: %d\nnginx:\n%s", u, st, f.gate.ngx.Log())
		return ""
	}
}
