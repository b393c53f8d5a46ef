package issuer

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
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
}

// token serves the token endpoint (CONTRACT.md §2).
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	var who attempt
	body, no := iss.issue(w, r, st, &who)
	if no.refused() {
		a := no.answer(st.identityServer)
		a.write(w)
		iss.refused(r, no, a, who, time.Since(start))
		return
	}
	oauthwire.WriteBody(w, http.StatusOK, *body) // which keeps none of it
	answers.put(body)
	iss.issued(r, who, time.Since(start))
}

// appendAnswer appends the success answer (RFC 6749 §5.1) around the
// token that sign appends: the bytes oauthwire.WriteJSON would write for
// {access_token, token_type "Bearer", expires_in, scope}, without
// reflection.
//
// A DPoP-bound token (jkt not empty) carries cnf.jkt, and the answer
// says "token_type": "DPoP" (RFC 9449 §5).
func (st *state) appendAnswer(b []byte, cl *client, granted, aud []string, now time.Time, jkt string) ([]byte, error) {
	t := st.tokenStart(cl, granted, aud, now)
	b = append(b, `{"access_token":"`...)
	b, err := st.signFrom(b, t, jkt) // base64url and dots: nothing to escape
	if err != nil {
		return nil, err
	}
	if jkt == "" {
		return append(b, t.answerEnd...), nil
	}
	b = append(b, `","token_type":"DPoP"`...)
	return append(b, t.answerEnd[len(bearerType):]...), nil
}

// bearerType begins every tokenStart's answerEnd.
const bearerType = `","token_type":"Bearer"`

func (iss *Issuer) issue(w http.ResponseWriter, r *http.Request, st *state, who *attempt) (*[]byte, refusal) {
	form := &tokenForm{}
	if no := postForm(w, r, st, "token", form); no.refused() {
		return nil, no
	}
	grant := form.get(grantTypeParam)
	switch grant {
	case "":
		return nil, refuse(noGrantType)
	case "client_credentials":
	default:
		return nil, refuse(otherGrant)
	}

	// The token's times and the key that signs it come from one reading
	// of the clock: the span that ServeHTTP found may have ended since,
	// and its key must not sign a token issued after its last instant.
	now := iss.now()
	st = st.at(now)
	var longScope refusal // answered once the credentials are read, before any is checked
	if tooLong(form.get(scopeParam), MaxScopeLength) {
		longScope = refuse(scopeTooLong)
	}
	cl, no := iss.authenticate(r, form, st, who, now, st.clientByID, sameID, longScope)
	if no.refused() {
		return nil, no
	}
	return iss.grant(r, form, st, cl, now, who)
}

// postForm reads into form, empty, the form of a request to the issuer's
// endpoint named what, which takes POST only. The caller's form stays on
// its stack: the token endpoint allocates none.
func postForm(w http.ResponseWriter, r *http.Request, st *state, what string, form *tokenForm) refusal {
	if r.Method != http.MethodPost {
		return refuseWith(notPost, what)
	}
	return readForm(w, r, st, form)
}

// authenticate finds who is asking, by a signed assertion or a secret,
// each attempt charged to the failure budgets (see Limits): a client, with
// lookup st.clientByID and subject sameID, or an API resource, with
// st.apiByID and apiSubject. pending, when not nil, is answered once the
// credentials are read and before any is checked. It is the one
// authentication of the token, introspection and revocation endpoints.
func (iss *Issuer) authenticate(r *http.Request, form *tokenForm, st *state, who *attempt, now time.Time, lookup func(id string) *client, subject func(id string) string, pending refusal) (*client, refusal) {
	if hasAssertion(form) {
		if pending.refused() {
			return nil, pending
		}
		who.addr = st.addrs.Addr(r)
		return iss.assertionClient(r, form, st, who, now, lookup, subject)
	}
	id, pass, basic, no := credentials(r, form)
	if no.refused() {
		return nil, no
	}
	if pending.refused() {
		return nil, pending
	}
	cl := lookup(id)
	who.addr = st.addrs.Addr(r)
	var hashes []secret.Hash // none for an unknown one: the same work, no match
	if cl != nil {
		who.client = cl.id
		hashes = cl.hashes
	}
	if no := iss.checkSecret(r, st, subject(id), hashes, pass, basic, who.addr, now); no.refused() {
		return nil, no
	}
	return cl, refusal{}
}

