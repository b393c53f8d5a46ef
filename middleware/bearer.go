package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/observe"
)

// BearerConfig holds the settings of RequireBearerWithConfig. The zero
// value is RequireBearer's.
type BearerConfig struct {
	// Realm is the realm of the WWW-Authenticate challenge. Empty means
	// "idsauth", the realm of every challenge of this module.
	Realm string

	// OnReject is called on every rejected request, by RequireBearer and
	// by the RequireScope after it. Nil calls nothing.
	OnReject RejectFunc

	// Logger logs every rejection, by RequireBearer and by the
	// RequireScope after it, at Info level: method, path (without the
	// query), status and reason. Nil logs nothing.
	Logger *slog.Logger

	// Observer gets an observe.Rejected event, with a fixed reason code,
	// for every request RequireBearer or the RequireScope after it rejects.
	// Nil sends none.
	Observer observe.Observer

	// DPoP, when set, accepts DPoP-bound tokens with their proofs (RFC
	// 9449), beside bearer tokens or instead of them (see NewDPoP and
	// DPoPConfig). Give every route the same one.
	DPoP *DPoP

	// ForwardedCert, when set, reads the client certificate from a
	// TLS-terminating proxy's header (ForwardedCert); nil, from the TLS
	// connection. RequireBearerWithConfig panics on one that is incomplete.
	ForwardedCert *ForwardedCert

	// ResourceMetadata, when set, is the API's RFC 9728 metadata, whose
	// Handler you serve: every challenge names the called URL's document as
	// resource_metadata (docs/RESOURCE-SERVER.md). Nil names none.
	ResourceMetadata *ResourceMetadata

	// ChallengeScopes, when set, are named as scope="..." in every 401
	// challenge, for clients (MCP's) that choose their scopes from it; a
	// 403 names its route's scopes whatever this says. Empty names none.
	ChallengeScopes []string
}

// RequireBearer returns middleware that admits a request only with a valid
// bearer token in its Authorization header, as accesstoken.Decide decides
// it with v, and puts the token's claims in the request context (see
// accesstoken.ClaimsFrom). It answers CONTRACT.md §1, after
// [RFC 6750] §3:
//
//   - no token: 401 with a bare "Bearer realm=..." challenge, no JSON;
//   - two Authorization headers or a space in the token: 400
//     invalid_request;
//   - a token that fails validation: 401 invalid_token, in the challenge
//     and as a JSON body;
//
// each with Cache-Control: no-store. Tokens in the query or form are never
// read. A token bound to a client certificate (RFC 8705 §3) is accepted
// only over a TLS connection that presented that certificate; its
// thumbprint is computed once per connection. The realm is "idsauth" and
// nothing is logged; see RequireBearerWithConfig for the settings.
//
// [RFC 6750]: https://www.rfc-editor.org/rfc/rfc6750
func RequireBearer(v accesstoken.TokenValidator) func(http.Handler) http.Handler {
	return RequireBearerWithConfig(v, BearerConfig{})
}

// RequireBearerWithConfig is RequireBearer with the settings of cfg. The
// RequireScope after it answers with the same realm, hook and logger.
//
// With cfg.DPoP, a request may present a DPoP-bound token as "DPoP
// <token>" with one DPoP proof header (RFC 9449 §7): the token is
// validated, then the proof is checked (its signature, htm the request's
// method, htu cfg.DPoP.PublicURL and the request's path, iat, ath the
// token's hash, a jti not seen before, the nonce when required) and its
// key compared with the token's cnf.jkt. Failures of the proof answer 401
// with a DPoP challenge: invalid_dpop_proof, or use_dpop_nonce with a
// DPoP-Nonce header; a request without a token gets a bare challenge for
// each scheme accepted.
func RequireBearerWithConfig(v accesstoken.TokenValidator, cfg BearerConfig) func(http.Handler) http.Handler {
	o := newResponder(cfg.Realm, oauthwire.Realm, observe.Rejected, cfg.Observer, cfg.OnReject, cfg.Logger)
	if len(cfg.ChallengeScopes) > 0 {
		checkScopes("BearerConfig.ChallengeScopes", cfg.ChallengeScopes)
		o.scope = strings.Join(cfg.ChallengeScopes, " ")
	}
	if cfg.ResourceMetadata != nil {
		docs, err := cfg.ResourceMetadata.documents()
		if err != nil {
			panic(err.Error())
		}
		o.metadata = docs
	}
	certs := cfg.ForwardedCert.source()
	d := cfg.DPoP.checker()
	if d != nil {
		o.withDPoPResponder()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok, isDPoP, err := bearer.Parse(r, d != nil)
			if err == nil && d != nil && d.required && !isDPoP {
				err = errNoToken // a bearer token where DPoP alone is accepted
			}
			if err != nil {
				switch {
				case !errors.Is(err, bearer.ErrMissing):
					o.fail(w, r, http.StatusBadRequest, err, oauthwire.Error{Code: "invalid_request", Description: describe(err)})
				case d != nil:
					o.challengeBoth(w, r, err, !d.required)
				default:
					o.challenge(w, r, err)
				}
				return
			}
			resp := o
			if isDPoP {
				resp = o.dpop
			}
			p := accesstoken.Presentation{DPoP: isDPoP, DPoPAccepted: d != nil, CertThumbprint: certs.Thumbprint(r)}
			claims, err := accesstoken.Decide(r.Context(), v, tok, p)
			if err != nil {
				resp.fail(w, r, http.StatusUnauthorized, err, oauthwire.Error{Code: "invalid_token", Description: describe(err)})
				return
			}
			if isDPoP {
				if nonce, reason := d.check(r.Context(), r, tok, claims); reason != nil {
					code := "invalid_dpop_proof"
					if nonce != "" {
						code = "use_dpop_nonce"
						w.Header().Set("DPoP-Nonce", nonce)
					}
					resp.fail(w, r, http.StatusUnauthorized, reason, oauthwire.Error{Code: code, Description: describe(reason)})
					return
				}
			}
			next.ServeHTTP(w, withClaims(r, claims, resp))
		})
	}
}
