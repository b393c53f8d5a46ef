package middleware

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/keyerr"
	"github.com/idsauth/idsauth/scope"
)

// The reasons a token fails validation. [Validator.Validate] returns a
// [*ValidationError] whose Reason is one of them: test with errors.Is.
// What error_description says for each is fixed apart from their Go text,
// and never holds any part of the token.
var (
	ErrTooLarge   = errors.New("token is too large")
	ErrMalformed  = errors.New("token is malformed")
	ErrAlgorithm  = keyerr.ErrAlgorithm // "token signing algorithm not allowed"
	ErrCritical   = errors.New("token has critical header parameters that are not supported")
	ErrType       = errors.New("token type is not an access token")
	ErrUnknownKey = keyerr.ErrUnknownKey // "unknown signing key"
	// ErrAmbiguousKey: the token names no key ("kid") and more than
	// MaxKeysPerToken of the issuer's keys fit its alg, so that none is
	// tried. errors.Is(ErrAmbiguousKey, ErrUnknownKey) holds.
	ErrAmbiguousKey    = fmt.Errorf("%w: the token names no key and more than two fit it", ErrUnknownKey)
	ErrKeysUnavailable = keyerr.ErrKeysUnavailable // "signing keys unavailable"
	ErrSignature       = errors.New("signature invalid")
	ErrExpired         = errors.New("token expired")
	ErrNotYetValid     = errors.New("token not valid yet")
	ErrIssuedInFuture  = errors.New("token issued in the future")
	ErrMissingClaim    = errors.New("token lacks a required claim")
	ErrIssuer          = errors.New("token issuer not accepted")
	ErrAudience        = errors.New("token audience not accepted")
	ErrScopeClaim      = scope.ErrInvalidClaim // "scope claim is neither a string nor an array of strings"
	ErrScopeName       = scope.ErrInvalidName  // a scope name with whitespace in it; errors.Is(ErrScopeName, ErrScopeClaim)
	ErrBoundToken      = errors.New("token is bound to a key")
)

// reasons is the one table of what this package says about a refusal: to
// an observer (a code), on the wire (error_description) and in a log
// line. Clients may match the wire text and dashboards the code, so, as
// net/http says of MaxBytesError, neither can be changed; the Go text of
// the errors can. The first row that errors.Is matches
// wins, so a narrower error comes before a wider one.
var reasons = []struct {
	err  error
	code string // observe.Event's Reason: fixed, snake case, unique
	wire string // error_description; "" for a reason with no OAuth error body
	log  string // "" means wire
}{
	{ErrTooLarge, "too_large", "token is too large", ""},
	{ErrMalformed, "malformed", "token is malformed", ""},
	{ErrAlgorithm, "algorithm", "token signing algorithm not allowed", ""},
	{ErrCritical, "critical_header", "token has critical header parameters that are not supported", ""},
	{ErrType, "type", "token type is not an access token", ""},
	{ErrAmbiguousKey, "ambiguous_key", "token names no signing key (kid) and more than two fit it", ""},
	{ErrUnknownKey, "unknown_key", "unknown signing key", ""},
	{ErrKeysUnavailable, "keys_unavailable", "signing keys unavailable", ""},
	{ErrSignature, "signature", "signature invalid", ""},
	{ErrExpired, "expired", "token expired", ""},
	{ErrNotYetValid, "not_yet_valid", "token not valid yet", ""},
	{ErrIssuedInFuture, "issued_in_future", "token issued in the future", ""},
	{ErrMissingClaim, "missing_claim", "token lacks a required claim", ""},
	{ErrIssuer, "issuer", "token issuer not accepted", ""},
	{ErrAudience, "audience", "token audience not accepted", ""},
	{ErrScopeName, "scope_name", "token scope claim holds a scope name with whitespace in it", ""},
	{ErrScopeClaim, "scope_claim", "token scope claim is neither a string nor an array of strings", ""},
	{ErrBoundToken, "bound_token", "token is bound to a key", ""},
	{ErrInactive, "inactive", "token is not active", ""},
	{ErrDPoPKey, "dpop_key", "invalid DPoP proof: key is not the token's", ""},
	{ErrDPoPNonce, "dpop_nonce", "DPoP proof lacks the nonce", ""},
	{ErrDPoPProof, "dpop_proof", "invalid DPoP proof", ""},
	{ErrUnboundToken, "not_bound", "token is not bound to a key", ""},
	{ErrIntrospectionUnavailable, "introspection_unavailable", "token could not be checked", "token introspection unavailable"},
	// Refusals that are not a failed validation.
	{ErrNoToken, "no_token", "", "no bearer token"},
	{ErrMultipleHeaders, "multiple_headers", "more than one Authorization header", ""},
	{ErrSpaceInToken, "space_in_token", "bearer token contains a space", ""},
	{ErrInsufficientScope, "insufficient_scope", "token lacks the scope this API requires", ""},
	{ErrNoClaims, "no_claims", genericWire, "token validator returned no claims and no error"},
	{ErrSCIMToken, "scim_token", "", "the authorization header is invalid or missing"},
	{ErrSCIMTooManyFailures, "too_many_failures", "", "too many failed attempts"},
}