// checkSecret checks pass against the hashes of subject id (none for an
// unknown one), charging a failure to the budgets of id and addr (see
// Limits): the one check of a secret at every endpoint.
func (iss *Issuer) checkSecret(r *http.Request, st *state, id string, hashes []secret.Hash, pass string, basic bool, addr string, now time.Time) refusal {
	start := time.Now()
	// Hashed for the table only when this client failed from this
	// address within the window: a right secret computes no HMAC.
	repeat := st.repeats.Attempt(id, pass, addr)
	if repeat.Repeated(now) {
		// The same secret failed for this client from this address within
		// the window: the caller learns nothing new, so it is answered as
		// it was, held to the failure floor, and neither checked nor
		// charged again (see repeatBytes). It takes no turn among the
		// bcrypt checks: repeats cost nothing to send, and a turn costs
		// the callers behind it their wait.
		st.verifier.HoldFailure(r.Context(), start)
		return wrongSecret(basic, "the same secret already failed from this address; not charged again")
	}
	res, no := iss.reserve(r, st, id, addr, now)
	if no.refused() {
		no.basic = basic
		return no
	}
	if !st.verifier.Verify(r.Context(), hashes, pass) {
		res.Failed()
		// Only a check that ran to its end is remembered: one cut short
		// by the request's end (waiting for a bcrypt turn, say) proved
		// nothing, and the right secret must not be taken for a repeat.
		if r.Context().Err() == nil {
			repeat.Failed(now.Add(st.budget.Window))
		}
		return wrongSecret(basic, "")
	}
	res.Succeeded()
	return refusal{}
}

// repeatBytes is the memory of the table in which the token endpoint
// remembers, for the failure window, which secrets failed for which
// client from which address (16 bytes each, as a keyed hash: never the
// secret), and a quarter of it again for the filter by which a client
// that failed nothing from its address skips the hash. The same secret failing again from the same address within the
// window (x/oauth2's AuthStyleAutoDetect sends each secret twice, and a
// misconfigured client runs again and again) is answered as it was,
// 401 invalid_client held to the failure floor, without a check or a
// charge to any budget: it tells the caller nothing new. A new secret,
// or one from another address, is checked and charged as ever; a full
// table forgets the oldest failures, which are then charged again, so
// fullness never makes a guess free. Each configuration has its own
// table (a reload may make a failed secret right), and each process: a
// secret repeated at N replicas sharing a store is charged at most N
// times per window.
const repeatBytes = 64 << 10

// wrongSecret is the answer to an unknown client or a wrong secret; why
// is for the log.
func wrongSecret(basic bool, why string) refusal {
	return refusal{id: badCredentials, basic: basic, why: why}
}

// grant issues the token an authenticated client asked for.
func (iss *Issuer) grant(r *http.Request, form *tokenForm, st *state, cl *client, now time.Time, who *attempt) (*[]byte, refusal) {
	if !cl.clientCreds {
		return nil, refuse(unauthorizedClient)
	}
	granted, no := grantScopes(form.get(scopeParam), cl)
	if no.refused() {
		return nil, no
	}
	aud, no := st.targetAudience(form.resource, cl)
	if no.refused() {
		return nil, no
	}
	if cl.apiAud && len(form.resource) == 0 && len(granted) != len(cl.scopeList) {
		aud = apiAudience(st.apiOrder, granted) // the API resources of the scopes granted
	}
	who.scopes = granted
	jkt, no := iss.dpopBinding(r, st, cl, now)
	if no.refused() {
		return nil, no
	}
	if cl.reference {
		return iss.grantReference(r.Context(), st, cl, granted, aud, now, jkt)
	}
	answer := answers.get()
	b, err := st.appendAnswer((*answer)[:0], cl, granted, aud, now, jkt)
	if err != nil {
		answers.put(answer)
		iss.logger.Error("idsauth issuer: cannot sign a token", slog.String("error", err.Error()))
		return nil, refuse(signFailed)
	}
	*answer = b
	return answer, refusal{}
}

// reserve takes one failure from the budgets of client id and addr before
// its credentials are checked (see Limits): a 429 when a budget is spent,
// a 503 when the limiter's store cannot answer.
func (iss *Issuer) reserve(r *http.Request, st *state, id, addr string, now time.Time) (limit.Reservation, refusal) {
	res, err := st.limiter.Reserve(r.Context(), limit.Request{Subject: id, Address: addr, Budget: st.budget, Now: now})
	if err == nil {
		return res, refusal{}
	}
	var spent *limit.Refusal
	if errors.As(err, &spent) {
		return nil, refusal{id: tooManyFailures, retry: spent.RetryAfterSeconds(), limit: spent.Limit}
	}
	iss.logger.Error("idsauth issuer: the failure limiter's store cannot answer", slog.String("error", err.Error()))
	return nil, refuse(limiterDown)
}

