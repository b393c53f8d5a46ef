package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// envoyCheck answers Envoy's ext_authz over gRPC
// (envoy.service.auth.v3.Authorization/Check): the CheckRequest is the
// original request, decided by the route's chain as every proxy's is, and
// the answer goes back as Envoy applies it: an OkHttpResponse with the
// upstream headers (removing the client's of those names), or a
// DeniedHttpResponse with the status, headers and body the middleware
// wrote.
type envoyCheck struct {
	authv3.UnimplementedAuthorizationServer
	g *gate
}

// newGRPCServer is the gate's gRPC server: the Check service alone.
func newGRPCServer(g *gate) *grpc.Server {
	s := grpc.NewServer(grpc.MaxRecvMsgSize(1 << 20))
	authv3.RegisterAuthorizationServer(s, envoyCheck{g: g})
	return s
}

// clientAddr is the RemoteAddr of a Check's subrequest: no address, so
// that no trusted proxy's header is read (a Check carries the client's
// certificate itself), and the certificate is the connection's, the one
// Envoy describes.
const clientAddr = "envoy-downstream"

// Check decides the request a trusted Envoy asks about; an Envoy at
// another address is denied, 403, whatever it asks.
func (c envoyCheck) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	g := c.g
	e := g.engine.Load()
	p, _ := peer.FromContext(ctx)
	if p == nil || p.Addr == nil || !e.trusts(p.Addr.String()) {
		return denied(http.StatusForbidden, http.Header{"Cache-Control": {"no-store"}, "Content-Type": {"text/plain; charset=utf-8"}},
			"Forbidden: not a trusted proxy\n"), nil
	}
	hr := req.GetAttributes().GetRequest().GetHttp()
	o := original{method: hr.GetMethod(), host: hr.GetHost(), uri: hr.GetPath(), trusted: true}
	r := &http.Request{Header: checkHeaders(hr), RemoteAddr: clientAddr, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if cert := peerCertificate(req.GetAttributes().GetSource().GetCertificate()); cert != nil {
		r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true, PeerCertificates: []*x509.Certificate{cert}}
	}
	r = r.WithContext(ctx)
	w := &capture{header: http.Header{}}
	route, err := e.route(o)
	var sr *http.Request
	if err == nil {
		o.trusted = false // the subrequest's connection is the client's, as Envoy describes it
		sr, err = e.subrequest(r, o)
	}
	if err != nil {
		refuse(w, err)
	} else {
		route.chain.ServeHTTP(w, sr)
	}
	if w.status != http.StatusOK {
		return denied(w.status, w.header, w.body.String()), nil
	}
	ok := &authv3.OkHttpResponse{}
	for _, name := range e.upstream.names {
		v := w.header.Get(name)
		if v == "" {
			ok.HeadersToRemove = append(ok.HeadersToRemove, strings.ToLower(name))
			continue
		}
		ok.Headers = append(ok.Headers, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: strings.ToLower(name), Value: v},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(code.Code_OK)}, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: ok}}, nil
}

// checkHeaders are the headers of a Check's request: from header_map
// (encode_raw_headers), each value apart, or from headers, where Envoy
// joined a repeated header's values with commas.
func checkHeaders(hr *authv3.AttributeContext_HttpRequest) http.Header {
	h := http.Header{}
	if hm := hr.GetHeaderMap(); hm != nil {
		for _, kv := range hm.GetHeaders() {
			v := kv.GetValue()
			if len(kv.GetRawValue()) > 0 {
				v = string(kv.GetRawValue())
			}
			h.Add(kv.GetKey(), v)
		}
		return h
	}
	for k, v := range hr.GetHeaders() {
		if !strings.HasPrefix(k, ":") {
			h.Add(k, v)
		}
	}
	return h
}

// peerCertificate is the client's certificate Envoy gives in a Check's
// source: its PEM, URL-encoded, as Envoy's TLS connection info writes it;
// nil for none, or one that does not parse.
func peerCertificate(escaped string) *x509.Certificate {
	if escaped == "" {
		return nil
	}
	text, err := url.QueryUnescape(escaped)
	if err != nil {
		return nil
	}
	b, _ := pem.Decode([]byte(text))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil
	}
	return cert
}

// denied is a refusal as Envoy sends it to the client.
func denied(status int, h http.Header, body string) *authv3.CheckResponse {
	d := &authv3.DeniedHttpResponse{Status: &typev3.HttpStatus{Code: typev3.StatusCode(status)}, Body: body}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			d.Headers = append(d.Headers, &corev3.HeaderValueOption{
				Header:       &corev3.HeaderValue{Key: strings.ToLower(k), Value: v},
				AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD,
			})
		}
	}
	c := code.Code_PERMISSION_DENIED
	switch status {
	case http.StatusUnauthorized:
		c = code.Code_UNAUTHENTICATED
	case http.StatusBadRequest:
		c = code.Code_INVALID_ARGUMENT
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(c)}, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: d}}
}

// capture is a ResponseWriter that keeps the answer.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}
