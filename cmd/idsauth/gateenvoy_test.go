package main

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/scope"
)

// checkClient is go-control-plane's Authorization client, as Envoy's
// ext_authz filter calls it, to the gate's listener (h2c).
func checkClient(t *testing.T, addr string) authv3.AuthorizationClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return authv3.NewAuthorizationClient(conn)
}

// checkRequest is what Envoy sends for a request to path with headers
// (lower-case names), and the client's certificate (Envoy's URL-encoded
// PEM) when certPEM is not empty.
func checkRequest(method, path string, headers map[string]string, certPEM string) *authv3.CheckRequest {
	h := map[string]string{":authority": testAPIHost, ":path": path, ":method": method}
	for k, v := range headers {
		h[k] = v
	}
	return &authv3.CheckRequest{Attributes: &authv3.AttributeContext{
		Source: &authv3.AttributeContext_Peer{Certificate: certPEM},
		Request: &authv3.AttributeContext_Request{Http: &authv3.AttributeContext_HttpRequest{
			Method: method, Host: testAPIHost, Path: path, Headers: h, Protocol: "HTTP/1.1",
		}},
	}}
}

// TestEnvoyCheck: the gate answers Envoy's Check as it answers the other
// proxies: OK with the claim headers (and removing the client's copies of
// those it does not set), or denied with the middleware's status,
// WWW-Authenticate and body; a certificate-bound token with the client
// certificate Envoy describes in source.certificate, and not with another
// or none.
func TestEnvoyCheck(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, func(m map[string]any) {
		m["claims"] = map[string]string{"client_id": "X-Client-Id", "scope": "X-Scope", "tenant": "X-Tenant"}
	}))
	c := checkClient(t, strings.TrimPrefix(gsrv.URL, "http://"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := "/webapi/api/v3/demo/Admin/Users"
	resp, err := c.Check(ctx, checkRequest("GET", path, map[string]string{"authorization": "Bearer " + iss.Token(t, scope.AdminWebAPI)}, ""))
	if err != nil {
		t.Fatal(err)
	}
	ok := resp.GetOkResponse()
	if resp.GetStatus().GetCode() != int32(code.Code_OK) || ok == nil {
		t.Fatalf("a valid token: %v", resp)
	}
	got := map[string]string{}
	for _, h := range ok.GetHeaders() {
		got[h.GetHeader().GetKey()] = h.GetHeader().GetValue()
		if h.GetAppendAction() != corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD {
			t.Errorf("%s is appended to the client's, not put in its place", h.GetHeader().GetKey())
		}
	}
	if got["x-client-id"] != "test-client" || got["x-scope"] != scope.AdminWebAPI || len(ok.GetHeadersToRemove()) != 1 || ok.GetHeadersToRemove()[0] != "x-tenant" {
		t.Fatalf("the upstream headers: %v, removed %v", got, ok.GetHeadersToRemove())
	}
	for name, tc := range map[string]struct {
		headers map[string]string
		status  int32
		code    code.Code
		want    string // in WWW-Authenticate
	}{
		"no token":      {nil, 401, code.Code_UNAUTHENTICATED, `Bearer realm="idsauth", resource_metadata=`},
		"expired":       {map[string]string{"authorization": "Bearer " + iss.ExpiredToken(t, scope.AdminWebAPI)}, 401, code.Code_UNAUTHENTICATED, `error="invalid_token", error_description="token expired"`},
		"another scope": {map[string]string{"authorization": "Bearer " + iss.Token(t, scope.ConnectWebAPI)}, 403, code.Code_PERMISSION_DENIED, `error="insufficient_scope"`},
	} {
		resp, err := c.Check(ctx, checkRequest("GET", path, tc.headers, ""))
		if err != nil {
			t.Fatal(err)
		}
		d := resp.GetDeniedResponse()
		www := ""
		cc := ""
		for _, h := range d.GetHeaders() {
			switch h.GetHeader().GetKey() {
			case "www-authenticate":
				www = h.GetHeader().GetValue()
			case "cache-control":
				cc = h.GetHeader().GetValue()
			}
		}
		if resp.GetStatus().GetCode() != int32(tc.code) || d.GetStatus().GetCode() != 0 && int32(d.GetStatus().GetCode()) != tc.status || !strings.Contains(www, tc.want) || cc != "no-store" {
			t.Errorf("%s: %v", name, resp)
		}
	}
	// Certificate-bound: Envoy describes the client's certificate.
	_, gsrv = startGate(t, gateFile(t, iss, func(m map[string]any) {
		m["certificates"] = map[string]any{"header": "X-Forwarded-Client-Cert"}
	}))
	c = checkClient(t, strings.TrimPrefix(gsrv.URL, "http://"))
	mine, other := iss.ClientCertificate(t), iss.ClientCertificate(t)
	bound := iss.CertificateBoundToken(t, mine.Leaf, scope.AdminWebAPI)
	escaped := func(der []byte) string { return url.QueryEscape(string(certtest.PEM(der))) }
	xfcc := `Cert="` + url.PathEscape(string(certtest.PEM(mine.Leaf.Raw))) + `"`
	for name, tc := range map[string]struct {
		cert    string
		headers map[string]string
		ok      bool
	}{
		"its certificate":                       {escaped(mine.Leaf.Raw), nil, true},
		"another certificate":                   {escaped(other.Leaf.Raw), nil, false},
		"none":                                  {"", nil, false},
		"none, and an XFCC of the client's own": {"", map[string]string{"x-forwarded-client-cert": xfcc}, false},
	} {
		h := map[string]string{"authorization": "Bearer " + bound}
		for k, v := range tc.headers {
			h[k] = v
		}
		resp, err := c.Check(ctx, checkRequest("GET", path, h, tc.cert))
		if err != nil {
			t.Fatal(err)
		}
		if (resp.GetOkResponse() != nil) != tc.ok {
			t.Errorf("%s: %v", name, resp)
		}
	}
}