// credentials returns the client's ID and secret, from HTTP Basic (whose
// parts are form-urlencoded, RFC 6749 §2.3.1) or the body. RFC 6749 §2.3
// forbids two authentication methods: Basic with a body client_secret, or
// with a different body client_id, is refused; Basic with the same
// client_id repeated in the body is one method, as requests-oauthlib sends
// it and IdentityServer accepts it. Over-long values are refused here,
// before anything is remembered of them.
func credentials(r *http.Request, form *tokenForm) (id, pass string, basic bool, _ refusal) {
	authz := r.Header.Values("Authorization")
	if len(authz) > 1 {
		return "", "", false, refuse(twoAuthorizations)
	}
	if len(authz) == 1 && len(authz[0]) >= 6 && strings.EqualFold(authz[0][:6], "Basic ") {
		u, p, ok := basicAuth(authz[0][6:])
		if ok {
			var err1, err2 error
			u, err1 = unescape(u)
			p, err2 = unescape(p)
			ok = err1 == nil && err2 == nil
		}
		if !ok || u == "" {
			return "", "", true, refusal{id: malformedBasic, basic: true}
		}
		if form.has(clientSecretParam) || (form.has(clientIDParam) && form.get(clientIDParam) != u) {
			return "", "", false, refuse(twoMethods)
		}
		if no := checkLengths(u, p); no.refused() {
			return "", "", false, no
		}
		return u, p, true, refusal{}
	}
	if !form.has(clientIDParam) {
		return "", "", false, refuse(noCredentials)
	}
	id, pass = form.get(clientIDParam), form.get(clientSecretParam)
	if no := checkLengths(id, pass); no.refused() {
		return "", "", false, no
	}
	return id, pass, false, refusal{}
}

// basicAuth decodes the credentials of an Authorization header's Basic
// scheme (RFC 7617): base64 of "user-id:password", split at the first
// colon, as net/http's Request.BasicAuth reads them. A value of usual
// size is decoded on the stack, into one string for both parts.
func basicAuth(encoded string) (user, pass string, ok bool) {
	var src, dst [512]byte
	var raw []byte
	if len(encoded) <= len(src) {
		n, err := base64.StdEncoding.Decode(dst[:], src[:copy(src[:], encoded)])
		if err != nil {
			return "", "", false
		}
		raw = dst[:n]
	} else {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(encoded); err != nil {
			return "", "", false
		}
	}
	if user, pass, ok = strings.Cut(string(raw), ":"); !ok {
		return "", "", false
	}
	return user, pass, true
}

// checkLengths refuses a client ID or secret longer than any the issuer
// accepts in its configuration.
func checkLengths(id, pass string) refusal {
	if tooLong(id, MaxClientIDLength) {
		return refuse(clientIDTooLong)
	}
	if tooLong(pass, MaxSecretLength) {
		return refuse(secretTooLong)
	}
	return refusal{}
}

// tooLong reports whether s has more than n characters, counting them
// only when its bytes could be more.
func tooLong(s string, n int) bool {
	return len(s) > n && utf8.RuneCountInString(s) > n
}

// grantScopes checks the requested scopes against the client's and returns
// them in the order asked, without duplicates.
func grantScopes(requested string, cl *client) ([]string, refusal) {
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
		return cl.scopeList, refusal{} // IdentityServer's default
	case one == nil:
		return nil, refuse(scopeMissing)
	case !many:
		return one, refusal{}
	}
	var granted []string
	for s := range strings.FieldsSeq(requested) {
		if !slices.Contains(granted, s) {
			granted = append(granted, s)
		}
	}
	return granted, refusal{}
}

// targetAudience returns the audience of the token: the client's, or
// exactly the resources asked for (RFC 8707 §2), each an absolute URI
// without a fragment that is one of the client's audiences.
func (st *state) targetAudience(resources []string, cl *client) ([]string, refusal) {
	if len(resources) == 0 {
		return cl.audience, refusal{}
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
	return aud, refusal{}
}