// genericWire describes an error that is none of ours (from a
// TokenValidator the user wrote): its message could hold anything.
const genericWire = "token invalid"

// reasonRow returns the table's row for err, or -1.
func reasonRow(err error) int {
	for i, r := range reasons {
		if errors.Is(err, r.err) {
			return i
		}
	}
	return -1
}

// describe returns the error_description for err.
func describe(err error) string {
	var df *dpopFailure
	if errors.As(err, &df) {
		return "invalid DPoP proof: " + df.why // fixed text: which check failed
	}
	if i := reasonRow(err); i >= 0 && reasons[i].wire != "" {
		return reasons[i].wire
	}
	return genericWire
}

// ReasonCode returns the fixed code of a rejection reason: what an
// observe.Event's Reason holds, fit for a metric label. err is one of this
// package's Err* values, or an error that wraps one (a *ValidationError);
// any other error, such as one of a TokenValidator of your own, is
// "other". The codes are stable.
func ReasonCode(err error) string {
	if i := reasonRow(err); i >= 0 {
		return reasons[i].code
	}
	return "other"
}

// logReason returns the text of a rejection reason fit for a log line.
func logReason(err error) string {
	i := reasonRow(err)
	switch {
	case i < 0:
		return genericWire
	case reasons[i].log != "":
		return reasons[i].log
	}
	return reasons[i].wire
}

// ValidationError is the error [Validator.Validate] returns: why a token
// was refused, and facts about it for a log line. errors.Is(err,
// ErrExpired) and the like hold for it. Only the Reason's fixed
// description goes on the wire; Error, which holds the facts, is for the
// operator, and its text may change.
//
// The facts are read from a token whose signature verified, so they are
// the issuer's words, never an attacker's. Each is set only for the
// reasons named beside it.
type ValidationError struct {
	// Reason is one of this package's Err* values.
	Reason error

	Expiry    time.Time // ErrExpired: the token's "exp"
	NotBefore time.Time // ErrNotYetValid: its "nbf"
	IssuedAt  time.Time // ErrIssuedInFuture: its "iat"
	Now       time.Time // the time reasons: the validator's clock, before leeway

	Audience []string // ErrAudience: the "aud" it names
}

func (e *ValidationError) Error() string {
	if e.Reason == nil {
		return genericWire
	}
	const layout = time.RFC3339
	switch e.Reason {
	case ErrExpired:
		return fmt.Sprintf("%v: exp %s, now %s", e.Reason, e.Expiry.UTC().Format(layout), e.Now.UTC().Format(layout))
	case ErrNotYetValid:
		return fmt.Sprintf("%v: nbf %s, now %s", e.Reason, e.NotBefore.UTC().Format(layout), e.Now.UTC().Format(layout))
	case ErrIssuedInFuture:
		return fmt.Sprintf("%v: iat %s, now %s", e.Reason, e.IssuedAt.UTC().Format(layout), e.Now.UTC().Format(layout))
	case ErrAudience:
		return fmt.Sprintf("%v: aud [%s]", e.Reason, quoteAll(e.Audience))
	}
	return e.Reason.Error()
}

// Unwrap returns the Reason.
func (e *ValidationError) Unwrap() error { return e.Reason }

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

// refused wraps a reason without facts.
func refused(reason error) error { return &ValidationError{Reason: reason} }
