package issuer

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/scope"
)

// discoveryDocument is the discovery document of st's configuration:
// what the issuer serves at discoveryPath and MetadataHandler serves
// where RFC 8414 puts it. Each endpoint that lists private_key_jwt lists
// the algorithms of its assertions beside it, as RFC 8414 §2 requires:
// one authentication serves the three, so one list.
func (st *state) discoveryDocument() ([]byte, error) {
	methods := authMethods
	doc := map[string]any{
		"issuer":                   st.issuer,
		"token_endpoint":           st.issuer + tokenPath,
		"jwks_uri":                 st.issuer + jwksPath,
		"grant_types_supported":    []string{"client_credentials"},
		"scopes_supported":         scope.All(),
		"response_types_supported": []string{"token"},
		"token_endpoint_auth_signing_alg_values_supported":         jws.Algorithms,
		"introspection_endpoint":                                   st.issuer + introspectPath,
		"introspection_endpoint_auth_signing_alg_values_supported": jws.Algorithms,
		"revocation_endpoint":                                      st.issuer + revocationPath,
		"revocation_endpoint_auth_signing_alg_values_supported":    jws.Algorithms,
		"dpop_signing_alg_values_supported":                        dpop.Algs,
	}
	if st.mtlsUsed() {
		// RFC 8705 §2.1.1, §2.2.1, §3.3 and §5, as IdentityServer lists
		// them with mutual TLS on.
		methods = append(slices.Clip(authMethods), "tls_client_auth")
		if st.mtls.selfSignedReach() {
			methods = append(methods, "self_signed_tls_client_auth")
		}
		doc["tls_client_certificate_bound_access_tokens"] = true
		if a := st.mtls.alias; a != "" {
			doc["mtls_endpoint_aliases"] = map[string]string{
				"token_endpoint":         a + tokenPath,
				"introspection_endpoint": a + introspectPath,
				"revocation_endpoint":    a + revocationPath,
			}
		}
	}
	for _, e := range []string{"token", "introspection", "revocation"} {
		doc[e+"_endpoint_auth_methods_supported"] = methods
	}
	return json.Marshal(doc)
}

// MetadataHandler returns an http.Handler that serves the issuer's
// authorization server metadata (RFC 8414) where that RFC puts it: at the
// host root, /.well-known/oauth-authorization-server followed by the
// issuer's path ("/.well-known/oauth-authorization-server/ids" for
// "https://host/ids"), and 404 elsewhere. Mount it at the host root,
// beside the issuer: mux.Handle("/.well-known/oauth-authorization-server/",
// iss.MetadataHandler()). It is the discovery document, so the two list
// the same endpoints, and it follows reloads.
func (iss *Issuer) MetadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := iss.current()
		if r.URL.Path != "/.well-known/oauth-authorization-server"+st.prefix {
			http.NotFound(w, r)
			return
		}
		serveDocument(w, r, st.discovery, st.cacheHeader)
	})
}

// serveDocument serves a JSON document that GET and HEAD may fetch and
// caches may keep for cache (a Cache-Control value).
func serveDocument(w http.ResponseWriter, r *http.Request, body []byte, cache string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}
