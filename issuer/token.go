package issuer

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// tokenError is a failed token request: the answer and, for the log, why.
type tokenError struct {
	status int
	code   string
	desc   string
	basic  bool        // answer with a Basic challenge
	nonce  string      // a DPoP-Nonce to send (use_dpop_nonce)
	retry  int         // Retry-After seconds
	limit  limit.Limit // the budget that refused it, for the log
	why    string      // for the log, when it says more than desc
}

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

func badRequest(code, desc string) *tokenError {
	return &tokenError{status: http.StatusBadRequest, code: code, desc: desc}
}

// token serves the token endpoint (CONTRACT.md §2).
func (iss *Issuer) token(w http.ResponseWriter, r *http.Request, st *state) {
	start := time.Now()
	var who attempt
	answer, err := iss.issue(w, r, st, &who)
	if err != nil && st.identityServer {
		err = asIdentityServer(err)
	}
	if err != nil {
		iss.refuse(w, err)
		iss.refused(r, err, who, time.Since(start))
		return
	}
	oauthwire.WriteBody(w, http.StatusOK, *answer) // which keeps none of it
	answers.put(answer)
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

func (iss *Issuer) issue(w http.ResponseWriter, r *http.Request, st *state, who *attempt) (*[]byte, *tokenError) {
	form := &tokenForm{}
	if terr := postForm(w, r, st, "token", form); terr != nil {
		return nil, terr
	}
	grant := form.get(grantTypeParam)
	switch grant {
	case "":
		return nil, badRequest("invalid_request", descNoGrantType)
	case "client_credentials":
	default:
		return nil, badRequest("unsupported_grant_type", "only client_credentials is supported")
	}

	// The token's times and the key that signs it come from one reading
	// of the clock: the span that ServeHTTP found may have ended since,
	// and its key must not sign a token issued after its last instant.
	now := iss.now()
	st = st.at(now)
	var longScope *tokenError // answered once the credentials are read, before any is checked
	if tooLong(form.get(scopeParam), MaxScopeLength) {
		longScope = badRequest("invalid_request", "scope longer than "+strconv.Itoa(MaxScopeLength)+" characters")
	}
	cl, terr := iss.authenticate(r, form, st, who, now, st.clientByID, sameID, longScope)
	if terr != nil {
		return nil, terr
	}
	return iss.grant(r, form, st, cl, now, who)
}

// postForm reads into form, empty, the form of a request to the issuer's
// endpoint named what, which takes POST only. The caller's form stays on
// its stack: the token endpoint allocates none.
func postForm(w http.ResponseWriter, r *http.Request, st *state, what string, form *tokenForm) *tokenError {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return &tokenError{status: http.StatusMethodNotAllowed, code: "invalid_request", desc: "the " + what + " endpoint takes POST only"}
	}
	return readForm(w, r, st.limits.MaxBodyBytes, form)
}

// authenticate finds who is asking, by a signed assertion or a secret,
// each attempt charged to the failure budgets (see Limits): a client, with
// lookup st.clientByID and subject sameID, or an API resource, with
// st.apiByID and apiSubject. pending, when not nil, is answered once the
// credentials are read and before any is checked. It is the one
// authentication of the token, introspection and revocation endpoints.
func (iss *Issuer) authenticate(r *http.Request, form *tokenForm, st *state, who *attempt, now time.Time, lookup func(id string) *client, subject func(id string) string, pending *tokenError) (*client, *tokenError) {
	if hasAssertion(form) {
		if pending != nil {
			return nil, pending
		}
		who.addr = st.addrs.Addr(r)
		return iss.assertionClient(r, form, st, who, now, lookup, subject)
	}
	id, pass, basic, terr := credentials(r, form)
	if terr != nil {
		return nil, terr
	}
	if pending != nil {
		return nil, pending
	}
	cl := lookup(id)
	who.addr = st.addrs.Addr(r)
	var hashes []secret.Hash // none for an unknown one: the same work, no match
	if cl != nil {
		who.client = cl.id
		hashes = cl.hashes
	}
	if terr := iss.checkSecret(r, st, subject(id), hashes, pass, basic, who.addr, now); terr != nil {
		return nil, terr
	}
	return cl, nil
}

