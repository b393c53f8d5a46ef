// Package origin names the origin of a URL (RFC 6454 §4: its scheme, host
// and port), the unit to which the client package and connectauth send a
// client's token, so that both compare the same three parts.
package origin

import (
	"net"
	"net/url"
	"strings"
)

// Of is u's origin in one form for one origin: "scheme://host:port",
// scheme and host in lower case, the port written out when it is the
// scheme's default (http 80, https 443).
func Of(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
