package issuer

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// The endpoints that read a request, as their refusals and the log name
// them.
const (
	tokenEndpoint         = "token"
	introspectionEndpoint = "introspection"
	revocationEndpoint    = "revocation"
)

// request is a request to the token, introspection or revocation
// endpoint, read once (read): its form, who it says is asking and by
// what proof, and where it comes from. Authentication, the grant and the
// answer work on it, not on the http.Request. It lives on its endpoint's
// stack.
type request struct {
	endpoint string // tokenEndpoint, introspectionEndpoint or revocationEndpoint
	ctx      context.Context
	st       *state    // the configuration (at the token endpoint, the span of now)
	now      time.Time // the issuer's clock, read once
	form     tokenForm
	addr     string   // the client's address, as the failure limiter keys it
	proofs   []string // the DPoP headers
	// peer is the client's certificate (RFC 8705), its connection's or
	// the one a trusted proxy forwards, and the intermediates it came
	// with: leaf first, nil for none.
	peer []*x509.Certificate

	// The credentials, as read: a secret (by Basic or in the form), or a
	// signed assertion (private_key_jwt).
	id        string
	secret    string
	basic     bool       // the credentials came in an Authorization: Basic header
	asserted  bool       // a client assertion, not a secret
	certAuth  bool       // the client's certificate, not a secret (RFC 8705 §2)
	assertion *assertion // the assertion decoded; nil when it is no signed JWT
	federated bool       // the assertion is a workload's token (federation_auth.go)
	unusable  *refusal   // why the credentials cannot be checked, when they cannot

	who attempt // for the events and the log
}

// read reads r, a request to q.endpoint of st's configuration at now:
// POST only, its form, its credentials, its client's address. It refuses
// what is wrong with the method or the form; what is wrong with the
// credentials is kept in q.unusable, for the endpoint to answer in its
// turn.
func (q *request) read(w http.ResponseWriter, r *http.Request, st *state, now time.Time) *refusal {
	q.ctx, q.st, q.now = r.Context(), st, now
	q.who.endpoint = q.endpoint
	if r.Method != http.MethodPost {
		return refuseWith(notPost, q.endpoint)
	}
	if no := readForm(w, r, st, &q.form); no != nil {
		return no
	}
	q.peer = st.mtls.peer(r)
	switch {
	case hasAssertion(&q.form):
		q.asserted = true
		q.unusable = q.readAssertion(r)
	case q.readCertAuth(r):
		q.unusable = checkLengths(q.id, "")
	default:
		q.unusable = q.readSecret(r)
	}
	q.addr = st.addrs.Addr(r)
	q.proofs = r.Header["Dpop"] // canonical: Values would allocate to canonicalize "DPoP"
	return nil
}

// answer is how the endpoint answers no: under the identityserver
// profile at the token endpoint, as IdentityServer does; a 401 to a
// client that used Basic challenges it.
func (q *request) answer(no *refusal) answer {
	return no.answer(q.endpoint == tokenEndpoint && q.st.identityServer, q.basic)
}

// readSecret reads the client's ID and secret, from HTTP Basic (whose
// parts are form-urlencoded, RFC 6749 §2.3.1) or the body. RFC 6749 §2.3
// forbids two authentication methods: Basic with a body client_secret, or
// with a different body client_id, is refused; Basic with the same
// client_id repeated in the body is one method, as requests-oauthlib sends
// it and IdentityServer accepts it. Over-long values are refused here,
// before anything is remembered of them.
func (q *request) readSecret(r *http.Request) *refusal {
	authz := r.Header.Values("Authorization")
	if len(authz) > 1 {
		return refuse(twoAuthorizations)
	}
	form := &q.form
	if len(authz) == 1 && len(authz[0]) >= 6 && strings.EqualFold(authz[0][:6], "Basic ") {
		q.basic = true
		u, p, ok := basicAuth(authz[0][6:])
		if ok {
			var err1, err2 error
			u, err1 = unescape(u)
			p, err2 = unescape(p)
			ok = err1 == nil && err2 == nil
		}
		switch {
		case !ok || u == "":
			return refuse(malformedBasic)
		case form.has(clientSecretParam) || (form.has(clientIDParam) && form.get(clientIDParam) != u):
			return refuse(twoMethods)
		}
		q.id, q.secret = u, p
		return checkLengths(u, p)
	}
	if !form.has(clientIDParam) {
		return refuse(noCredentials)
	}
	q.id, q.secret = form.get(clientIDParam), form.get(clientSecretParam)
	return checkLengths(q.id, q.secret)
}

