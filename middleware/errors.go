package middleware

import (
	"errors"

	"github.com/idsauth/idsauth/internal/keyerr"
)

// The reasons a token fails validation. [Validator.Validate] returns one of
// them (test with errors.Is); its text is what error_description says, so
// it is written for people and never holds any part of the token.
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
	ErrScopeClaim      = errors.New("token scope claim is neither a string nor an array of strings")
	ErrScopeName       = errors.New("token scope claim holds a scope name with whitespace in it")
	ErrBoundToken      = errors.New("token is bound to a key")
)

// reasons lists the sentinels above, for turning any error into a safe
// description.
var reasons = []error{
	ErrTooLarge, ErrMalformed, ErrAlgorithm, ErrCritical, ErrType, ErrUnknownKey,
	ErrKeysUnavailable, ErrSignature, ErrExpired, ErrNotYetValid,
	ErrIssuedInFuture, ErrMissingClaim, ErrIssuer, ErrAudience, ErrScopeClaim,
	ErrScopeName, ErrBoundToken,
}

// describe returns the error_description for a validation error. An error
// that is none of ours (from a TokenValidator the user wrote) gets a
// generic text, since its message could hold anything.
func describe(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return "token invalid"
}

// logReason is the text of a rejection reason fit for a log line: ours as
// they are, anything else (from a TokenValidator the user wrote, whose
// message could hold anything) as a generic text.
func logReason(err error) string {
	switch {
	case errors.Is(err, ErrNoToken), errors.Is(err, ErrMultipleHeaders),
		errors.Is(err, ErrSpaceInToken), errors.Is(err, ErrInsufficientScope),
		errors.Is(err, ErrSCIMToken), errors.Is(err, ErrSCIMTooManyFailures), errors.Is(err, ErrNoClaims):
		return err.Error()
	}
	return describe(err)
}
