package issuer

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/oauthwire"
)

// attempt is who asked, for the events and the refusal log: the client
// ID only when it is registered (an unregistered one is attacker's text),
// the address as the limiter keys it, and the scopes granted.
type attempt struct {
	client   string
	addr     string
	scopes   []string
	endpoint string // "introspection" or "revocation"; "" for the token endpoint
	api      string // the registered API resource asking, at introspection
	// credential is the federated credential that authenticated the
	// client, as the configuration writes it; "" for none.
	credential string
}

// token serves the token endpoint (CONTRACT.md §2): the request read
// once, its client authenticated, the grant checked, the token signed or
// stored.
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	q := request{endpoint: tokenEndpoint}
	body, no := iss.issue(w, r, st, &q)
	if no != nil {
		a := q.answer(no)
		a.write(w)
		iss.observeRefusal(r, no, a, q.who, time.Since(start))
		return
	}
	oauthwire.WriteBody(w, http.StatusOK, *body) // which keeps none of it
	answers.put(body)
	iss.observeIssued(r, q.who, time.Since(start))
}

// issue answers a token request: a token for a client_credentials grant.
// The token's times and the key that signs it come from one reading of
// the clock: the span that ServeHTTP found may have ended since, and its
// key must not sign a token issued after its last instant.
func (iss *Issuer) issue(w http.ResponseWriter, r *http.Request, st *state, q *request) (*[]byte, *refusal) {
	now := iss.now()
	if no := q.read(w, r, st.at(now), now); no != nil {
		return nil, no
	}
	switch q.form.get(grantTypeParam) {
	case "":
		return nil, refuse(noGrantType)
	case "client_credentials":
	case jwtBearerGrant:
		return iss.grantJWTBearer(q)
	default:
		return nil, refuse(otherGrant)
	}
	// A scope too long is answered before any credential is checked:
	// after what is wrong with a secret's credentials, before what is
	// wrong with an assertion's.
	no := q.unusable
	if tooLong(q.form.get(scopeParam), maxScopeLength) && (q.asserted || no == nil) {
		no = refuse(scopeTooLong)
	}
	if no != nil {
		return nil, no
	}
	cl, no := iss.authenticate(q)
	if no != nil {
		return nil, no
	}
	return iss.grant(q, cl)
}

// appendAnswer appends the success answer (RFC 6749 §5.1) around the
// token that sign appends: the bytes oauthwire.WriteJSON would write for
// {access_token, token_type "Bearer", expires_in, scope}, without
// reflection.
//
// A bound token carries cnf with bind's members; a DPoP-bound one's
// answer says "token_type": "DPoP" (RFC 9449 §5), a certificate-bound
// one's stays "Bearer" (RFC 8705 changes no token type).
func (st *state) appendAnswer(b []byte, cl *client, granted, aud []string, now time.Time, bind cnf) ([]byte, error) {
	t := st.tokenStart(cl, granted, aud, now)
	b = append(b, `{"access_token":"`...)
	b, err := st.signFrom(b, t, bind) // base64url and dots: nothing to escape
	if err != nil {
		return nil, err
	}
	if bind.JKT == "" {
		return append(b, t.answerEnd...), nil
	}
	b = append(b, `","token_type":"DPoP"`...)
	return append(b, t.answerEnd[len(bearerType):]...), nil
}

// bearerType begins every tokenStart's answerEnd.
const bearerType = `","token_type":"Bearer"`

// grant issues the token an authenticated client asked for.
func (iss *Issuer) grant(q *request, cl *client) (*[]byte, *refusal) {
	st := q.st
	if !cl.clientCreds {
		return nil, refuse(unauthorizedClient)
	}
	granted, no := grantScopes(q.form.get(scopeParam), cl)
	if no != nil {
		return nil, no
	}
	aud, no := st.targetAudience(q.form.resource, cl)
	if no != nil {
		return nil, no
	}
	if cl.apiAud && len(q.form.resource) == 0 && len(granted) != len(cl.scopeList) {
		aud = apiAudience(st.apiOrder, granted) // the API resources of the scopes granted
	}
	q.who.scopes = granted
	jkt, no := iss.dpopBinding(q, cl)
	if no != nil {
		return nil, no
	}
	x5t, no := q.certBinding(cl, jkt)
	if no != nil {
		return nil, no
	}
	bind := cnf{JKT: jkt, X5T: x5t}
	if cl.reference {
		return iss.grantReference(q, cl, granted, aud, bind)
	}
	answer := answers.get()
	b, err := st.appendAnswer((*answer)[:0], cl, granted, aud, q.now, bind)
	if err != nil {
		answers.put(answer)
		iss.logger.Error("idsauth issuer: cannot sign a token", slog.String("error", err.Error()))
		return nil, refuse(signFailed)
	}
	*answer = b
	return answer, nil
}

// grantScopes checks the requested scopes against the client's and returns
// them in the order asked, without duplicates.
func grantScopes(requested string, cl *client) ([]string, *refusal) {
	var one []string // the first scope asked for, from the client's set
	many := false
	for s := range strings.FieldsSeq(requested) {
		i, ok := slices.BinarySearch(cl.scopes, s)
		switch {
		case !ok:
			return nil, refuse(scopeNotAllowed)
		case one == nil:
			one = cl.scopes[i : i+1 : i+1] // shared, and never written to
		default:
			many = many || s != one[0]
		}
	}
	switch {
	case one == nil && cl.allScopes:
		return cl.scopeList, nil // IdentityServer's default
	case one == nil:
		return nil, refuse(scopeMissing)
	case !many:
		return one, nil
	}
	var granted []string
	for s := range strings.FieldsSeq(requested) {
		if !slices.Contains(granted, s) {
			granted = append(granted, s)
		}
	}
	return granted, nil
}

// targetAudience returns the audience of the token: the client's, or
// exactly the resources asked for (RFC 8707 §2), each an absolute URI
// without a fragment that is one of the client's audiences.
func (st *state) targetAudience(resources []string, cl *client) ([]string, *refusal) {
	if len(resources) == 0 {
		return cl.audience, nil
	}
	if len(resources) > 1 && st.identityServer {
		return nil, refuse(twoResources)
	}
	aud := make([]string, 0, len(resources))
	for _, res := range resources {
		u, err := url.Parse(res)
		if err != nil || !u.IsAbs() || strings.Contains(res, "#") {
			return nil, refuse(resourceMalformed)
		}
		if !slices.Contains(cl.audience, res) {
			return nil, refuse(resourceNotAllowed)
		}
		if !slices.Contains(aud, res) {
			aud = append(aud, res)
		}
	}
	return aud, nil
}
