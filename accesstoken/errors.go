package accesstoken

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

// codes are the fixed codes of the reasons of this package: an
// observe.Event's Reason. Dashboards may match them, so, as net/http says
// of MaxBytesError, they cannot be changed; the Go text of the errors can.
// The first row that errors.Is matches wins, so a narrower error comes
// before a wider one.
var codes = []struct {
	err  error
	code string // fixed, snake case, unique
}{
	{ErrTooLarge, "too_large"},
	{ErrMalformed, "malformed"},
	{ErrAlgorithm, "algorithm"},
	{ErrCritical, "critical_header"},
	{ErrType, "type"},
	{ErrAmbiguousKey, "ambiguous_key"},
	{ErrUnknownKey, "unknown_key"},
	{ErrKeysUnavailable, "keys_unavailable"},
	{ErrSignature, "signature"},
	{ErrExpired, "expired"},
	{ErrNotYetValid, "not_yet_valid"},
	{ErrIssuedInFuture, "issued_in_future"},
	{ErrMissingClaim, "missing_claim"},
	{ErrIssuer, "issuer"},
	{ErrAudience, "audience"},
	{ErrScopeName, "scope_name"},
	{ErrScopeClaim, "scope_claim"},
	{ErrBoundToken, "bound_token"},
	{ErrInactive, "inactive"},
	{ErrIntrospectionUnavailable, "introspection_unavailable"},
}

// reasonCode returns the code of err, or "other".
func reasonCode(err error) string {
	for _, r := range codes {
		if errors.Is(err, r.err) {
			return r.code
		}
	}
	return "other"
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
		return "token invalid"
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
