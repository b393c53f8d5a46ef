package accesstoken

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/keyerr"
	"github.com/idsauth/idsauth/internal/reason"
	"github.com/idsauth/idsauth/scope"
)

// The reasons a caller may act on. Validate refuses a token with a
// *ValidationError whose Code names its reason; errors.Is finds these
// in it.
var (
	// ErrExpired: the token's "exp" has passed, leeway included. Its
	// client should get a new token.
	ErrExpired = errors.New("token expired")
	// ErrUnknownKey: no key of the issuer has the token's "kid", or none
	// may verify it. A KeySource returns it when it has none to give.
	ErrUnknownKey = keyerr.ErrUnknownKey // "unknown signing key"
	// ErrKeysUnavailable: the issuer's keys could not be had (a JWKS that
	// could not be fetched): the token is not at fault. A KeySource
	// returns it when it has no keys at all.
	ErrKeysUnavailable = keyerr.ErrKeysUnavailable // "signing keys unavailable"
)

// ErrInactive is the reason of a token the introspection endpoint says is
// not active: unknown, expired, revoked, or not for this API.
var ErrInactive = errors.New("token is not active")

// ErrIntrospectionUnavailable is the reason of a token that could not be
// introspected: the endpoint was down, slow, or answered what is not an
// introspection answer. The token is refused, never let through; the log
// says why. It is not the token's fault: a caller may answer otherwise.
var ErrIntrospectionUnavailable = errors.New("token introspection unavailable")

// The other reasons, known by their codes alone (see ValidationError).
var (
	errTooLarge         = errors.New("token is too large")
	errMalformed        = errors.New("token is malformed")
	errAlgorithm        = keyerr.ErrAlgorithm // "token signing algorithm not allowed"
	errCritical         = errors.New("token has critical header parameters that are not supported")
	errType             = errors.New("token type is not an access token")
	errAmbiguousKey     = fmt.Errorf("%w: the token names no key and more than two fit it", ErrUnknownKey)
	errSignature        = errors.New("signature invalid")
	errNotYetValid      = errors.New("token not valid yet")
	errIssuedInFuture   = errors.New("token issued in the future")
	errMissingClaim     = errors.New("token lacks a required claim")
	errIssuer           = errors.New("token issuer not accepted")
	errAudience         = errors.New("token audience not accepted")
	errScopeClaim       = scope.ErrInvalidClaim // "scope claim is neither a string nor an array of strings"
	errScopeName        = scope.ErrInvalidName  // errors.Is(errScopeName, errScopeClaim)
	errBoundToken       = errors.New("token is bound to a key")
	errUnboundToken     = errors.New("token is not bound to a key")
	errWrongCertificate = errors.New("token is bound to another client certificate")
	errNoClaims         = errors.New("token validator returned no claims and no error")
)

// codes is the one table of the reasons' codes: a ValidationError's Code,
// an observe.Event's Reason. Dashboards and clients' code may match them,
// so, as net/http says of MaxBytesError, they cannot be changed; the Go
// text of the errors can. The first row that errors.Is matches wins, so a
// narrower error comes before a wider one.
var codes = []struct {
	err  error
	code string // fixed, snake case, unique
}{
	{errTooLarge, "too_large"},
	{errMalformed, "malformed"},
	{errAlgorithm, "algorithm"},
	{errCritical, "critical_header"},
	{errType, "type"},
	{errAmbiguousKey, "ambiguous_key"},
	{ErrUnknownKey, "unknown_key"},
	{ErrKeysUnavailable, "keys_unavailable"},
	{errSignature, "signature"},
	{ErrExpired, "expired"},
	{errNotYetValid, "not_yet_valid"},
	{errIssuedInFuture, "issued_in_future"},
	{errMissingClaim, "missing_claim"},
	{errIssuer, "issuer"},
	{errAudience, "audience"},
	{errScopeName, "scope_name"},
	{errScopeClaim, "scope_claim"},
	{errBoundToken, "bound_token"},
	{errUnboundToken, "not_bound"},
	{errWrongCertificate, "wrong_certificate"},
	{ErrInactive, "inactive"},
	{ErrIntrospectionUnavailable, "introspection_unavailable"},
	{errNoClaims, "no_claims"},
}

