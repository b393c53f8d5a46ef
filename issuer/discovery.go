package issuer

import (
	"net/http"
	"strconv"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

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

// refuseAuthorization answers a request at the authorization endpoint
// that Config.MCPClients lists: the issuer serves no flow there (RFC
// 6749 §4.1.2.1: the error is shown, never redirected to a URI nobody
// registered).
func refuseAuthorization(w http.ResponseWriter) {
	oauthwire.WriteJSON(w, http.StatusBadRequest, oauthwire.Error{
		Code:        "unsupported_response_type",
		Description: "this server issues tokens by the client_credentials grant alone",
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
