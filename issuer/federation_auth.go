package issuer

import (
	"context"
	"slices"
	"time"

	"github.com/idsauth/idsauth/limit"
)

// A workload's token as a client's credential: read with the request
// (readFederated), checked at authentication (authenticateFederated)
// and by the JWT bearer grant (jwtbearer.go), by one check
// (checkFederated).

// assertionTypeSPIFFE is the client_assertion_type of a JWT-SVID
// (draft-ietf-oauth-spiffe-client-auth §4).
const assertionTypeSPIFFE = "urn:ietf:params:oauth:client-assertion-type:jwt-spiffe"

// assertionTypeOK reports whether typ is a client_assertion_type the
// configuration takes: RFC 7523's always, jwt-spiffe with a trusted
// SPIFFE issuer.
func (st *state) assertionTypeOK(typ string) bool {
	return typ == assertionTypeJWT || typ == assertionTypeSPIFFE && len(st.trust.byTD) > 0
}

// readFederated decides whether q's assertion is a workload's token
// rather than the client's own (private_key_jwt, whose iss and sub are
// the client ID): one of jwt-spiffe's type, or of RFC 7523's whose iss is
// not its sub, when the configuration trusts an issuer. Such a request
// must name its client (client_id), and a jwt-spiffe one carry a JWT-SVID.
func (q *request) readFederated() *refusal {
	a, spiffe := q.assertion, q.form.get(assertionTypeParam) == assertionTypeSPIFFE
	if len(q.st.trust.issuers) == 0 || a == nil && !spiffe {
		return nil
	}
	if a == nil {
		return refuse(notSVID)
	}
	iss, _, _ := a.claims.String("iss")
	if !spiffe && iss == a.sub {
		return nil // private_key_jwt
	}
	if _, _, err := splitSPIFFEID(a.sub); spiffe && err != nil {
		return refuse(notSVID)
	}
	q.federated = true
	if !q.form.has(clientIDParam) {
		return refuse(federatedNoClientID)
	}
	return nil
}

// authenticateFederated authenticates q's client by its workload's
// token, once res has reserved a failure from the budgets: a success
// gives it back, a failure is held to the failure floor.
func (iss *Issuer) authenticateFederated(q *request, cl *client, res limit.Reservation) (*client, *refusal) {
	start := time.Now()
	fc, _, err := iss.checkFederated(q.ctx, q.st, q.assertion, q.form.get(assertionTypeParam) == assertionTypeSPIFFE, cl, q.now)
	if err == nil {
		res.Succeeded()
		q.who.credential = fc.String()
		return cl, nil
	}
	res.Failed()
	q.st.verifier.HoldFailure(q.ctx, start)
	return nil, &refusal{id: badCredentials, why: err.Error()}
}

// federatedIssuer returns the trusted issuer whose token a claims to
// be: by its sub, a SPIFFE ID of a trusted trust domain (whose iss, when
// present, must be the issuer's), else by its iss. spiffe: it came as a
// jwt-spiffe assertion, which is a JWT-SVID or nothing.
func (st *state) federatedIssuer(a *assertion, spiffe bool) (*trustedIssuer, error) {
	iss, issGiven, _ := a.claims.String("iss")
	if td, _, err := splitSPIFFEID(a.sub); err == nil {
		if ti := st.trust.byTD[td]; ti != nil {
			if issGiven && iss != ti.iss {
				return nil, assertionRefused("the JWT-SVID's iss is not its trust domain's issuer")
			}
			return ti, nil
		}
	}
	if spiffe {
		return nil, assertionRefused("the JWT-SVID's sub is no SPIFFE ID of a trusted trust domain")
	}
	ti := st.trust.byIss[iss]
	switch {
	case ti == nil:
		return nil, assertionRefused("the assertion's iss is no trusted issuer")
	case ti.kind == kindSPIFFE:
		return nil, assertionRefused("the assertion's sub is no SPIFFE ID of its issuer's trust domain: a bundle signs for its own alone")
	}
	return ti, nil
}

