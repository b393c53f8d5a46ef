package issuer

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/limit"
)

// refusalID names one row of refusals: why the token, introspection or
// revocation endpoint refused a request. Many share an OAuth error code
// (most are invalid_request), so the code is no key.
type refusalID uint8

const (
	notRefused refusalID = iota // no row: a nil *refusal is none

	// Reading the request (every endpoint).
	notPost             // the method
	notForm             // the Content-Type
	bodyTooLarge        // arg: the bound, in bytes
	bodyUnreadable      // the body ended early, or its reading failed
	malformedForm       // a ";", a bad escape, too many parameters
	paramTwice          // arg: the parameter's name
	twoAuthorizations   // more than one Authorization header
	malformedBasic      // Basic credentials that cannot be decoded
	twoMethods          // Basic, and credentials in the body too
	noCredentials       // neither Basic nor a client_id
	clientIDTooLong     // over maxClientIDLength
	secretTooLong       // over maxSecretLength
	assertionAndSecret  // a client assertion beside a secret
	assertionType       // a client_assertion_type other than RFC 7523's
	assertionMissing    // client_assertion_type without client_assertion
	assertionTooLong    // over maxAssertionLength
	notSVID             // a jwt-spiffe assertion that is no JWT-SVID
	federatedNoClientID // a workload's token without client_id

	// Authenticating (every endpoint).
	badCredentials  // an unknown client, a wrong secret, a failed assertion
	tooManyFailures // a failure budget is spent
	limiterDown     // the failure limiter's store cannot answer
	replaysFull     // no room to remember an assertion's or a proof's jti
	replaysDown     // the store cannot remember one
	certRejected    // a client certificate no client may use: outside its validity period

	// The token request.
	noGrantType         // grant_type missing or empty
	otherGrant          // a grant other than client_credentials
	scopeTooLong        // over maxScopeLength
	unauthorizedClient  // a client without client_credentials
	scopeNotAllowed     // a scope the client may not have
	scopeMissing        // no scope, for a client that must name one
	twoResources        // the identityserver profile takes one resource
	resourceMalformed   // a resource that is no absolute URI, or has a fragment
	resourceNotAllowed  // a resource that is not one of the client's audiences
	dpopRequired        // the client must send a DPoP proof
	twoDPoP             // more than one DPoP header
	dpopNonce           // the proof lacks the issuer's nonce
	dpopInvalid         // arg: the check the proof failed
	dpopUnread          // a proof that failed no check Verify names (it names each)
	certificateRequired // the client's tokens are bound to a certificate its request lacks
	grantCredentials    // the JWT bearer grant with client credentials
	grantNoAssertion    // the JWT bearer grant without its assertion
	grantInvalid        // the JWT bearer grant's assertion refused
	grantNotAllowed     // a client without the JWT bearer grant
	signFailed          // the token could not be signed
	storeRefused        // the token store is full or cannot answer
	answerFailed        // the answer could not be written

	// Introspection and revocation.
	tokenMissing   // no token parameter
	introspectDown // the token store cannot answer
	revokeDown     // the token store did not answer: the revocation may be applied yet

	numRefusals
)

// wire is what a refusal says: the OAuth error code and its description,
// in which "%s" stands for the refusal's argument. No description is "".
type wire struct{ code, desc string }

// row is how the endpoints answer one refusal.
type row struct {
	status int
	wire
	// ids is the identityserver profile's answer where it is not the
	// profile's rule (see answer).
	ids *wire
	// retry is the Retry-After, in seconds, of a refusal that does not
	// compute its own.
	retry int
}