// refused returns the ValidationError of reason, without facts.
func refused(reason error) *ValidationError {
	for _, r := range codes {
		if errors.Is(reason, r.err) {
			return &ValidationError{Code: r.code, reason: r.err}
		}
	}
	return &ValidationError{Code: "other", reason: reason} // unreachable: every reason has a row
}

// ReasonCode returns the fixed code of a reason to refuse a request: a
// *ValidationError's Code, or the code of a refusal of this module's
// transports that is not a token's validation: no_token,
// multiple_headers, space_in_token (the Authorization header),
// insufficient_scope, dpop_proof, dpop_nonce, dpop_key (a DPoP proof),
// scim_token and too_many_failures (middleware.SCIMAuth), gate_assertion
// (middleware.RequireGateAssertion). Any other
// error, such as one of a TokenValidator of your own, is "other". It is
// what an observe.Event's Reason holds, fit for a metric label; the codes
// are stable.
func ReasonCode(err error) string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve.Code
	}
	var r *reason.Error
	if errors.As(err, &r) {
		return r.Code
	}
	return "other"
}

// ValidationError is the error Validate and Decide return: why a token was refused,
// by a fixed Code, and facts about it for a log line. errors.Is finds
// ErrExpired and the package's other Err values in it. Only the code's
// fixed description goes on the wire (middleware's table); Error, which
// holds the facts, is for the operator, and its text may change.
//
// The codes, snake case, fit for a metric label, and stable:
//
//	too_large          longer than Config.MaxTokenSize
//	malformed          not a JWS, a claim of the wrong JSON type, a claim named twice
//	algorithm          an "alg" not accepted, or not the key's
//	critical_header    a "crit" header parameter
//	type               a "typ" of no access token, or an introspected refresh token
//	ambiguous_key      no "kid", and more than MaxKeysPerToken keys fit
//	unknown_key        ErrUnknownKey
//	keys_unavailable   ErrKeysUnavailable
//	signature          the signature does not verify
//	expired            ErrExpired
//	not_yet_valid      "nbf" in the future
//	issued_in_future   "iat" in the future
//	missing_claim      no "exp"
//	issuer             an "iss" not trusted
//	audience           an "aud" not this service's
//	scope_name         a scope name with whitespace or a control character
//	scope_claim        a scope claim neither a string nor an array of strings
//	bound_token        bound to a key ("cnf"), presented without its proof
//	not_bound          presented with DPoP, bound to no DPoP key
//	wrong_certificate  bound to a client certificate, presented with another
//	inactive           ErrInactive
//	introspection_unavailable  ErrIntrospectionUnavailable
//	no_claims          a TokenValidator returned neither claims nor an error (Decide)
//
// The facts are read from a token whose signature verified (or from the
// answer of the issuer's endpoint), so they are the issuer's words, never
// an attacker's. Each is set only for the codes named beside it.
type ValidationError struct {
	// Code is the reason, one of the codes above.
	Code string

	Expiry    time.Time // expired: the token's "exp"
	NotBefore time.Time // not_yet_valid: its "nbf"
	IssuedAt  time.Time // issued_in_future: its "iat"
	Now       time.Time // the time reasons: the validator's clock, before leeway

	Audience []string // audience: the "aud" it names

	reason error
}

func (e *ValidationError) Error() string {
	if e.reason == nil {
		return "token invalid"
	}
	const layout = time.RFC3339
	switch e.Code {
	case "expired":
		return fmt.Sprintf("%v: exp %s, now %s", e.reason, e.Expiry.UTC().Format(layout), e.Now.UTC().Format(layout))
	case "not_yet_valid":
		return fmt.Sprintf("%v: nbf %s, now %s", e.reason, e.NotBefore.UTC().Format(layout), e.Now.UTC().Format(layout))
	case "issued_in_future":
		return fmt.Sprintf("%v: iat %s, now %s", e.reason, e.IssuedAt.UTC().Format(layout), e.Now.UTC().Format(layout))
	case "audience":
		return fmt.Sprintf("%v: aud [%s]", e.reason, quoteAll(e.Audience))
	}
	return e.reason.Error()
}

// Unwrap returns the reason.
func (e *ValidationError) Unwrap() error { return e.reason }

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}
