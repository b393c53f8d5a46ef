package middleware

import (
	"errors"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/bearer"
)

// This package's own reasons to refuse a request, beside accesstoken's
// (a *accesstoken.ValidationError): the reject hook gets them, and
// ReasonCode names each.
var (
	errNoToken           = bearer.ErrMissing // "no bearer token"
	errMultipleHeaders   = bearer.ErrMultipleHeaders
	errSpaceInToken      = bearer.ErrSpaceInToken
	errInsufficientScope = errors.New("token lacks the scope this API requires")
	// errNoClaims: a TokenValidator returned neither claims nor an error,
	// a bug in that validator. The request is refused (401 invalid_token,
	// described on the wire only as "token invalid"), never admitted.
	errNoClaims = errors.New("token validator returned no claims and no error")
)

// DPoP failures, given to the reject hook (codes dpop_proof, dpop_nonce,
// dpop_key; see ReasonCode).
var (
	// errDPoPProof: the DPoP proof is missing, not one, malformed, or
	// fails a check of RFC 9449 §4.3 (its signature, htm, htu, iat, ath),
	// or was used before. 401 invalid_dpop_proof.
	errDPoPProof = errors.New("invalid DPoP proof")
	// errDPoPNonce: the proof lacks the current nonce. 401
	// use_dpop_nonce, with the nonce in DPoP-Nonce.
	errDPoPNonce = errors.New("DPoP proof lacks the nonce")
	// errDPoPKey: the proof is by another key than the token is bound
	// to. 401 invalid_dpop_proof, described as every other refused proof
	// is: "invalid DPoP proof: key is not the token's".
	errDPoPKey = errors.New("DPoP proof key is not the token's")
)

// dpopFailure is an errDPoPProof with what went wrong: why is fixed text,
// fit for error_description (never the proof's or the token's content);
// err, when set, is its cause, for the log alone.
type dpopFailure struct {
	why string
	err error
}

func proofFailure(why string, err error) error { return &dpopFailure{why: why, err: err} }

func (f *dpopFailure) Error() string {
	if f.err != nil {
		return "invalid DPoP proof: " + f.why + ": " + f.err.Error()
	}
	return "invalid DPoP proof: " + f.why
}
func (f *dpopFailure) Is(target error) bool { return target == errDPoPProof }
func (f *dpopFailure) Unwrap() error        { return f.err }

// ErrSCIMToken is the reject hook's reason for every SCIM 401: a missing or
// malformed Authorization header, a wrong token and an unknown tenant are
// one case on purpose, so that tenants cannot be probed.
var ErrSCIMToken = errors.New("the authorization header is invalid or missing")

// ErrSCIMTooManyFailures is the reject hook's reason for a SCIM 429: the
// address failed too often.
var ErrSCIMTooManyFailures = errors.New("too many failed attempts")

// reasons is the one table of what this package says about a refusal, by
// its code: on the wire (error_description) and in a log line. The codes
// are accesstoken's (a ValidationError's Code) and this package's own
// reasons'. Clients may match the wire text and dashboards the code, so,
// as net/http says of MaxBytesError, neither can be changed; the Go text
// of the errors can. Of this package's own reasons, the first row that
// errors.Is matches wins, so a narrower error comes before a wider one.
var reasons = []struct {
	err  error  // this package's own reason; nil for accesstoken's
	code string // observe.Event's Reason: fixed, snake case, unique
	wire string // error_description; "" for a reason with no OAuth error body
	log  string // "" means wire
}{
	{nil, "too_large", "token is too large", ""},
	{nil, "malformed", "token is malformed", ""},
	{nil, "algorithm", "token signing algorithm not allowed", ""},
	{nil, "critical_header", "token has critical header parameters that are not supported", ""},
	{nil, "type", "token type is not an access token", ""},
	{nil, "ambiguous_key", "token names no signing key (kid) and more than two fit it", ""},
	{nil, "unknown_key", "unknown signing key", ""},
	{nil, "keys_unavailable", "signing keys unavailable", ""},
	{nil, "signature", "signature invalid", ""},
	{nil, "expired", "token expired", ""},
	{nil, "not_yet_valid", "token not valid yet", ""},
	{nil, "issued_in_future", "token issued in the future", ""},
	{nil, "missing_claim", "token lacks a required claim", ""},
	{nil, "issuer", "token issuer not accepted", ""},
	{nil, "audience", "token audience not accepted", ""},
	{nil, "scope_name", "token scope claim holds a scope name with whitespace in it", ""},
	{nil, "scope_claim", "token scope claim is neither a string nor an array of strings", ""},
	{nil, "bound_token", "token is bound to a key", ""},
	{nil, "not_bound", "token is not bound to a key", ""},
	{nil, "wrong_certificate", "token is bound to another client certificate", ""},
	{nil, "inactive", "token is not active", ""},
	{nil, "introspection_unavailable", "token could not be checked", "token introspection unavailable"},
	{errDPoPKey, "dpop_key", "invalid DPoP proof: key is not the token's", ""},
	{errDPoPNonce, "dpop_nonce", "DPoP proof lacks the nonce", ""},
	{errDPoPProof, "dpop_proof", "invalid DPoP proof", ""},
	// Refusals that are not a failed validation.
	{errNoToken, "no_token", "", "no bearer token"},
	{errMultipleHeaders, "multiple_headers", "more than one Authorization header", ""},
	{errSpaceInToken, "space_in_token", "bearer token contains a space", ""},
	{errInsufficientScope, "insufficient_scope", "token lacks the scope this API requires", ""},
	{errNoClaims, "no_claims", genericWire, "token validator returned no claims and no error"},
	{ErrSCIMToken, "scim_token", "", "the authorization header is invalid or missing"},
	{ErrSCIMTooManyFailures, "too_many_failures", "", "too many failed attempts"},
}

// genericWire describes an error that is none of ours (from a
// TokenValidator the user wrote): its message could hold anything.
const genericWire = "token invalid"

// reasonRow returns the table's row for err, or -1.
func reasonRow(err error) int {
	var ve *accesstoken.ValidationError
	if errors.As(err, &ve) {
		for i, r := range reasons {
			if r.err == nil && r.code == ve.Code {
				return i
			}
		}
		return -1
	}
	for i, r := range reasons {
		if r.err != nil && errors.Is(err, r.err) {
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

// ReasonCode returns the fixed code of a reason to refuse a request, as
// the reject hook (BearerConfig.OnReject, SCIMConfig.OnReject) gets it:
// what an observe.Event's Reason holds, fit for a metric label. A
// *accesstoken.ValidationError's is its Code; this package's own reasons
// are no_token, multiple_headers, space_in_token, insufficient_scope,
// no_claims, dpop_proof, dpop_nonce, dpop_key, scim_token and
// too_many_failures. Any other error, such as one of a TokenValidator of
// your own, is "other". The codes are stable.
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