// readAssertion reads a private_key_jwt request's credentials: the
// assertion type, an assertion within its bound, no second method, and
// the client's ID (client_id, else the assertion's sub) within its bound.
func (q *request) readAssertion(r *http.Request) *refusal {
	authz := r.Header.Values("Authorization")
	form := &q.form
	switch {
	case len(authz) > 1:
		return refuse(twoAuthorizations)
	case len(authz) == 1 && len(authz[0]) >= 6 && strings.EqualFold(authz[0][:6], "Basic "),
		form.has(clientSecretParam):
		return refuse(assertionAndSecret)
	case !q.st.assertionTypeOK(form.get(assertionTypeParam)):
		return refuse(assertionType)
	case form.get(assertionParam) == "":
		return refuse(assertionMissing)
	case len(form.get(assertionParam)) > maxAssertionLength:
		return refuse(assertionTooLong)
	}
	q.assertion = parseAssertion(form.get(assertionParam))
	q.id = form.get(clientIDParam)
	if no := q.readFederated(); no != nil {
		return no
	}
	if !form.has(clientIDParam) && q.assertion != nil {
		q.id = q.assertion.sub
	}
	return checkLengths(q.id, "")
}

// hasAssertion reports whether the request authenticates with a client
// assertion.
func hasAssertion(form *tokenForm) bool {
	return form.has(assertionParam) || form.has(assertionTypeParam)
}

// basicAuth decodes the credentials of an Authorization header's Basic
// scheme (RFC 7617): base64 of "user-id:password", split at the first
// colon, as net/http's Request.BasicAuth reads them. A value of usual
// size is decoded on the stack, into one string for both parts.
func basicAuth(encoded string) (user, pass string, ok bool) {
	var src, dst [512]byte
	var raw []byte
	if len(encoded) <= len(src) {
		n, err := base64.StdEncoding.Decode(dst[:], src[:copy(src[:], encoded)])
		if err != nil {
			return "", "", false
		}
		raw = dst[:n]
	} else {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(encoded); err != nil {
			return "", "", false
		}
	}
	if user, pass, ok = strings.Cut(string(raw), ":"); !ok {
		return "", "", false
	}
	return user, pass, true
}

// checkLengths refuses a client ID or secret longer than any the issuer
// accepts in its configuration.
func checkLengths(id, pass string) *refusal {
	if tooLong(id, maxClientIDLength) {
		return refuse(clientIDTooLong)
	}
	if tooLong(pass, maxSecretLength) {
		return refuse(secretTooLong)
	}
	return nil
}

// tooLong reports whether s has more than n characters, counting them
// only when its bytes could be more.
func tooLong(s string, n int) bool {
	return len(s) > n && utf8.RuneCountInString(s) > n
}

// tokenForm is a request's parameters: the six the token endpoint reads,
// the two of introspection and revocation, and resource (RFC 8707), which
// may be given several times.
type tokenForm struct {
	value    [numParams]string
	given    [numParams]bool
	resource []string
}

// param names one of the parameters a tokenForm holds.
type param uint8

const (
	grantTypeParam param = iota
	scopeParam
	clientIDParam
	clientSecretParam
	assertionTypeParam
	assertionParam
	grantAssertionParam // the JWT bearer grant's (RFC 7523 §2.1)
	tokenParam          // introspection and revocation
	tokenTypeHintParam  // read, and ignored as RFC 7662 and RFC 7009 allow
	numParams
)

// paramOf returns the param named name, or numParams for another name.
func paramOf(name string) param {
	switch name {
	case "grant_type":
		return grantTypeParam
	case "scope":
		return scopeParam
	case "client_id":
		return clientIDParam
	case "client_secret":
		return clientSecretParam
	case "client_assertion_type":
		return assertionTypeParam
	case "client_assertion":
		return assertionParam
	case "assertion":
		return grantAssertionParam
	case "token":
		return tokenParam
	case "token_type_hint":
		return tokenTypeHintParam
	}
	return numParams
}

