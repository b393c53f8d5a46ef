package main

import (
	"strings"
)

// A path's readings. The gate decides for the path the upstream will
// act on, which it cannot see: the proxy passes the path as the client
// wrote it (nginx's $request_uri, HAProxy's url, Traefik's and Caddy's
// X-Forwarded-Uri), and the upstream decodes it its own way. So the gate
// reads it the two ways upstreams do, and refuses a path whose readings
// fall under two routes (or one under a route and one under none):
//
//   - strict: percent-escapes decoded but those of "/" and "\" (%2F and
//     %5C stay one segment's bytes, as Go's ServeMux and RFC 3986 have
//     it), dot segments removed, empty segments merged (as nginx does
//     with merge_slashes, its default);
//   - loose: every escape decoded, "\" a separator (as Python's
//     http.server, PHP and IIS take it), then the same;
//   - bare: the strict reading with each segment's parameters (";..."
//     and what follows, up to the next "/") dropped before the dot
//     segments are removed, as Tomcat, Jetty and Spring take a path, so
//     that "/a/..;/b" is "/b" there.
//
// A NUL or control character, a bad escape, or a ".." above the root is
// refused as no upstream agrees on it. The routes' prefixes are matched
// segment by segment, without regard to case when the configuration says
// the upstreams ignore it.

// pathError is a path the gate refuses to decide for.
type pathError struct{ why string }

func (e *pathError) Error() string { return "path refused: " + e.why }

// readPath returns the readings of the path raw (its escaped form,
// without the query): strict, loose and bare.
func readPath(raw string) (readings [3]string, err error) {
	if raw == "" || raw[0] != '/' {
		return readings, &pathError{"not an origin-form path"}
	}
	if plain(raw) {
		return [3]string{raw, raw, raw}, nil // every reading is the path itself
	}
	return readEscaped(raw)
}

// readEscaped is readPath for a path that is not plain.
func readEscaped(raw string) (readings [3]string, err error) {
	var s, l strings.Builder
	s.Grow(len(raw))
	l.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' {
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return readings, &pathError{"a bad percent-escape"}
			}
			c = unhex(raw[i+1])<<4 | unhex(raw[i+2])
			i += 2
			if c < 0x20 || c == 0x7f {
				return readings, &pathError{"an escaped NUL or control character"}
			}
			switch c {
			case '/':
				s.WriteString("%2F")
				l.WriteByte('/')
			case '\\':
				s.WriteString("%5C")
				l.WriteByte('/')
			default:
				s.WriteByte(c)
				l.WriteByte(c)
			}
			continue
		}
		if c <= 0x20 || c == 0x7f {
			return readings, &pathError{"a control character or space"}
		}
		s.WriteByte(c)
		if c == '\\' {
			c = '/'
		}
		l.WriteByte(c)
	}
	for i, p := range [3]string{s.String(), l.String(), dropParams(s.String())} {
		if readings[i], err = cleanPath(p); err != nil {
			return readings, err
		}
	}
	return readings, nil
}

// dropParams drops each segment's parameters: from a ";" to the end of
// its segment.
func dropParams(p string) string {
	if !strings.Contains(p, ";") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		segs[i], _, _ = strings.Cut(seg, ";")
	}
	return strings.Join(segs, "/")
}

// plain reports whether every reading of p is p: no escape, backslash,
// parameter, control character, empty or dot segment. Most paths are;
// they cost no allocation.
func plain(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c <= 0x20 || c >= 0x7f || c == '%' || c == '\\' || c == ';':
			return false
		case c == '/' && i+1 < len(p) && p[i+1] == '/':
			return false
		case c == '.' && p[i-1] == '/' && (i+1 == len(p) || p[i+1] == '/' || p[i+1] == '.' && (i+2 == len(p) || p[i+2] == '/')):
			return false
		}
	}
	return true
}

// cleanPath removes dot segments (RFC 3986 §5.2.4) and merges empty
// segments; a trailing slash stays. A ".." above the root is an error.
func cleanPath(p string) (string, error) {
	segs := strings.Split(p[1:], "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, seg := range segs {
		last := i == len(segs)-1
		switch seg {
		case "", ".":
			trailing = last && len(out) > 0
		case "..":
			if len(out) == 0 {
				return "", &pathError{"a dot segment above the root"}
			}
			out = out[:len(out)-1]
			trailing = last && len(out) > 0
		default:
			out = append(out, seg)
			trailing = false
		}
	}
	clean := "/" + strings.Join(out, "/")
	if trailing {
		clean += "/"
	}
	return clean, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// under reports whether path is prefix or under it, segment by segment.
func under(path, prefix string, fold bool) bool {
	if prefix == "/" {
		return true
	}
	if len(path) < len(prefix) {
		return false
	}
	head := path[:len(prefix)]
	if !(head == prefix || fold && strings.EqualFold(head, prefix)) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '/'
}

// sameHost reports whether the host a request names is host, a route's:
// without regard to case, the scheme's default port as good as none.
func sameHost(got, host, scheme string) bool {
	def := ":443"
	if scheme == "http" {
		def = ":80"
	}
	got, host = strings.TrimSuffix(got, def), strings.TrimSuffix(host, def)
	return strings.EqualFold(got, host)
}