// checkSecret checks pass against the hashes of subject id (none for an
// unknown one), charging a failure to the budgets of id and addr (see
// Limits): the one check of a secret at every endpoint.
func (iss *Issuer) checkSecret(r *http.Request, st *state, id string, hashes []secret.Hash, pass string, basic bool, addr string, now time.Time) *tokenError {
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
	res, terr := iss.reserve(r, st, id, addr, now)
	if terr != nil {
		return terr
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
	return nil
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

// The descriptions of the answers that the identityserver profile
// changes (asIdentityServer).
const (
	descNoGrantType   = "grant_type is missing"
	descNoCredentials = "no client credentials"
	descTwoDPoP       = "more than one DPoP header"
	descRequireDPoP   = "this client must send a DPoP proof"
)

// asIdentityServer turns a token error into IdentityServer 7.4's answer
// to the same request (CONTRACT.md §2.1): every error is 400 with no
// WWW-Authenticate, invalid_client without a description; no credentials
// at all is invalid_request, no grant_type unsupported_grant_type; the
// DPoP header errors say what IdentityServer says. The failure limits'
// 429 and 503, which IdentityServer does not have, stay.
func asIdentityServer(e *tokenError) *tokenError {
	out := *e
	out.basic = false
	if out.why == "" {
		out.why = e.desc // the log keeps our reason
	}
	switch {
	case e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable || e.status == http.StatusMethodNotAllowed:
		return &out
	case e.code == "invalid_client" && e.desc == descNoCredentials:
		out.code, out.desc = "invalid_request", ""
	case e.code == "invalid_client":
		out.desc = ""
	case e.code == "invalid_request" && e.desc == descNoGrantType:
		out.code, out.desc = "unsupported_grant_type", ""
	case e.code == "invalid_dpop_proof" && e.desc == descTwoDPoP:
		out.code, out.desc = "invalid_request", "Too many DPoP headers provided."
	case e.code == "invalid_request" && e.desc == descRequireDPoP:
		out.desc = "Client requires DPoP and a DPoP header value was not provided."
	}
	out.status = http.StatusBadRequest
	return &out
}

// wrongSecret is the answer to an unknown client or a wrong secret; why
// is for the log.
func wrongSecret(basic bool, why string) *tokenError {
	return &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: "client authentication failed", basic: basic, why: why}
}

// grant issues the token an authenticated client asked for.
func (iss *Issuer) grant(r *http.Request, form *tokenForm, st *state, cl *client, now time.Time, who *attempt) (*[]byte, *tokenError) {
	if !cl.clientCreds {
		return nil, badRequest("unauthorized_client", "the client may not use client_credentials")
	}
	granted, terr := grantScopes(form.get(scopeParam), cl)
	if terr != nil {
		return nil, terr
	}
	aud, terr := st.targetAudience(form.resource, cl)
	if terr != nil {
		return nil, terr
	}
	if cl.apiAud && len(form.resource) == 0 && len(granted) != len(cl.scopeList) {
		aud = apiAudience(st.apiOrder, granted) // the API resources of the scopes granted
	}
	who.scopes = granted
	jkt, terr := iss.dpopBinding(r, st, cl, now)
	if terr != nil {
		return nil, terr
	}
	if cl.reference {
		return iss.grantReference(r.Context(), st, cl, granted, aud, now, jkt)
	}
	answer := answers.get()
	b, err := st.appendAnswer((*answer)[:0], cl, granted, aud, now, jkt)
	if err != nil {
		answers.put(answer)
		iss.logger.Error("idsauth issuer: cannot sign a token", slog.String("error", err.Error()))
		return nil, &tokenError{status: http.StatusInternalServerError, code: "server_error", desc: "the token could not be signed"}
	}
	*answer = b
	return answer, nil
}

// reserve takes one failure from the budgets of client id and addr before
// its credentials are checked (see Limits): a 429 when a budget is spent,
// a 503 when the limiter's store cannot answer.
func (iss *Issuer) reserve(r *http.Request, st *state, id, addr string, now time.Time) (limit.Reservation, *tokenError) {
	res, err := st.limiter.Reserve(r.Context(), limit.Request{Subject: id, Address: addr, Budget: st.budget, Now: now})
	if err == nil {
		return res, nil
	}
	var no *limit.Refusal
	if errors.As(err, &no) {
		return nil, &tokenError{status: http.StatusTooManyRequests, code: "slow_down", desc: "too many failed attempts; try again later", retry: no.RetryAfterSeconds(), limit: no.Limit}
	}
	iss.logger.Error("idsauth issuer: the failure limiter's store cannot answer", slog.String("error", err.Error()))
	return nil, &tokenError{status: http.StatusServiceUnavailable, code: "temporarily_unavailable", desc: "the token endpoint cannot check failed attempts now; try again shortly", retry: int(limit.UnavailableRetryAfter / time.Second)}
}

// credentials returns the client's ID and secret, from HTTP Basic (whose
// parts are form-urlencoded, RFC 6749 §2.3.1) or the body. RFC 6749 §2.3
// forbids two authentication methods: Basic with a body client_secret, or
// with a different body client_id, is refused; Basic with the same
// client_id repeated in the body is one method, as requests-oauthlib sends
// it and IdentityServer accepts it. Over-long values are refused here,
// before anything is remembered of them.
func credentials(r *http.Request, form *tokenForm) (id, pass string, basic bool, _ *tokenError) {
	authz := r.Header.Values("Authorization")
	if len(authz) > 1 {
		return "", "", false, badRequest("invalid_request", "more than one Authorization header")
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
			return "", "", true, &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: "malformed Basic credentials", basic: true}
		}
		if form.has(clientSecretParam) || (form.has(clientIDParam) && form.get(clientIDParam) != u) {
			return "", "", false, badRequest("invalid_request", "client credentials given both in the Authorization header and in the body")
		}
		if terr := checkLengths(u, p); terr != nil {
			return "", "", false, terr
		}
		return u, p, true, nil
	}
	if !form.has(clientIDParam) {
		return "", "", false, &tokenError{status: http.StatusUnauthorized, code: "invalid_client", desc: descNoCredentials}
	}
	id, pass = form.get(clientIDParam), form.get(clientSecretParam)
	if terr := checkLengths(id, pass); terr != nil {
		return "", "", false, terr
	}
	return id, pass, false, nil
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
func checkLengths(id, pass string) *tokenError {
	if tooLong(id, MaxClientIDLength) {
		return badRequest("invalid_request", "client_id longer than "+strconv.Itoa(MaxClientIDLength)+" characters")
	}
	if tooLong(pass, MaxSecretLength) {
		return badRequest("invalid_request", "client_secret longer than "+strconv.Itoa(MaxSecretLength)+" characters")
	}
	return nil
}

