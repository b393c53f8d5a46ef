package middleware

import (
	"log/slog"
	"net/http"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// DefaultRealm, "idsauth", is RequireBearer's realm when none is
// configured; the issuer's Basic challenge uses it too.
const DefaultRealm = oauthwire.Realm

// RejectFunc is called on every rejected request with the answer's status
// and the reason: one of this package's Err* values (a *ValidationError is
// given as its Reason; its facts go to the log line), or, from a
// TokenValidator of your own, its error. It never receives the token. Use it for metrics
// and audit logs.
type RejectFunc func(r *http.Request, status int, err error)

// responder holds what every answer of RequireBearer and SCIMAuth needs:
// the realm and where rejections are reported. RequireScope uses the one
// RequireBearer leaves in the request context.
type responder struct {
	realm    string
	onReject RejectFunc
	logger   *slog.Logger
}

// newResponder returns a responder with realm, or fallback when realm is
// empty.
func newResponder(realm, fallback string, onReject RejectFunc, logger *slog.Logger) *responder {
	if realm == "" {
		realm = fallback
	}
	return &responder{realm: realm, onReject: onReject, logger: logger}
}

// reject reports a rejection to the hook, with a *ValidationError reduced
// to its Reason, and to the logger, with the error's facts if it is ours.
func (o *responder) reject(r *http.Request, status int, err error) {
	reason := err
	ve, isVE := err.(*ValidationError)
	if isVE {
		reason = ve.Reason
	}
	if o.onReject != nil {
		o.onReject(r, status, reason)
	}
	if o.logger == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.String("reason", logReason(reason)),
	}
	if isVE && reasonRow(reason) >= 0 {
		if detail := ve.Error(); detail != reason.Error() {
			attrs = append(attrs, slog.String("detail", detail))
		}
	}
	o.logger.LogAttrs(r.Context(), slog.LevelInfo, "idsauth: request rejected", attrs...)
}

// challenge answers a request that carried no token ([RFC 6750] §3.1).
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
func (o *responder) challenge(w http.ResponseWriter, r *http.Request, reason error) {
	o.reject(r, http.StatusUnauthorized, reason)
	h := w.Header()
	h.Set("WWW-Authenticate", oauthwire.Challenge(o.realm, oauthwire.Error{}))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte("Unauthorized\n"))
}

// fail answers with an error in the challenge and the JSON body.
func (o *responder) fail(w http.ResponseWriter, r *http.Request, status int, reason error, e oauthwire.Error) {
	o.reject(r, status, reason)
	w.Header().Set("WWW-Authenticate", oauthwire.Challenge(o.realm, e))
	oauthwire.WriteJSON(w, status, e)
}