// refusals is every refusal of the three endpoints, under the rfc profile
// (RFC 6749 §5.2, RFC 7009, RFC 7662, RFC 9449) and, where the
// identityserver profile answers other than its rule, as IdentityServer
// 7.4 does (CONTRACT.md §2.1).
var refusals = [numRefusals]row{
	notPost:             {status: 405, wire: wire{"invalid_request", "the %s endpoint takes POST only"}},
	notForm:             {status: 400, wire: wire{"invalid_request", "Content-Type must be application/x-www-form-urlencoded"}},
	bodyTooLarge:        {status: 400, wire: wire{"invalid_request", "request body larger than %s bytes"}},
	bodyUnreadable:      {status: 400, wire: wire{"invalid_request", "request body could not be read"}},
	malformedForm:       {status: 400, wire: wire{"invalid_request", "request body is not a valid form"}},
	paramTwice:          {status: 400, wire: wire{"invalid_request", "parameter %s given more than once"}},
	twoAuthorizations:   {status: 400, wire: wire{"invalid_request", "more than one Authorization header"}},
	malformedBasic:      {status: 401, wire: wire{"invalid_client", "malformed Basic credentials"}},
	twoMethods:          {status: 400, wire: wire{"invalid_request", "client credentials given both in the Authorization header and in the body"}},
	noCredentials:       {status: 401, wire: wire{"invalid_client", "no client credentials"}, ids: &wire{"invalid_request", ""}},
	clientIDTooLong:     {status: 400, wire: wire{"invalid_request", "client_id longer than " + strconv.Itoa(maxClientIDLength) + " characters"}},
	secretTooLong:       {status: 400, wire: wire{"invalid_request", "client_secret longer than " + strconv.Itoa(maxSecretLength) + " characters"}},
	assertionAndSecret:  {status: 400, wire: wire{"invalid_request", "a client secret and a client assertion in one request: use one method"}},
	assertionType:       {status: 400, wire: wire{"invalid_request", "client_assertion_type must be " + assertionTypeJWT}},
	assertionMissing:    {status: 400, wire: wire{"invalid_request", "client_assertion is missing"}},
	assertionTooLong:    {status: 400, wire: wire{"invalid_request", "client_assertion longer than " + strconv.Itoa(maxAssertionLength) + " bytes"}},
	notSVID:             {status: 400, wire: wire{"invalid_request", "a client_assertion of type " + assertionTypeSPIFFE + " must be a JWT-SVID"}},
	federatedNoClientID: {status: 400, wire: wire{"invalid_request", "client_id is required with a workload's token as client_assertion"}},

	badCredentials:  {status: 401, wire: wire{"invalid_client", "client authentication failed"}},
	tooManyFailures: {status: 429, wire: wire{"slow_down", "too many failed attempts; try again later"}},
	limiterDown:     {status: 503, wire: wire{"temporarily_unavailable", "the token endpoint cannot check failed attempts now; try again shortly"}, retry: 1},
	replaysFull:     {status: 429, wire: wire{"slow_down", "too many assertions to remember; try again later"}},
	replaysDown:     {status: 503, wire: wire{"temporarily_unavailable", "the token endpoint cannot check assertion replays now; try again shortly"}, retry: 1},
	certRejected:    {status: 401, wire: wire{"invalid_client", "client authentication failed"}, ids: &wire{"invalid_client", "mTLS authentication failed."}},

	noGrantType:         {status: 400, wire: wire{"invalid_request", "grant_type is missing"}, ids: &wire{"unsupported_grant_type", ""}},
	otherGrant:          {status: 400, wire: wire{"unsupported_grant_type", "only client_credentials is supported"}},
	scopeTooLong:        {status: 400, wire: wire{"invalid_request", "scope longer than " + strconv.Itoa(maxScopeLength) + " characters"}},
	unauthorizedClient:  {status: 400, wire: wire{"unauthorized_client", "the client may not use client_credentials"}},
	scopeNotAllowed:     {status: 400, wire: wire{"invalid_scope", "scope not allowed for this client"}},
	scopeMissing:        {status: 400, wire: wire{"invalid_scope", "scope is missing"}},
	twoResources:        {status: 400, wire: wire{"invalid_target", "Multiple resource indicators not supported on token endpoint."}},
	resourceMalformed:   {status: 400, wire: wire{"invalid_target", "resource must be an absolute URI without a fragment"}},
	resourceNotAllowed:  {status: 400, wire: wire{"invalid_target", "resource not allowed for this client"}},
	dpopRequired:        {status: 400, wire: wire{"invalid_request", "this client must send a DPoP proof"}, ids: &wire{"invalid_request", "Client requires DPoP and a DPoP header value was not provided."}},
	twoDPoP:             {status: 400, wire: wire{"invalid_dpop_proof", "more than one DPoP header"}, ids: &wire{"invalid_request", "Too many DPoP headers provided."}},
	dpopNonce:           {status: 400, wire: wire{"use_dpop_nonce", "the DPoP proof must carry the nonce in the DPoP-Nonce header"}},
	dpopInvalid:         {status: 400, wire: wire{"invalid_dpop_proof", "invalid DPoP proof: %s"}},
	dpopUnread:          {status: 400, wire: wire{"invalid_dpop_proof", "invalid DPoP proof"}},
	certificateRequired: {status: 400, wire: wire{"invalid_request", "this client's tokens are bound to its certificate: send the request over mutual TLS with it"}},
	grantCredentials:    {status: 400, wire: wire{"invalid_request", "the jwt-bearer grant takes no client authentication: its assertion is the credential"}},
	grantNoAssertion:    {status: 400, wire: wire{"invalid_request", "assertion is missing"}},
	grantInvalid:        {status: 400, wire: wire{"invalid_grant", "the assertion was refused"}},
	grantNotAllowed:     {status: 400, wire: wire{"unauthorized_client", "the client may not use the jwt-bearer grant"}},
	signFailed:          {status: 500, wire: wire{"server_error", "the token could not be signed"}},
	storeRefused:        {status: 503, wire: wire{"temporarily_unavailable", "no token can be issued now; try again shortly"}, retry: 1},
	answerFailed:        {status: 500, wire: wire{"server_error", "the answer could not be written"}},

	tokenMissing:   {status: 400, wire: wire{"invalid_request", "token is missing"}},
	introspectDown: {status: 503, wire: wire{"temporarily_unavailable", "the token cannot be checked now; try again shortly"}, retry: 1},
	revokeDown:     {status: 503, wire: wire{"temporarily_unavailable", "whether the token was revoked is unknown; try again shortly: revoking it again is safe"}, retry: 1},
}

