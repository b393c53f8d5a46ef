package middleware

import (
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
// from the 401 itself (BearerConfig.ResourceMetadata names its URL in
// every challenge).
//
// [RFC 9728]: https://www.rfc-editor.org/rfc/rfc9728
type ResourceMetadata struct {
	// Resource is the API's identifier, an https (or http) URL without
	// query or fragment, such as "https://api.example.com/webapi".
	// Required.
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
}

// DPoPAlgorithms returns the DPoP proof algorithms RequireBearer accepts,
// by the names a proof may give them: ES256, RS256, PS256, EdDSA and
// Ed25519 (RFC 9864's name for EdDSA over an Ed25519 key). It is the list
// a DPoP challenge's algs and the issuer's discovery advertise. Each call
// returns a new slice.
func DPoPAlgorithms() []string { return append([]string(nil), dpop.Algs...) }

// wellKnown is RFC 9728's well-known URI suffix.
const wellKnown = "/.well-known/oauth-protected-resource"

// URL returns where the document is published (RFC 9728 §3.1): the
// well-known path inserted between the resource's host and its path,
// "https://api.example.com/.well-known/oauth-protected-resource/webapi"
// for "https://api.example.com/webapi".
func (m ResourceMetadata) URL() (string, error) {
	u, err := m.resource()
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + wellKnown + path, nil
}

func (m ResourceMetadata) resource() (*url.URL, error) {
	u, err := url.Parse(m.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("middleware: ResourceMetadata.Resource %q: want an http(s) URL without query or fragment", m.Resource)
	}
	return u, nil
}

// Handler returns an http.Handler that serves the document at its path
// (see URL), and 404 elsewhere: mount it on the resource's host, at the
// root ("/.well-known/oauth-protected-resource/" in a ServeMux), since
// the RFC puts the document there whatever the resource's path. It fails
// when Resource is not a URL the RFC allows.
func (m ResourceMetadata) Handler() (http.Handler, error) {
	u, err := m.resource()
	if err != nil {
		return nil, err
	}
	if len(m.BearerMethodsSupported) == 0 {
		m.BearerMethodsSupported = []string{"header"}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	body = append(body, '\n')
	path := wellKnown + strings.TrimSuffix(u.EscapedPath(), "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != path {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}), nil
}
