package middleware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/idsauth/idsauth/internal/dpop"
)

// ResourceMetadata is an OAuth 2.0 protected resource metadata document
// ([RFC 9728]): how to call an API, which issuer's tokens it takes, for
// which scopes, and whether they must be DPoP-bound. A client finds it
// from the 401 itself: BearerConfig.ResourceMetadata names, in every
// challenge, the document of the very URL the client called.
//
// RFC 9728 §3.3 lets a client use a document found through a challenge
// only if its "resource" is identical to the URL it called, so one API
// has one document per URL: Resource is the API's root, and Handler
// serves, for the root and every URL under it, the document whose
// "resource" is that URL, built for the request (nothing is kept per
// URL), the other members alike. A route with path parameters, such as
// /webapi/api/v3/{datasourceId}/Admin/Users, thus has a document for each
// URL called, /webapi/api/v3/demo/Admin/Users among them. A URL's query is
// not part of its resource identifier (RFC 8707 §2, RFC 9728 §1.2: it
// should have none): a call with one is named the document of its URL
// without it. An API served on several origins (a plain listener and one
// that asks for client certificates, say) has documents on each: wrap
// each listener's handler in PublicOrigin, and its documents and
// challenges name its own origin's URLs.
//
// [RFC 9728]: https://www.rfc-editor.org/rfc/rfc9728
type ResourceMetadata struct {
	// Resource is the API's root, an http(s) URL without query or fragment:
	// the prefix of every URL whose document Handler serves, on the origin
	// clients call (without a PublicOrigin). Required.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuers whose tokens it takes, such as
	// "https://api.example.com/ids".
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// ScopesSupported are the scopes its routes require.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported is how a token may be sent: this module
	// reads the Authorization header only. Empty means ["header"].
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// DPoPSigningAlgValuesSupported are the DPoP proof algorithms it
	// accepts; set it (to DPoPAlgorithms()) when the API accepts DPoP.
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// DPoPBoundAccessTokensRequired says that only DPoP-bound tokens are
	// accepted (DPoPConfig.Required).
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required,omitempty"`
	// TLSClientCertificateBoundAccessTokens says that the API takes tokens
	// bound to a client certificate (RFC 8705 §3.3), over TLS or behind a
	// proxy (BearerConfig.ForwardedCert). False says nothing of them.
	TLSClientCertificateBoundAccessTokens bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
}

// DPoPAlgorithms returns the DPoP proof algorithms RequireBearer accepts,
// by the names a proof may give them: ES256, RS256, PS256, EdDSA and
// Ed25519 (RFC 9864's name for EdDSA over an Ed25519 key). It is the list
// a DPoP challenge's algs and the issuer's discovery advertise. Each call
// returns a new slice.
func DPoPAlgorithms() []string { return append([]string(nil), dpop.Algs...) }

// wellKnown is RFC 9728's well-known URI suffix.
const wellKnown = "/.well-known/oauth-protected-resource"

// URL returns where the document of Resource itself is published (RFC
// 9728 §3.1): the well-known path inserted between the resource's host
// and its path, "https://api.example.com/.well-known/oauth-protected-resource/webapi"
// for "https://api.example.com/webapi".
func (m ResourceMetadata) URL() (string, error) {
	d, err := m.documents()
	if err != nil {
		return "", err
	}
	return d.origin + wellKnown + d.path, nil
}

// Handler returns an http.Handler that serves, at the well-known URL of
// Resource and of every URL under it (see URL), the document whose
// "resource" is that URL (on the listener's PublicOrigin, when it has
// one), and 404 elsewhere: mount it on the resource's
// host, at the root ("/.well-known/oauth-protected-resource/" in a
// ServeMux), since the RFC puts the documents there whatever the
// resource's path. The documents may be cached for an hour. It fails when
// Resource is not a URL the RFC allows.
func (m ResourceMetadata) Handler() (http.Handler, error) {
	d, err := m.documents()
	if err != nil {
		return nil, err
	}
	return d, nil
}

// resourceDocuments is a ResourceMetadata prepared to serve the document
// of any URL under its resource, and to name it in a challenge.
type resourceDocuments struct {
	origin string // the resource's scheme and host: "https://api.example.com"
	path   string // its escaped path, as given: "/webapi", "" for none
	under  string // the path URLs under it start with: "/webapi/", "/" for the root
	// members is the document's JSON after "resource": every other
	// member, and the closing brace.
	members []byte
}

func (m ResourceMetadata) documents() (*resourceDocuments, error) {
	u, err := url.Parse(m.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("middleware: ResourceMetadata.Resource %q: want an http(s) URL without query or fragment", m.Resource)
	}
	d := &resourceDocuments{origin: u.Scheme + "://" + u.Host, path: u.EscapedPath()}
	d.under = strings.TrimSuffix(d.path, "/") + "/"
	if len(m.BearerMethodsSupported) == 0 {
		m.BearerMethodsSupported = []string{"header"}
	}
	m.Resource = ""
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	d.members = bytes.TrimPrefix(body, []byte(`{"resource":""`))
	return d, nil
}

// covers reports whether the URL of the origin and path (escaped) is the
// resource or under it. A path with a dot segment ("/webapi/../x") is
// none: it would name one URL and mean another.
func (d *resourceDocuments) covers(path string) bool {
	if strings.Contains(path+"/", "/./") || strings.Contains(path+"/", "/../") {
		return false
	}
	return path == d.path || path == strings.TrimSuffix(d.under, "/") || strings.HasPrefix(path, d.under)
}

// urlOf returns the well-known URL of the document of the URL r called,
// on its origin (see PublicOrigin), or "" when that URL is not under the
// resource.
func (d *resourceDocuments) urlOf(r *http.Request) string {
	path := requestPath(r)
	if !d.covers(path) {
		return ""
	}
	return requestOrigin(r, d.origin) + wellKnown + path
}

func (d *resourceDocuments) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), wellKnown)
	if !ok || (path != "" && path[0] != '/') || !d.covers(path) || r.URL.RawQuery != "" || r.URL.ForceQuery {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	resource, _ := json.Marshal(requestOrigin(r, d.origin) + path) // a string: cannot fail
	body := make([]byte, 0, len(`{"resource":`)+len(resource)+len(d.members)+1)
	body = append(append(append(append(body, `{"resource":`...), resource...), d.members...), '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff") // it holds the path asked for
	_, _ = w.Write(body)
}

// requestPath is the path the client addressed: the request line's,
// which a handler in front (http.StripPrefix) does not rewrite, so that a
// proof made for another resource of the host cannot pass for this one.
func requestPath(r *http.Request) string {
	if plainPath(r.RequestURI) {
		return r.RequestURI // its own escaped path: nothing to parse
	}
	if r.RequestURI != "" && r.RequestURI != "*" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			return u.EscapedPath()
		}
	}
	return r.URL.EscapedPath()
}

// plainPath reports whether uri is an origin-form path of characters a
// path holds as they are (RFC 3986 §3.3: unreserved, sub-delims, ":",
// "@", "/"), without query, fragment or escape: its escaped path is
// itself.
func plainPath(uri string) bool {
	if uri == "" || uri[0] != '/' {
		return false
	}
	for i := 0; i < len(uri); i++ {
		c := uri[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		default:
			return false
		}
	}
	return true
}