// refusal is one refused request: its row, and what this request adds to
// it. A function that may refuse returns a *refusal, nil for none, as it
// would an error: the way through stays a word wide. A refusal of its row
// alone is one of plain's, shared and never written to; one that carries
// more is made for its request.
type refusal struct {
	id    refusalID
	arg   string      // the description's argument, when it has one
	retry int         // Retry-After seconds, when computed for this request
	nonce string      // a DPoP-Nonce to send
	limit limit.Limit // the budget that refused it, for the events
	why   string      // for the log, when it says more than the description
}

// plain holds the refusal of each row alone.
var plain = func() (p [numRefusals]refusal) {
	for id := range p {
		p[id].id = refusalID(id)
	}
	return p
}()

// refuse is the refusal of row id alone.
func refuse(id refusalID) *refusal { return &plain[id] }

// refuseWith is the refusal of row id with its description's argument.
func refuseWith(id refusalID, arg string) *refusal { return &refusal{id: id, arg: arg} }

// answer is a refusal as one profile writes it.
type answer struct {
	status    int
	wire      // desc: with %s for arg
	arg       string
	challenge bool // a Basic WWW-Authenticate
	retry     int
	nonce     string
}

// answer is how the endpoint answers no; identityServer is the
// identityserver profile at the token endpoint (introspection and
// revocation answer as RFC 7662 and RFC 7009 say under both), and basic
// says the client used Basic, which a 401 challenges (RFC 6749 §5.2),
// unless the profile says otherwise. Its rule
// is IdentityServer's TokenErrorHttpWriter: every error 400 but the
// failure limits' 429 and 503, which IdentityServer does not have, and a
// method's 405; no WWW-Authenticate; invalid_client without a
// description. A row's ids says what the rule does not.
func (no *refusal) answer(identityServer, basic bool) answer {
	r := &refusals[no.id]
	a := answer{status: r.status, wire: r.wire, arg: no.arg, challenge: basic && r.status == http.StatusUnauthorized, retry: r.retry, nonce: no.nonce}
	if no.retry > 0 {
		a.retry = no.retry
	}
	if !identityServer {
		return a
	}
	a.challenge = false
	switch a.status {
	case http.StatusMethodNotAllowed, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		a.status = http.StatusBadRequest
	}
	switch {
	case r.ids != nil:
		a.wire = *r.ids
	case a.code == "invalid_client":
		a.desc = ""
	}
	return a
}

// description is the rfc profile's description of no, for the log.
func (no *refusal) description() string {
	if no.why != "" {
		return no.why
	}
	before, after, hasArg := strings.Cut(refusals[no.id].desc, "%s")
	if !hasArg {
		return before
	}
	return before + no.arg + after
}

// write writes a as the answer: its headers and its JSON body, built in a
// reused buffer.
func (a answer) write(w http.ResponseWriter) {
	h := w.Header()
	if a.challenge {
		h.Set("WWW-Authenticate", `Basic realm="`+oauthwire.Realm+`", charset="UTF-8"`)
	}
	if a.status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodPost)
	}
	if a.retry > 0 {
		h.Set("Retry-After", strconv.Itoa(a.retry))
	}
	if a.nonce != "" {
		h.Set("DPoP-Nonce", a.nonce)
	}
	body := answers.get()
	*body = a.appendBody((*body)[:0])
	oauthwire.WriteBody(w, a.status, *body)
	answers.put(body)
}

// appendBody appends a's JSON body, {"error", "error_description"}, as
// encoding/json writes oauthwire.Error.
func (a answer) appendBody(b []byte) []byte {
	b = append(b, `{"error":`...)
	b = oauthwire.AppendString(b, a.code)
	if a.desc != "" {
		b = append(b, `,"error_description":`...)
		before, after, hasArg := strings.Cut(a.desc, "%s")
		if !hasArg {
			b = oauthwire.AppendString(b, before)
		} else {
			b = appendJoinedString(b, before, a.arg, after)
		}
	}
	return append(b, "}\n"...)
}

// appendJoinedString appends the JSON string of the three parts joined,
// escaped as one, without joining them first.
func appendJoinedString(b []byte, parts ...string) []byte {
	b = append(b, '"')
	for _, s := range parts {
		start := len(b)
		b = oauthwire.AppendString(b, s) // "s", escaped
		n := copy(b[start:], b[start+1:len(b)-1])
		b = b[:start+n]
	}
	return append(b, '"')
}