// checkFederated checks a, a workload's token, at now: its issuer
// (federatedIssuer), its audience and times by the issuer's rules, its
// signature by the issuer's keys, and the client its subject maps to:
// cl, for client authentication, or any, for the JWT bearer grant (cl
// nil). It returns the credential that maps it and the client's ID, or
// why it is refused.
func (iss *Issuer) checkFederated(ctx context.Context, st *state, a *assertion, spiffe bool, cl *client, now time.Time) (federatedCred, string, error) {
	fc, id, err := iss.federatedToken(ctx, st, a, spiffe, cl, now)
	if err != nil {
		return federatedCred{}, "", err
	}
	return fc, id, nil
}

// federatedToken is checkFederated's work.
func (iss *Issuer) federatedToken(ctx context.Context, st *state, a *assertion, spiffe bool, cl *client, now time.Time) (federatedCred, string, error) {
	var none federatedCred
	if a == nil {
		return none, "", assertionRefused("client_assertion is not a signed JWT")
	}
	ti, err := st.federatedIssuer(a, spiffe)
	if err != nil {
		return none, "", err
	}
	if aud, _, err := a.claims.Strings("aud"); err != nil || !slices.ContainsFunc(aud, func(s string) bool { return slices.Contains(ti.audience, s) }) {
		return none, "", assertionRefused("the token's aud names none of the audiences its issuer's tokens must carry here")
	}
	exp, expGiven, expErr := a.claims.Time("exp")
	iat, iatGiven, iatErr := a.claims.Time("iat")
	nbf, _, nbfErr := a.claims.Time("nbf")
	switch {
	case !expGiven || expErr != nil:
		return none, "", assertionRefused("the token's exp is missing or malformed")
	case !iatGiven || iatErr != nil:
		return none, "", assertionRefused("the token's iat is missing or malformed: its age is unknown")
	case nbfErr != nil:
		return none, "", assertionRefused("the token's nbf is malformed")
	case !now.Before(exp.Add(ti.skew)):
		return none, "", assertionRefused("the token expired")
	case iat.After(now.Add(ti.skew)) || nbf.After(now.Add(ti.skew)):
		return none, "", assertionRefused("the token's iat or nbf is in the future")
	case exp.Sub(iat) > ti.maxLifetime:
		return none, "", assertionRefused("the token says it lives longer than its issuer's maxTokenLifetimeSeconds")
	}
	id, fc := st.federated.lookup(ti.id, a.sub)
	switch {
	case id == "":
		return none, "", assertionRefused("no client's federated credential names the token's issuer and subject")
	case cl != nil && id != cl.id:
		return none, "", assertionRefused("the token's subject is another client's federated credential, or none of this client's")
	}
	owner := st.client(id)
	if owner == nil {
		return none, "", assertionRefused("the client of the federated credential is gone")
	}
	if now.Sub(iat) > owner.maxAssertionAge+ti.skew {
		return none, "", assertionRefused("the token is older than the client's maxAssertionAgeSeconds")
	}
	if ti.kind == kindKubernetes {
		if _, name, err := serviceAccount(a.sub); err != nil || name == "default" && !owner.defaultAccount {
			return none, "", assertionRefused("a namespace's default service account, which the client does not allow")
		}
	}
	if a.alg != "ES384" && assertionMethods[a.alg] == nil {
		return none, "", assertionRefused("the token's alg is none the issuer verifies")
	}
	pubs, err := iss.issuerKeys(ti).Keys(ctx, a.kid, a.alg)
	if err != nil {
		return none, "", assertionRefused("no key of its issuer verifies the token: " + err.Error())
	}
	if !verifyWith(a, pubs) {
		return none, "", assertionRefused("the token's signature is not its issuer's")
	}
	return fc, id, nil
}

// discovery adds to doc, the discovery document, what the trusted
// issuers turn on: the JWT bearer grant in grant_types_supported, and
// client_assertion_types_supported (idsauth's own member: no registry
// names one), RFC 7523's type, with jwt-spiffe when a SPIFFE issuer is
// trusted. The assertion types are listed with private_key_jwt, which
// is always on.
func (t *trust) discovery(doc map[string]any) {
	types := []string{assertionTypeJWT}
	if len(t.byTD) > 0 {
		types = append(types, assertionTypeSPIFFE)
	}
	doc["client_assertion_types_supported"] = types
	if t.grants {
		doc["grant_types_supported"] = []string{"client_credentials", jwtBearerGrant}
	}
}
