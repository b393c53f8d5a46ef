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
	ErrTooLarge        = errors.New("token is too large")
	ErrMalformed       = errors.New("token is malformed")
	ErrAlgorithm       = keyerr.ErrAlgorithm
	ErrCritical        = errors.New("token has critical header parameters that are not supported")
	ErrType            = errors.New("token type is not an access token")
	ErrUnknownKey      = keyerr.ErrUnknownKey
	ErrKeysUnavailable = keyerr.ErrKeysUnavailable
	ErrSignature       = errors.New("signature invalid")
	ErrExpired         = errors.New("token expired")
	ErrNotYetValid     = errors.New("token not valid yet")
	ErrIssuedInFuture  = errors.New("token issued in the future")
	ErrMissingClaim    = errors.New("token lacks a required claim")
	ErrIssuer          = errors.New("token issuer not accepted")
	ErrAudience        = errors.New("token audience not accepted")
	ErrScopeClaim      = scope.ErrInvalidClaim // neither a string nor an array of strings
	ErrScopeName       = scope.ErrInvalidName  // a name with whitespace in it; errors.Is(ErrScopeName, ErrScopeClaim)
	ErrBoundToken      = errors.New("token is bound to a key")
)

// reasons is the one table of what this package says about a refusal: on
// the wire (error_description) and in a log line. Clients may match the
// wire text, so, as net/http says of MaxBytesError, it cannot be changed;
// the Go text of the errors can. The first row that errors.Is matches
// wins, so a narrower error comes before a wider one.
var reasons = []struct {
	err  error
	wire string // error_description; "" for a reason with no OAuth error body
	log  string // "" means wire
}{
	{ErrTooLarge, "token is too large", ""},
	{ErrMalformed, "token is malformed", ""},
	{ErrAlgorithm, "token signing algorithm not allowed", ""},
	{ErrCritical, "token has critical header parameters that are not supported", ""},
	{ErrType, "token type is not an access token", ""},
	{ErrUnknownKey, "unknown signing key", ""},
	{ErrKeysUnavailable, "signing keys unavailable", ""},
	{ErrSignature, "signature invalid", ""},
	{ErrExpired, "token expired", ""},
	{ErrNotYetValid, "token not valid yet", ""},
	{ErrIssuedInFuture, "token issued in the future", ""},
	{ErrMissingClaim, "token lacks a required claim", ""},
	{ErrIssuer, "token issuer not accepted", ""},
	{ErrAudience, "token audience not accepted", ""},
	{ErrScopeName, "token scope claim holds a scope name with whitespace in it", ""},
	{ErrScopeClaim, "token scope claim is neither a string nor an array of strings", ""},
	{ErrBoundToken, "token is bound to a key", ""},
	// Refusals that are not a failed validation.
	{ErrNoToken, "", "no bearer token"},
	{ErrMultipleHeaders, "more than one Authorization header", ""},
	{ErrSpaceInToken, "bearer token contains a space", ""},
	{ErrInsufficientScope, "token lacks the scope this API requires", ""},
	{ErrNoClaims, genericWire, "token validator returned no claims and no error"},
	{ErrSCIMToken, "", "the authorization header is invalid or missing"},
	{ErrSCIMTooManyFailures, "", "too many failed attempts"},
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
	if i := reasonRow(err); i >= 0 && reasons[i].wire != "" {
		return reasons[i].wire
	}
	return genericWire
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
	Issuer    string    // ErrIssuer: the "iss" the token names, once its signature verified
	Audience  []string  // ErrAudience: the "aud" it names
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
	case ErrIssuer:
		if e.Issuer == "" { // none, or one that never verified (see TrustedIssuer)
			break
		}
		return fmt.Sprintf("%v: iss %q", e.Reason, e.Issuer)
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
