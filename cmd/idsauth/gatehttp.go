package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The gate's HTTP endpoints, asked by the proxies (docs/GATEWAY.md):
//
//	/auth                 Traefik's ForwardAuth, Caddy's forward_auth, the HAProxy Lua action:
//	                      the original request in X-Forwarded-Method, -Host and -Uri; the whole answer counts
//	/auth/nginx           nginx's auth_request: the same, a refusal's status 401 or 403 (nginx takes no other)
//	/auth/nginx/answer    nginx's error_page redirect after a refusal: the refusal's whole answer
//	/envoy/...            Envoy's HTTP ext_authz (path_prefix /envoy): the original request is the request
//	/.well-known/oauth-protected-resource/...  the routes' RFC 9728 documents
//	/.well-known/jwks.json                     the assertion's key, for the upstreams
//
// and Envoy's gRPC ext_authz (envoy.service.auth.v3.Authorization/Check)
// on the same listener (HTTP/2).
const (
	pathAuth        = "/auth"
	pathNginx       = "/auth/nginx"
	pathNginxAnswer = "/auth/nginx/answer"
	pathEnvoy       = "/envoy"
	pathMetadata    = "/.well-known/oauth-protected-resource"
	pathGateJWKS    = "/.well-known/jwks.json"
)

// original is the request a proxy asks about.
type original struct {
	method, host, uri string
	trusted           bool // it came from a trusted proxy
}

// errForwarded: a trusted proxy's headers that do not say which request
// it asks about.
var errForwarded = errors.New("the proxy's X-Forwarded-Method and X-Forwarded-Uri are missing or given twice")

