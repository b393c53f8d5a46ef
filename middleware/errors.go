package middleware

import (
	"errors"

	"github.com/idsauth/idsauth/accesstoken"
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
	{accesstoken.ErrTooLarge, "too_large", "token is too large", ""},
	{accesstoken.ErrMalformed, "malformed", "token is malformed", ""},
	{accesstoken.ErrAlgorithm, "algorithm", "token signing algorithm not allowed", ""},
	{accesstoken.ErrCritical, "critical_header", "token has critical header parameters that are not supported", ""},
	{accesstoken.ErrType, "type", "token type is not an access token", ""},
	{accesstoken.ErrAmbiguousKey, "ambiguous_key", "token names no signing key (kid) and more than two fit it", ""},
	{accesstoken.ErrUnknownKey, "unknown_key", "unknown signing key", ""},
	{accesstoken.ErrKeysUnavailable, "keys_unavailable", "signing keys unavailable", ""},
	{accesstoken.ErrSignature, "signature", "signature invalid", ""},
	{accesstoken.ErrExpired, "expired", "token expired", ""},
	{accesstoken.ErrNotYetValid, "not_yet_valid", "token not valid yet", ""},
	{accesstoken.ErrIssuedInFuture, "issued_in_future", "token issued in the future", ""},
	{accesstoken.ErrMissingClaim, "missing_claim", "token lacks a required claim", ""},
	{accesstoken.ErrIssuer, "issuer", "token issuer not accepted", ""},
	{accesstoken.ErrAudience, "audience", "token audience not accepted", ""},
	{accesstoken.ErrScopeName, "scope_name", "token scope claim holds a scope name with whitespace in it", ""},
	{accesstoken.ErrScopeClaim, "scope_claim", "token scope claim is neither a string nor an array of strings", ""},
	{accesstoken.ErrBoundToken, "bound_token", "token is bound to a key", ""},
	{accesstoken.ErrInactive, "inactive", "token is not active", ""},
	{ErrDPoPKey, "dpop_key", "invalid DPoP proof: key is not the token's", ""},
	{ErrDPoPNonce, "dpop_nonce", "DPoP proof lacks the nonce", ""},
	{ErrDPoPProof, "dpop_proof", "invalid DPoP proof", ""},
	{ErrUnboundToken, "not_bound", "token is not bound to a key", ""},
	{accesstoken.ErrIntrospectionUnavailable, "introspection_unavailable", "token could not be checked", "token introspection unavailable"},
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
