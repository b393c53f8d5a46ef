package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/proctest"
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

// protoset writes the descriptors of the Check service and every file
// they import, as grpcurl's -protoset reads them.
func protoset(t *testing.T) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	add(authv3.File_envoy_service_auth_v3_external_auth_proto)
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "auth.protoset")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnvoyCheckByGrpcurl: grpcurl, a client that is not the test's
// code, asks the gate's Check as Envoy would: a good token is allowed
// with the claim headers, none is denied 401 with the bare challenge.
func TestEnvoyCheckByGrpcurl(t *testing.T) {
	grpcurl := grpcurlPath(t)
	iss := idsauthtest.NewIssuer(t)
	_, gsrv := startGate(t, gateFile(t, iss, nil))
	set := protoset(t)
	check := func(headers map[string]string) map[string]any {
		req := map[string]any{"attributes": map[string]any{"request": map[string]any{"http": map[string]any{
			"method": "GET", "host": testAPIHost, "path": "/webapi/api/v3/demo/Admin/Users", "headers": headers}}}}
		body, _ := json.Marshal(req)
		out, err := exec.Command(grpcurl, "-plaintext", "-protoset", set, "-d", string(body), strings.TrimPrefix(gsrv.URL, "http://"), "envoy.service.auth.v3.Authorization/Check").CombinedOutput()
		if err != nil {
			t.Fatalf("grpcurl: %v\n%s", err, out)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("grpcurl's answer: %s", out)
		}
		return m
	}
	ok := check(map[string]string{"authorization": "Bearer " + iss.Token(t, scope.AdminWebAPI)})
	if ok["okResponse"] == nil || !strings.Contains(fmt.Sprint(ok["okResponse"]), "test-client") {
		t.Errorf("a good token: %v", ok)
	}
	denied := check(nil)
	d, _ := denied["deniedResponse"].(map[string]any)
	if d == nil || fmt.Sprint(d["status"]) != "map[code:Unauthorized]" || !strings.Contains(fmt.Sprint(d["headers"]), `Bearer realm=\"idsauth\"`) && !strings.Contains(fmt.Sprint(d["headers"]), `Bearer realm="idsauth"`) {
		t.Errorf("no token: %v", denied)
	}
}

// grpcurlPath is grpcurl on PATH or in GOPATH/bin, where .ci/run installs
// it; without it the test is skipped, and fails under CI.
func grpcurlPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("grpcurl"); err == nil {
		return p
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "grpcurl")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("grpcurl is not installed, and CI must run this test (.ci/run installs it)")
	}
	t.Skip("grpcurl is not installed: go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4")
	return ""
}

// TestGateCommandOverTLS: idsauth gate as the command runs it, with
// -tls-cert and -tls-key: HTTPS for the HTTP proxies, and gRPC over TLS
// (HTTP/2 by ALPN) for Envoy's Check, on the one listener.
func TestGateCommandOverTLS(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	dir := t.TempDir()
	ca := certtest.NewCA(t, "gate")
	server := ca.Server(t)
	certFile, keyFile := filepath.Join(dir, "gate.pem"), filepath.Join(dir, "gate-key.pem")
	for p, data := range map[string][]byte{certFile: certtest.PEM(server.Leaf.Raw), keyFile: certtest.KeyPEM(t, server)} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := "127.0.0.1:" + proctest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr strings.Builder
	done := make(chan int)
	go func() {
		e := env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &syncWriter{w: &stderr}, getenv: func(string) string { return "" }}
		done <- run(ctx, e, []string{"gate", "-config", gateFile(t, iss, nil), "-addr", addr, "-ops-addr", "off", "-tls-cert", certFile, "-tls-key", keyFile})
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	}()
	for i := 0; ; i++ {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool()})
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("the gate does not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool()})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := authv3.NewAuthorizationClient(conn).Check(ctx, checkRequest("GET", "/webapi/api/v3/demo/Admin/Users", map[string]string{"authorization": "Bearer " + iss.Token(t, scope.AdminWebAPI)}, ""))
	if err != nil || resp.GetOkResponse() == nil {
		t.Fatalf("Check over TLS: %v %v", resp, err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/auth", nil)
	req.Header.Set("X-Forwarded-Method", "GET")
	req.Header.Set("X-Forwarded-Host", testAPIHost)
	req.Header.Set("X-Forwarded-Uri", "/webapi/api/v3/demo/Admin/Users")
	hr, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusUnauthorized || hr.ProtoMajor != 1 {
		t.Fatalf("HTTPS /auth without a token: %d %s", hr.StatusCode, hr.Proto)
	}
}

// syncWriter is a writer safe for the logger's goroutines and the test.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