// get returns parameter p's value, "" when it was not given.
func (f *tokenForm) get(p param) string { return f.value[p] }

// has reports whether parameter p was given, even empty.
func (f *tokenForm) has(p param) bool { return f.given[p] }

// maxParams bounds a form's parameters, as url.ParseQuery bounds them.
const maxParams = 10000

var notAForm = refuse(malformedForm)

// parseForm parses an application/x-www-form-urlencoded body into f,
// which is empty, as url.ParseQuery does (pairs split on "&", a ";"
// refused, names and values unescaped, "+" a space), and refuses any
// parameter but resource given more than once (RFC 6749 §3.2), however it
// is spelled. A parameter the
// endpoint does not read is otherwise ignored (RFC 6749 §3.2), without
// building a map of every parameter.
func parseForm(body string, f *tokenForm) *refusal {
	if strings.Count(body, "&") >= maxParams {
		return notAForm
	}
	var others map[string]bool // the other names, made for the first one
	repeated, isRepeated := "", false
	for rest := body; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if strings.IndexByte(pair, ';') >= 0 {
			return notAForm
		}
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		name, err1 := unescape(name)
		value, err2 := unescape(value)
		if err1 != nil || err2 != nil {
			return notAForm
		}
		if isRepeated {
			continue // the rest is read for errors only: a malformed form is that first
		}
		switch p := paramOf(name); {
		case name == "resource":
			f.resource = append(f.resource, value)
		case p < numParams && f.given[p]:
			repeated, isRepeated = name, true
		case p < numParams:
			f.value[p], f.given[p] = value, true
		case others[name]:
			repeated, isRepeated = name, true
		default:
			if others == nil {
				others = make(map[string]bool)
			}
			others[name] = true
		}
	}
	if isRepeated {
		return refuseWith(paramTwice, oauthwire.Clean(repeated))
	}
	return nil
}

// unescape is url.QueryUnescape, which returns s itself when it holds
// neither "%" nor "+", found here by the faster byte search.
func unescape(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, nil
	}
	return url.QueryUnescape(s)
}

// readForm reads the form body into f, which is empty: the right content
// type, within the size bound, each parameter but resource (RFC 8707) at
// most once. The caller's f can live on its stack.
func readForm(w http.ResponseWriter, r *http.Request, st *state, f *tokenForm) *refusal {
	const formType = "application/x-www-form-urlencoded"
	if ct := r.Header.Get("Content-Type"); ct != formType { // the usual one needs no parsing
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != formType {
			return refuse(notForm)
		}
	}
	bp := bodies.get()
	defer bodies.put(bp) // cleared: it held a secret
	// A declared length is what net/http's body reader gives, no more:
	// within the bound, the body needs no other limit.
	var in io.Reader = r.Body
	maxBytes := st.maxBody
	if r.ContentLength < 0 || r.ContentLength > maxBytes {
		in = http.MaxBytesReader(w, r.Body, maxBytes)
	}
	body, err := readAll((*bp)[:0], in)
	*bp = body
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return refuseWith(bodyTooLarge, st.maxBodyText)
		}
		return refuse(bodyUnreadable)
	}
	return parseForm(string(body), f)
}

// bodies are the buffers token requests' bodies are read into; answers
// those success answers are written in.
var (
	bodies  = buffers{keep: 4 << 10}
	answers = buffers{keep: 16 << 10}
)

// buffers are byte buffers reused from one request to the next. What they
// held (a secret in a body, a token in an answer) is cleared when they are
// given back; one that grew past keep bytes is left to the collector.
type buffers struct {
	pool sync.Pool
	keep int
}

// get returns an empty buffer.
func (bs *buffers) get() *[]byte {
	if b, ok := bs.pool.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 1024)
	return &b
}

// put clears *b and keeps it for another get, unless it is too large.
func (bs *buffers) put(b *[]byte) {
	if cap(*b) > bs.keep {
		return
	}
	*b = (*b)[:0]
	clear((*b)[:cap(*b)]) // its whole capacity: a failed write may lie past its length
	bs.pool.Put(b)
}

// readAll is io.ReadAll appending to b: a longer body grows b as it
// comes, never ahead of its bytes.
func readAll(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
}
