package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/observe"
)

// responder holds what every answer of this package needs:
// the realm and where rejections are reported. RequireScope uses the one
// RequireBearer leaves in the request context.
type responder struct {
	realm string
	// scheme is the challenge's ("Bearer", or "DPoP" with algs) for a
	// request that presented its token so; dpop is the responder of such
	// requests, when RequireBearer accepts them.
	scheme string
	algs   string
	dpop   *responder
	// metadata names, in every challenge, the protected resource metadata
	// (RFC 9728) of the URL called; nil for none.
	metadata *resourceDocuments
	// scope is named in every challenge without a scope of its own
	// (BearerConfig.ChallengeScopes); "" for none.
	scope string
	kind  observe.Kind // of a rejection: Rejected, or SCIMRefused
	// obs gets every event: the config's Observer, and the reject hook
	// and the logger, which are observers too (see observers.go). Nil
	// when there is none of them.
	obs observe.Observer
}

// newResponder returns a responder with realm, or fallback when realm is
// empty, whose rejections are events of kind.
func newResponder(realm, fallback string, kind observe.Kind, obs observe.Observer, onReject RejectFunc, logger *slog.Logger) *responder {
	if realm == "" {
		realm = fallback
	}
	var hook, log observe.Observer
	if onReject != nil {
		hook = hookObserver(onReject)
	}
	if logger != nil {
		log = logObserver{logger}
	}
	return &responder{realm: realm, scheme: "Bearer", kind: kind, obs: observe.Multi(obs, hook, log)}
}

// withDPoPResponder gives o a responder for requests that present their
// token with DPoP: the same but for the challenge's scheme.
func (o *responder) withDPoPResponder() *responder {
	d := *o
	d.scheme, d.algs, d.dpop = "DPoP", dpopAlgs, nil
	o.dpop = &d
	return o
}

// reject reports a rejection with status.
func (o *responder) reject(r *http.Request, status int, err error) {
	o.rejectWith(r, err, observe.Event{Status: status})
}

// rejectWith reports a rejection: one event, e with the kind and reason
// set, to every observer. The reject hook and the logger also find the
// request and the error in the event's context (see rejectionFrom).
func (o *responder) rejectWith(r *http.Request, err error, e observe.Event) {
	if o.obs == nil {
		return
	}
	rj := &rejection{r: r, err: err}
	e.Kind, e.Reason = o.kind, accesstoken.ReasonCode(err)
	o.obs.Observe(context.WithValue(r.Context(), rejectionKey{}, rj), e)
}

// challenge answers a request that carried no token ([RFC 6750] §3.1).
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
func (o *responder) challenge(w http.ResponseWriter, r *http.Request, reason error) {
	w.Header().Set("WWW-Authenticate", o.challengeOf(r, "Bearer", oauthwire.Error{}))
	o.answerChallenge(w, r, reason)
}

// challengeOf is the WWW-Authenticate challenge of scheme with e to r:
// the realm, for DPoP the proof algorithms, and the URL of the resource
// metadata of the URL r called when there is one.
func (o *responder) challengeOf(r *http.Request, scheme string, e oauthwire.Error) string {
	algs := ""
	if scheme == "DPoP" {
		algs = o.algs
		if algs == "" {
			algs = dpopAlgs
		}
	}
	md := ""
	if o.metadata != nil { // requestPath parses: only when it is needed
		md = o.metadata.urlOf(r)
	}
	scope := ""
	if e.Scope == "" {
		scope = o.scope
	}
	return oauthwire.SchemeChallenge(scheme, o.realm, e, "algs", algs, "scope", scope, "resource_metadata", md)
}

// answerChallenge reports and writes the answer to a request without a
// token, its challenges set.
func (o *responder) answerChallenge(w http.ResponseWriter, r *http.Request, reason error) {
	o.reject(r, http.StatusUnauthorized, reason)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte("Unauthorized\n"))
}

// fail answers with an error in the challenge and the JSON body.
func (o *responder) fail(w http.ResponseWriter, r *http.Request, status int, reason error, e oauthwire.Error) {
	o.reject(r, status, reason)
	w.Header().Set("WWW-Authenticate", o.challengeOf(r, o.scheme, e))
	oauthwire.WriteJSON(w, status, e)
}

// dpopAlgs is what a DPoP challenge says of the proof algorithms.
var dpopAlgs = strings.Join(dpop.Algs, " ")

// challengeBoth answers a request that carried no token where DPoP is
// accepted: a bare challenge for each scheme accepted (RFC 9449 §7.1).
func (o *responder) challengeBoth(w http.ResponseWriter, r *http.Request, reason error, bearerToo bool) {
	if bearerToo {
		w.Header().Add("WWW-Authenticate", o.challengeOf(r, "Bearer", oauthwire.Error{}))
	}
	w.Header().Add("WWW-Authenticate", o.challengeOf(r, "DPoP", oauthwire.Error{}))
	o.answerChallenge(w, r, reason)
}

// registered returns tenant if it is registered in tenants, else "": an
// event names registered tenants only. It asks the store only when there
// is an observer to tell.
func (o *responder) registered(tenants TenantStore, tenant string) string {
	if o.obs == nil || len(tenants.TenantTokens(tenant)) == 0 {
		return ""
	}
	return tenant
}
