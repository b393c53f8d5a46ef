// Package oauthwire writes the OAuth 2.0 error answers that several
// packages share: the RFC 6750 §3 WWW-Authenticate challenge and the JSON
// error body of RFC 6749 §5.2.
package oauthwire

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Realm is the realm of the module's challenges when none is configured:
// the middleware's Bearer challenge (middleware.DefaultRealm) and the
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
	var b strings.Builder
	b.Grow(64 + len(realm) + len(e.Description) + len(e.Scope))
	b.WriteString(`Bearer realm="`)
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
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
