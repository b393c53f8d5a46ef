package issuer

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

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
	tokenParam         // introspection and revocation
	tokenTypeHintParam // read, and ignored as RFC 7662 and RFC 7009 allow
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
func parseForm(body string, f *tokenForm) refusal {
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
	return refusal{}
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
func readForm(w http.ResponseWriter, r *http.Request, st *state, f *tokenForm) refusal {
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
	maxBytes := st.limits.MaxBodyBytes
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
