// Package oauthwire writes the OAuth 2.0 error answers that several
// packages share: the RFC 6750 §3 WWW-Authenticate challenge and the JSON
// error body of RFC 6749 §5.2.
package oauthwire

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Realm is the realm of the module's challenges when none is configured:
// the middleware's Bearer challenge (middleware.BearerConfig.Realm's default) and the
// issuer's Basic challenge.
const Realm = "idsauth"

// Error is the JSON body of an OAuth 2.0 error answer.
type Error struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	Scope       string `json:"scope,omitempty"`
}

// Challenge returns a Bearer challenge for the WWW-Authenticate header. An
// empty code gives the bare challenge that RFC 6750 §3.1 prescribes when
// the request carried no token. Every value is cleaned so that nothing can
// break the header's quoting.
func Challenge(realm string, e Error) string {
	return SchemeChallenge("Bearer", realm, e)
}

// SchemeChallenge is Challenge for any scheme ("DPoP", RFC 9449 §7.1),
// with more parameters after the error's: params are name and value
// pairs, such as "algs" (a DPoP challenge's proof algorithms) or
// "resource_metadata" (RFC 9728 §5.1); a pair with an empty value is
// left out.
func SchemeChallenge(scheme, realm string, e Error, params ...string) string {
	var b strings.Builder
	b.Grow(64 + len(realm) + len(e.Description) + len(e.Scope))
	b.WriteString(scheme)
	b.WriteString(` realm="`)
	b.WriteString(Clean(realm))
	b.WriteByte('"')
	if e.Code != "" {
		attr(&b, "error", e.Code)
		if e.Description != "" {
			attr(&b, "error_description", e.Description)
		}
		if e.Scope != "" {
			attr(&b, "scope", e.Scope)
		}
	}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i+1] != "" {
			attr(&b, params[i], params[i+1])
		}
	}
	return b.String()
}

func attr(b *strings.Builder, name, value string) {
	b.WriteString(", ")
	b.WriteString(name)
	b.WriteString(`="`)
	b.WriteString(Clean(value))
	b.WriteByte('"')
}

// Clean keeps only the characters RFC 6749 §5.2 allows in error_description
// (%x20-21 / %x23-5B / %x5D-7E): no quote, no backslash, no control or
// non-ASCII character.
func Clean(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !allowed(s[i]) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if allowed(s[i]) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

func allowed(c byte) bool {
	return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'
}

// WriteJSON writes v as a JSON answer with the given status and the
// no-store caching headers every authentication answer carries.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only our own types reach here; they always marshal.
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	WriteBody(w, status, append(body, '\n'))
}

// WriteBody writes body, JSON already made and ending in a newline, as
// WriteJSON writes its answer: with the given status and the no-store
// caching headers.
func WriteBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// What h.Set would do, with one allocation for the three values.
	v := make([]string, 3)
	v[0], v[1], v[2] = "application/json", "no-store", "no-cache"
	h["Content-Type"], h["Cache-Control"], h["Pragma"] = v[0:1:1], v[1:2:2], v[2:3:3]
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// AppendString appends s to b as a JSON string, escaped byte for byte as
// encoding/json.Marshal escapes it: quote, backslash and control
// characters; <, > and & (HTML-safe); U+2028 and U+2029; and each byte of
// invalid UTF-8 as \ufffd. Writers that build JSON by hand use it so that
// their bytes are those that json.Marshal would have made.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !plain[c] {
			return appendEscaped(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendEscaped is AppendString for a string with something to escape,
// or non-ASCII: the rare case, kept out of the common one's way.
func appendEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain holds the ASCII characters JSON strings hold as they are: all but
// the controls, quote, backslash and the HTML-sensitive <, > and &.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