// tooLong reports whether s has more than n characters, counting them
// only when its bytes could be more.
func tooLong(s string, n int) bool {
	return len(s) > n && utf8.RuneCountInString(s) > n
}

// grantScopes checks the requested scopes against the client's and returns
// them in the order asked, without duplicates.
func grantScopes(requested string, cl *client) ([]string, *tokenError) {
	var one []string // the first scope asked for, from the client's set
	many := false
	for s := range strings.FieldsSeq(requested) {
		i, ok := slices.BinarySearch(cl.scopes, s)
		switch {
		case !ok:
			return nil, badRequest("invalid_scope", "scope not allowed for this client")
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
		return nil, badRequest("invalid_scope", "scope is missing")
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
func (st *state) targetAudience(resources []string, cl *client) ([]string, *tokenError) {
	if len(resources) == 0 {
		return cl.audience, nil
	}
	if len(resources) > 1 && st.identityServer {
		return nil, badRequest("invalid_target", "Multiple resource indicators not supported on token endpoint.")
	}
	aud := make([]string, 0, len(resources))
	for _, res := range resources {
		u, err := url.Parse(res)
		if err != nil || !u.IsAbs() || strings.Contains(res, "#") {
			return nil, badRequest("invalid_target", "resource must be an absolute URI without a fragment")
		}
		if !slices.Contains(cl.audience, res) {
			return nil, badRequest("invalid_target", "resource not allowed for this client")
		}
		if !slices.Contains(aud, res) {
			aud = append(aud, res)
		}
	}
	return aud, nil
}

// refuse writes a token endpoint error.
func (iss *Issuer) refuse(w http.ResponseWriter, e *tokenError) {
	h := w.Header()
	if e.basic {
		h.Set("WWW-Authenticate", `Basic realm="`+oauthwire.Realm+`", charset="UTF-8"`)
	}
	if e.retry > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retry))
	}
	if e.nonce != "" {
		h.Set("DPoP-Nonce", e.nonce)
	}
	oauthwire.WriteJSON(w, e.status, oauthwire.Error{Code: e.code, Description: e.desc})
}