// trusts reports whether addr (a RemoteAddr, or a gRPC peer's address)
// is a trusted proxy's.
func (e *gateEngine) trusts(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap().WithZone("")
	for _, p := range e.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// originalOf is the request r asks about. From a trusted proxy it is in
// X-Forwarded-Method, -Host (else Host) and -Uri; from anyone else those
// headers are not read, and r asks about itself. On /envoy it is r
// itself, its path without the prefix.
func (e *gateEngine) originalOf(r *http.Request, envoy bool) (original, error) {
	o := original{method: r.Method, host: r.Host, uri: r.RequestURI, trusted: e.trusts(r.RemoteAddr)}
	switch {
	case envoy:
		o.uri = strings.TrimPrefix(o.uri, pathEnvoy)
		if o.uri == "" || o.uri[0] == '?' {
			o.uri = "/" + o.uri
		}
	case o.trusted:
		method, ok1 := one(r.Header, "X-Forwarded-Method")
		uri, ok2 := one(r.Header, "X-Forwarded-Uri")
		if !ok1 || !ok2 || method == "" || uri == "" {
			return o, errForwarded
		}
		o.method, o.uri = method, uri
		if host, ok := one(r.Header, "X-Forwarded-Host"); ok && host != "" {
			o.host = host
		}
	}
	return o, nil
}

// one is the header's value when it is given once.
func one(h http.Header, name string) (string, bool) {
	v := h[name]
	if len(v) != 1 {
		return "", false
	}
	return v[0], true
}

// errNoRoute: a request no route covers.
var errNoRoute = errors.New("no route of the gate covers this request")

// route finds the route of o: the longest prefix on its host under which
// both readings of its path fall (see readPath), or an error: a
// *pathError, or errNoRoute.
func (e *gateEngine) route(o original) (*gateRoute, error) {
	path, _, _ := strings.Cut(o.uri, "?")
	readings, err := readPath(path)
	if err != nil {
		return nil, err
	}
	r := e.find(o.host, readings[0])
	for _, p := range readings[1:] {
		if e.find(o.host, p) != r {
			return nil, &pathError{"read as some upstreams read it (%2F or \\ a separator, ;parameters dropped), it falls under another route"}
		}
	}
	if r == nil || (len(r.methods) > 0 && !slices.Contains(r.methods, o.method)) {
		return nil, errNoRoute
	}
	return r, nil
}

// find is the route of the longest prefix covering path on host.
func (e *gateEngine) find(host, path string) *gateRoute {
	var best *gateRoute
	for _, r := range e.routes {
		if sameHost(host, r.host, e.scheme) && under(path, r.prefix, e.fold) && (best == nil || len(r.prefix) > len(best.prefix)) {
			best = r
		}
	}
	return best
}

// subrequest is the request the route's chain decides: o's method and
// URI, and of r's headers those the middleware reads (the token, the
// proofs, the forwarded certificate from a trusted proxy). From a trusted
// proxy, r's own TLS connection is the proxy's: its certificate is never
// the client's.
func (e *gateEngine) subrequest(r *http.Request, o original) (*http.Request, error) {
	u, err := url.ParseRequestURI(o.uri)
	if err != nil {
		return nil, &pathError{"not a request URI"}
	}
	h := make(http.Header, 3)
	for _, name := range []string{"Authorization", "Dpop", e.certHeader} {
		if v, ok := r.Header[name]; ok && name != "" {
			h[name] = v
		}
	}
	sr := &http.Request{
		Method: o.method, URL: u, RequestURI: o.uri, Host: o.host, Header: h, Body: http.NoBody,
		Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor, RemoteAddr: r.RemoteAddr,
	}
	if !o.trusted {
		sr.TLS = r.TLS
	}
	return sr.WithContext(r.Context()), nil
}

// refuse answers a request the gate refuses before any route's chain: a
// path it will not decide for (400), a request no route covers (403),
// or a trusted proxy's headers that name no request (400).
func refuse(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if errors.Is(err, errNoRoute) {
		status = http.StatusForbidden
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(http.StatusText(status) + ": " + err.Error() + "\n"))
}

// nginxWriter is the answer to nginx's auth_request: the route's own, but
// that a refusal's status is 401 or 403, the only ones auth_request
// passes (403 for the others), without its WWW-Authenticate, and that
// the refusal is kept for the error_page call that asks for it (see
// answerMemory), which sends it whole. auth_request would copy one
// WWW-Authenticate of a 401 onto the answer, and the error_page's answer
// carries them all: the challenge would come twice.
type nginxWriter struct {
	http.ResponseWriter
	refused *storedAnswer
	body    bytes.Buffer
}

func (w *nginxWriter) WriteHeader(code int) {
	if code >= 200 && code < 300 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.refused = &storedAnswer{status: code, header: w.Header().Clone()}
	w.Header().Del("WWW-Authenticate")
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		code = http.StatusForbidden
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *nginxWriter) Write(b []byte) (int, error) {
	if w.refused != nil {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// decide answers a proxy's question about the request r forwards.
func (g *gate) decide(w http.ResponseWriter, r *http.Request, e *gateEngine, path string) {
	o, err := e.originalOf(r, path == pathEnvoy || strings.HasPrefix(path, pathEnvoy+"/"))
	var route *gateRoute
	if err == nil {
		route, err = e.route(o)
	}
	var sr *http.Request
	if err == nil {
		sr, err = e.subrequest(r, o)
	}
	if path != pathNginx {
		if err != nil {
			refuse(w, err)
			return
		}
		route.chain.ServeHTTP(w, sr)
		return
	}
	nw := &nginxWriter{ResponseWriter: w}
	if err != nil {
		refuse(nw, err)
	} else {
		route.chain.ServeHTTP(nw, sr)
	}
	if nw.refused != nil && o.trusted {
		nw.refused.body = nw.body.Bytes()
		id, _ := one(r.Header, "X-Request-Id")
		g.shared.answers.put(id, *nw.refused, time.Now())
	}
}

// answer is nginx's error_page call after a refusal: the answer of the
// refusal, kept by its request ID; or, if it is no longer kept, the
// answer of a new decision.
func (g *gate) answer(w http.ResponseWriter, r *http.Request, e *gateEngine) {
	if e.trusts(r.RemoteAddr) {
		if id, ok := one(r.Header, "X-Request-Id"); ok {
			if a, ok := g.shared.answers.take(id, time.Now()); ok {
				h := w.Header()
				for k, v := range a.header {
					h[k] = v
				}
				w.WriteHeader(a.status)
				_, _ = w.Write(a.body)
				return
			}
		}
	}
	g.decide(w, r, e, pathAuth)
}

// metadata serves the RFC 9728 document of the route the URL is under.
func (g *gate) metadata(w http.ResponseWriter, r *http.Request, e *gateEngine) {
	host := r.Host
	if e.trusts(r.RemoteAddr) {
		if h, ok := one(r.Header, "X-Forwarded-Host"); ok && h != "" {
			host = h
		}
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), pathMetadata)
	if path == "" {
		path = "/"
	}
	readings, err := readPath(path)
	var route *gateRoute
	if err == nil {
		route = e.find(host, readings[0])
	}
	if route == nil || e.find(host, readings[1]) != route || e.find(host, readings[2]) != route {
		http.NotFound(w, r)
		return
	}
	route.metadata.ServeHTTP(w, r)
}
