// Package tokenecho names the pieces of a token that a refusal must never
// show, for the test kits' contract checkers (idsauthtest, and the gRPC
// and Connect modules' kits): each checker looks for them in what it got
// back, however its protocol carries it.
package tokenecho

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// Part is one piece of a token: what it is, and its text.
type Part struct{ Name, Text string }

// Parts are the pieces of token an answer must not hold: the start or end
// of any of its three segments, its header or payload decoded, and the
// claim or header values a token carries that nothing else would (its
// jti, sub, client_id and kid); each long enough (8 characters or more)
// that finding it is no accident.
func Parts(token string) []Part {
	var parts []Part
	add := func(name, text string) {
		if len(text) >= 8 {
			parts = append(parts, Part{name, text})
		}
	}
	segs := strings.Split(token, ".")
	names := []string{"header", "payload", "signature"}
	for i, s := range segs {
		name := "segment"
		if i < len(names) && len(segs) == 3 {
			name = names[i]
		}
		const n = 16
		if len(s) > n {
			add(name+" (its start)", s[:n])
			add(name+" (its end)", s[len(s)-n:])
		} else {
			add(name, s)
		}
		if i > 1 {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(raw, &fields) != nil {
			continue
		}
		add(name+" decoded", string(raw))
		for _, k := range []string{"jti", "sub", "client_id", "kid"} {
			if v, ok := fields[k].(string); ok {
				add(k+" "+strconv.Quote(v), v)
			}
		}
	}
	return parts
}

// Find returns the name of the first part of token that text holds, or "".
func Find(text, token string) string {
	for _, p := range Parts(token) {
		if strings.Contains(text, p.Text) {
			return p.Name
		}
	}
	return ""
}
