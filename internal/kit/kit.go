// Package kit holds the contract's tables (docs/CONTRACT.md §1, §1.1,
// §1.3 and §2.1): the cases a protected route or a token endpoint must
// answer, each with its request, how its token was obtained, and what
// the answer must be. idsauthtest runs them against a handler in process,
// its tokens minted by a test issuer; idsauth conformance runs the same
// tables against anything running, over HTTP, its tokens from a real
// issuer or forged with keys of its own. One set of tables, two senders.
package kit

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idsauth/idsauth/internal/tokenecho"
)

// Answer is what the API answered.
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Conn is the connection a case's request goes over.
type Conn int

const (
	// AnyConn: whatever the sender uses (in process: plain HTTP; over the
	// network: the URL's scheme).
	AnyConn Conn = iota
	// TLSConn: a TLS connection, presenting Request.Cert when it is set.
	TLSConn
	// PlainConn: plain HTTP.
	PlainConn
)

// Request is a case's request to the route.
type Request struct {
	Method string
	Path   string // the path, and the query when there is one; or an absolute URL
	Header http.Header
	Body   string
	// From is the client's address ("host:port"), for a case that needs
	// one (a trusted proxy's, or none): a sender over the network sends
	// from its own and cannot run such a case. "" means the sender's.
	From string
	Conn Conn
	// Cert is the client certificate presented over a TLSConn; nil none.
	Cert *tls.Certificate
}

// Case is one case of a table.
type Case struct {
	Name string
	// Source says how the case's token was obtained, for a reader of a
	// report; "" when the request carries none.
	Source string
	// Skip says why the case cannot run where it is run; "" runs it.
	Skip  string
	Req   Request
	Token string // the token the answer must not echo; "" none
	Check func(p *Problems, a Answer)
	// Got is the answer when it came before the table was run (a probe
	// that is itself a case).
	Got *Answer
	// OwnChecks: Check alone judges the answer; Run adds no refusal
	// checks of a protected route's (a token endpoint's case).
	OwnChecks bool
}

// Result is a case as run: its problems (none: it passed), or why it was
// skipped.
type Result struct {
	Name     string
	Source   string
	Skipped  string
	Problems []string
}

// Sender sends a case's request and returns the answer. Skip says why it
// cannot send req ("" when it can).
type Sender interface {
	Send(req Request) (Answer, error)
	Skip(req Request) string
}

// Run runs cases with s, checking each answer and that no refusal is
// cached or echoes the case's token.
func Run(s Sender, cases []Case) []Result {
	out := make([]Result, 0, len(cases))
	for _, c := range cases {
		r := Result{Name: c.Name, Source: c.Source, Skipped: c.Skip}
		if r.Skipped == "" && c.Got == nil {
			r.Skipped = s.Skip(c.Req)
		}
		if r.Skipped != "" {
			out = append(out, r)
			continue
		}
		a := c.Got
		if a == nil {
			got, err := s.Send(c.Req)
			if err != nil {
				r.Problems = []string{err.Error()}
				out = append(out, r)
				continue
			}
			a = &got
		}
		var p Problems
		c.Check(&p, *a)
		if !c.OwnChecks {
			p.refusal(*a, c.Token)
		}
		r.Problems = p
		out = append(out, r)
	}
	return out
}

// Handler sends requests to an http.Handler in process, with the TLS
// state and client address a connection would give them: the sender of
// idsauthtest's checks.
type Handler struct{ H http.Handler }

// Skip runs every case.
func (Handler) Skip(Request) string { return "" }

// Send serves req with the handler.
func (s Handler) Send(req Request) (Answer, error) {
	rec := httptest.NewRecorder()
	s.H.ServeHTTP(rec, s.Request(req))
	return Answer{rec.Code, rec.Header(), rec.Body.String()}, nil
}

