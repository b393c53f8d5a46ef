package issuer

import (
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/idsauth/idsauth/scope"
)

// jwtBearerGrant is the grant_type of the JWT bearer grant (RFC 7523
// §2.1): a workload's token exchanged for an access token of the client
// its subject maps to.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// grantJWTBearer answers a JWT bearer grant: the assertion is checked as
// a client's workload token is (checkFederated), by a trusted issuer
// that takes the grant, and its subject maps to the client the token is
// issued to, which must list the grant; the scopes are capped by the
// issuer's and the client's. The request carries no client
// authentication: the assertion is the credential, charged to the
// failure budgets of the client its subject names (before it is
// checked), or of an unknown one.
func (iss *Issuer) grantJWTBearer(q *request) (*[]byte, *refusal) {
	st, form := q.st, &q.form
	switch {
	case !st.trust.grants:
		return nil, refuse(otherGrant)
	case q.basic || form.has(clientIDParam) || form.has(clientSecretParam) || hasAssertion(form):
		return nil, refuse(grantCredentials)
	case form.get(grantAssertionParam) == "":
		return nil, refuse(grantNoAssertion)
	case len(form.get(grantAssertionParam)) > maxAssertionLength:
		return nil, refuse(assertionTooLong)
	case tooLong(form.get(scopeParam), maxScopeLength):
		return nil, refuse(scopeTooLong)
	}
	a := parseAssertion(form.get(grantAssertionParam))
	subject := "\x00jwt-bearer" // a subject no client has: the budget of assertions that map to none
	if a != nil {
		if ti, err := st.federatedIssuer(a, false); err == nil {
			if id, _ := st.federated.lookup(ti.id, a.sub); id != "" {
				subject = id
			}
		}
	}
	q.who.addr = q.addr
	res, no := iss.reserve(q, subject)
	if no != nil {
		return nil, no
	}
	start := time.Now()
	fc, id, err := iss.checkFederated(q.ctx, st, a, false, nil, q.now)
	var ti *trustedIssuer
	if err == nil {
		if ti = st.trust.byID[fc.issuer]; !ti.grant {
			err = assertionRefused("the token's issuer does not take the jwt-bearer grant (jwtBearerGrant)")
		}
	}
	if err != nil {
		res.Failed()
		st.verifier.HoldFailure(q.ctx, start)
		return nil, &refusal{id: grantInvalid, why: err.Error()}
	}
	res.Succeeded()
	cl := st.client(id)
	if cl == nil { // it compiled when it entered the roster: a defect, which client logs
		return nil, &refusal{id: grantInvalid, why: "the client of the federated credential is gone"}
	}
	q.who.client, q.who.credential = cl.id, fc.String()
	if !cl.jwtBearer {
		return nil, refuse(grantNotAllowed)
	}
	capped := capScopes(cl, ti.scopes)
	if len(capped.scopeList) == 0 {
		iss.logger.LogAttrs(q.ctx, slog.LevelInfo, "idsauth issuer: a jwt-bearer grant's client holds none of its issuer's scopes",
			slog.String("client_id", cl.id), slog.String("issuer", ti.id))
		return nil, refuse(scopeNotAllowed)
	}
	return iss.grant(q, capped)
}

// capScopes returns a copy of cl, for one request, holding only the
// scopes of cap among its own, that may ask for the client_credentials
// shape of a token (grant).
func capScopes(cl *client, cap scope.Set) *client {
	cp := cl.forRequest()
	cp.clientCreds = true
	cp.scopes = nil
	cp.scopeList = nil
	for _, s := range cl.scopeList {
		if cap.Has(s) {
			cp.scopeList = append(cp.scopeList, s)
		}
	}
	cp.scopes = scope.NewSet(cp.scopeList...)
	return cp
}

// auditFederated logs each token issued to a client that a workload's
// token authenticated, with the federated credential that did: the
// audit record of a credential no secret stands behind.
func (iss *Issuer) auditFederated(r *http.Request, who attempt) {
	if who.credential == "" {
		return
	}
	iss.logger.LogAttrs(r.Context(), slog.LevelInfo, "idsauth issuer: token issued for a workload's token",
		slog.String("client_id", who.client), slog.String("credential", who.credential), slog.Any("scopes", slices.Clip(who.scopes)), slog.String("address", who.addr))
}
