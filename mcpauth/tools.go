package mcpauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// toolScopes returns next behind the scope check of the tool a call
// names: the body of a POST (a JSON-RPC message, or a batch of them) is
// read, once its token has been accepted, and every "tools/call" in it
// must pass its tool's RequireScope before next gets the request, with
// the body as it came. The 403 is middleware.RequireScope's: the MCP
// client's step-up reads it. Only the holder of a good token makes the
// body be read, at most maxBody bytes of it, which the SDKs read whole
// anyway.
func (g *Guard) toolScopes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
		r.Body.Close()
		if err != nil {
			if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "request body unreadable", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		tools, ok := calledTools(body)
		if !ok {
			http.Error(w, "request body is not JSON", http.StatusBadRequest)
			return
		}
		h := next
		for _, tool := range tools {
			if need, ok := g.tools[tool]; ok {
				h = need(h)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// calledTools returns the names of the tools a JSON-RPC message, or a
// batch of messages, calls ("tools/call", params.name), each once, or
// ok false for a body that is not JSON. It reads as broadly as any
// decoder might, so that no spelling passes a call by its check: a
// member named "method" or "params" in any case, given any number of
// times, counts, and so does every "name" in any case of such params;
// a message any of whose methods is "tools/call" calls every name.
func calledTools(body []byte) (tools []string, ok bool) {
	if tools, ok, plain := plainCall(body); plain {
		return tools, ok
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	t, err := d.Token()
	if err != nil {
		return nil, false
	}
	if t == json.Delim('[') {
		for d.More() {
			if tools, ok = messageTools(d, tools); !ok {
				return nil, false
			}
		}
		if _, err := d.Token(); err != nil {
			return nil, false
		}
	} else if t == json.Delim('{') {
		if tools, ok = objectTools(d, tools); !ok {
			return nil, false
		}
	} else {
		return nil, true // a scalar: the SDK refuses it
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false // something after the message
	}
	return tools, true
}

// plainCall reads the common body quickly: one message of ASCII alone
// (encoding/json folds "ſ" to "s", "K" to "k"), without an escape, where
// "method" and "params" appear once and "name" at most once, in any case
// (as keys or values), so that no member can be spelt twice; plain is
// false for any other body, which calledTools reads token by token.
func plainCall(body []byte) (tools []string, ok, plain bool) {
	b := bytes.TrimLeft(body, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return nil, false, false
	}
	method, params, name := 0, 0, 0
	for i, c := range b {
		switch {
		case c >= 0x80 || c == '\\':
			return nil, false, false
		case c != '"':
		case foldPrefix(b[i+1:], `method"`):
			method++
		case foldPrefix(b[i+1:], `params"`):
			params++
		case foldPrefix(b[i+1:], `name"`):
			name++
		}
	}
	if method != 1 || params != 1 || name > 1 {
		return nil, false, false
	}
	var m struct {
		Method string
		Params struct{ Name string }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false, false // the careful reader says why
	}
	if m.Method == "tools/call" {
		return []string{m.Params.Name}, true, true
	}
	return nil, true, true
}

// foldPrefix reports whether b begins with s, ASCII case aside (s is
// lower case).
func foldPrefix(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// messageTools reads one value of a batch: an object is a message.
func messageTools(d *json.Decoder, tools []string) ([]string, bool) {
	t, err := d.Token()
	if err != nil {
		return nil, false
	}
	if t != json.Delim('{') {
		return tools, skipRest(d, t)
	}
	return objectTools(d, tools)
}

// objectTools reads a message's members, its opening brace read.
func objectTools(d *json.Decoder, tools []string) ([]string, bool) {
	var call bool
	var names []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, false
		}
		key, _ := k.(string)
		switch {
		case strings.EqualFold(key, "method"):
			var m any
			if d.Decode(&m) != nil {
				return nil, false
			}
			call = call || m == "tools/call"
		case strings.EqualFold(key, "params"):
			var ok bool
			if names, ok = paramNames(d, names); !ok {
				return nil, false
			}
		default:
			var skip json.RawMessage
			if d.Decode(&skip) != nil {
				return nil, false
			}
		}
	}
	if _, err := d.Token(); err != nil {
		return nil, false
	}
	if call {
		for _, n := range names {
			tools = appendOnce(tools, n)
		}
	}
	return tools, true
}

// paramNames reads a message's params and adds every "name" in it,
// in any case and however often given, to names.
func paramNames(d *json.Decoder, names []string) ([]string, bool) {
	t, err := d.Token()
	if err != nil {
		return nil, false
	}
	if t != json.Delim('{') {
		return names, skipRest(d, t)
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return nil, false
		}
		var n string
		if key, _ := k.(string); strings.EqualFold(key, "name") && json.Unmarshal(v, &n) == nil {
			names = append(names, n)
		}
	}
	_, err = d.Token()
	return names, err == nil
}

// skipRest skips the rest of a value whose first token was t.
func skipRest(d *json.Decoder, t json.Token) bool {
	if t != json.Delim('[') && t != json.Delim('{') {
		return true
	}
	for depth := 1; depth > 0; {
		t, err := d.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return true
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