// Request is req as the handler gets it.
func (Handler) Request(req Request) *http.Request {
	var body io.Reader
	if req.Body != "" {
		body = strings.NewReader(req.Body)
	}
	target := req.Path
	if strings.HasPrefix(target, "/") {
		target = "http://service.test" + target
	}
	r := httptest.NewRequest(req.Method, target, body)
	for name, values := range req.Header {
		r.Header[name] = append([]string(nil), values...)
	}
	if req.From != "" {
		r.RemoteAddr = req.From
	}
	if req.Conn == TLSConn {
		r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true}
		if req.Cert != nil {
			r.TLS.PeerCertificates = []*x509.Certificate{req.Cert.Leaf}
		}
	}
	return r
}

// NewRequest makes a request for route, "METHOD /path" (a bare path means
// GET), with the given Authorization values.
func NewRequest(route string, authz ...string) Request {
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodGet, route
	}
	r := Request{Method: method, Path: path, Header: http.Header{}}
	for _, a := range authz {
		r.Header.Add("Authorization", a)
	}
	return r
}

// Problems collects what one case got wrong.
type Problems []string

// Addf adds a problem.
func (p *Problems) Addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// BareChallenge checks the no-token answer (CONTRACT.md §1): 401, a
// Bearer challenge without error, no JSON.
func (p *Problems) BareChallenge(a Answer) {
	if a.Status != http.StatusUnauthorized {
		p.Addf("status %d, want 401", a.Status)
		return
	}
	ch := a.Header.Get("WWW-Authenticate")
	if !strings.HasPrefix(ch, "Bearer realm=") || strings.Contains(ch, "error=") {
		p.Addf("WWW-Authenticate %q, want a bare Bearer challenge (realm only, no error)", ch)
	}
	if isJSON(a.Body) {
		p.Addf("body is JSON (%q); a request without a token gets none", a.Body)
	}
}

func isJSON(body string) bool {
	return json.Valid([]byte(body)) && strings.HasPrefix(strings.TrimSpace(body), "{")
}

// OAuthError checks a JSON error answer with its Bearer challenge.
func (p *Problems) OAuthError(a Answer, status int, code string) map[string]any {
	return p.SchemeError(a, "Bearer", status, code)
}

// SchemeError checks a JSON error answer with its challenge of scheme.
func (p *Problems) SchemeError(a Answer, scheme string, status int, code string) map[string]any {
	if a.Status != status {
		p.Addf("status %d, want %d", a.Status, status)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a.Body), &m); err != nil || m["error"] != code {
		p.Addf("body %q, want JSON with \"error\":%q", a.Body, code)
	}
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p.Addf("Content-Type %q, want application/json", ct)
	}
	if ch := a.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, scheme+" ") || !strings.Contains(ch, `error="`+code+`"`) {
		p.Addf("WWW-Authenticate %q, want a %s challenge with error=%q", ch, scheme, code)
	}
	return m
}

// Passes checks that a valid request got past the middleware.
func (p *Problems) Passes(a Answer) {
	if a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
		p.Addf("status %d: the middleware refused a valid token (body %q)", a.Status, a.Body)
	}
}

// refusal checks what every 401 and 403 shares: no caching, no echo.
func (p *Problems) refusal(a Answer, token string) {
	if a.Status != http.StatusUnauthorized && a.Status != http.StatusForbidden && a.Status != http.StatusBadRequest {
		return
	}
	if cc := a.Header.Get("Cache-Control"); cc != "no-store" {
		p.Addf("Cache-Control %q, want no-store", cc)
	}
	p.Echoes(a, token)
}

// Echoes reports an answer (its headers or body; net/http writes the
// status line's text itself) that holds any part of the token (see
// tokenecho.Parts).
func (p *Problems) Echoes(a Answer, token string) {
	if token == "" {
		return
	}
	var h bytes.Buffer
	_ = a.Header.Write(&h)
	if part := tokenecho.Find(h.String()+"\n"+a.Body, token); part != "" {
		p.Addf("the answer echoes the token's %s", part)
	}
}
