package middleware

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// PublicOrigin returns middleware that tells the handlers after it which
// origin clients reach them by: the scheme, host and port of the listener
// the request came in on, such as "https://mtls.api.example.com". Wrap
// each listener's handler in it when one API is served on several origins
// (a plain listener and one that asks for client certificates, say):
// there, ResourceMetadata.Handler serves documents whose "resource" is on
// that origin, every challenge's resource_metadata names that origin's
// document (RFC 9728 §3.3: a client keeps a document only if its
// "resource" is the URL it called), and a DPoP proof's htu must name that
// origin in place of DPoPConfig.PublicURL. Without it, the origin is
// ResourceMetadata.Resource's (and DPoPConfig.PublicURL). The origin is
// configured, never read from the request's Host, which the client
// chooses. Each request through it costs two allocations (a context and
// a request). It panics when origin is not an http or https URL of a
// scheme and host alone.
func PublicOrigin(origin string) func(http.Handler) http.Handler {
	o, err := parseOrigin(origin)
	if err != nil {
		panic(fmt.Sprintf("middleware: PublicOrigin %v", err))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), originKey{}, o)))
		})
	}
}

type originKey struct{}

// requestOrigin is the origin PublicOrigin gave r, or fallback.
func requestOrigin(r *http.Request, fallback string) string {
	if o, ok := r.Context().Value(originKey{}).(string); ok {
		return o
	}
	return fallback
}

// parseOrigin checks that s is an http or https URL of a scheme and host
// (and port) alone, a trailing slash allowed, and returns it without it.
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%q: want the scheme, host and port alone, such as https://api.example.com", s)
	}
	return strings.TrimSuffix(s, "/"), nil
}
