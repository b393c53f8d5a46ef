package middleware

import (
	"errors"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/internal/reason"
)

// This package's own reasons to refuse a request, beside accesstoken's
// (a *accesstoken.ValidationError): the reject hook gets them, and
// accesstoken.ReasonCode names each by its code.
var (
	errNoToken           = bearer.ErrMissing // no_token
	errMultipleHeaders   = bearer.ErrMultipleHeaders
	errSpaceInToken      = bearer.ErrSpaceInToken
	errInsufficientScope = reason.New("insufficient_scope", "token lacks the scope this API requires")
)

// DPoP failures, given to the reject hook (codes dpop_proof, dpop_nonce,
// dpop_key).
var (
	// errDPoPProof: the DPoP proof is missing, not one, malformed, or
	// fails a check of RFC 9449 §4.3 (its signature, htm, htu, iat, ath),
	// or was used before. 401 invalid_dpop_proof.
	errDPoPProof = reason.New("dpop_proof", "invalid DPoP proof")
	// errDPoPNonce: the proof lacks the current nonce. 401
	// use_dpop_nonce, with the nonce in DPoP-Nonce.
	errDPoPNonce = reason.New("dpop_nonce", "DPoP proof lacks the nonce")
	// errDPoPKey: the proof is by another key than the token is bound
	// to. 401 invalid_dpop_proof, described as every other refused proof
	// is: "invalid DPoP proof: key is not the token's".
	errDPoPKey = reason.New("dpop_key", "DPoP proof key is not the token's")
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

// Unwrap returns errDPoPProof, and the cause when there is one.
func (f *dpopFailure) Unwrap() []error {
	if f.err != nil {
		return []error{errDPoPProof, f.err}
	}
	return []error{errDPoPProof}
}

// SCIMAuth's reasons, given to the reject hook (codes scim_token and
// too_many_failures).
var (
	// errSCIMToken: every SCIM 401. A missing or malformed Authorization
	// header, a wrong token and an unknown tenant are one case on
	// purpose, so that tenants cannot be probed.
	errSCIMToken = reason.New("scim_token", "the authorization header is invalid or missing")
	// errSCIMTooManyFailures: a SCIM 429, the address failed too often.
	errSCIMTooManyFailures = reason.New("too_many_failures", "too many failed attempts")
)

// reasons is the one table of what this package says about a refusal, by
// its code (accesstoken.ReasonCode): on the wire (error_description) and
// in a log line. Clients may match the wire text and dashboards the code,
// so, as net/http says of MaxBytesError, neither can be changed; the Go
// text of the errors can.
var reasons = map[string]struct {
	wire string // error_description; "" for a reason with no OAuth error body
	log  string // "" means wire
}{
	"too_large":                 {"token is too large", ""},
	"malformed":                 {"token is malformed", ""},
	"algorithm":                 {"token signing algorithm not allowed", ""},
	"critical_header":           {"token has critical header parameters that are not supported", ""},
	"type":                      {"token type is not an access token", ""},
	"ambiguous_key":             {"token names no signing key (kid) and more than two fit it", ""},
	"unknown_key":               {"unknown signing key", ""},
	"keys_unavailable":          {"signing keys unavailable", ""},
	"signature":                 {"signature invalid", ""},
	"expired":                   {"token expired", ""},
	"not_yet_valid":             {"token not valid yet", ""},
	"issued_in_future":          {"token issued in the future", ""},
	"missing_claim":             {"token lacks a required claim", ""},
	"issuer":                    {"token issuer not accepted", ""},
	"audience":                  {"token audience not accepted", ""},
	"scope_name":                {"token scope claim holds a scope name with whitespace in it", ""},
	"scope_claim":               {"token scope claim is neither a string nor an array of strings", ""},
	"bound_token":               {"token is bound to a key", ""},
	"not_bound":                 {"token is not bound to a key", ""},
	"wrong_certificate":         {"token is bound to another client certificate", ""},
	"inactive":                  {"token is not active", ""},
	"introspection_unavailable": {"token could not be checked", "token introspection unavailable"},
	"no_claims":                 {genericWire, "token validator returned no claims and no error"},
	"dpop_key":                  {"invalid DPoP proof: key is not the token's", ""},
	"dpop_nonce":                {"DPoP proof lacks the nonce", ""},
	"dpop_proof":                {"invalid DPoP proof", ""},
	// Refusals that are not a failed validation.
	"no_token":           {"", "no bearer token"},
	"multiple_headers":   {"more than one Authorization header", ""},
	"space_in_token":     {"bearer token contains a space", ""},
	"insufficient_scope": {"token lacks the scope this API requires", ""},
	"scim_token":         {"", "the authorization header is invalid or missing"},
	"too_many_failures":  {"", "too many failed attempts"},
	"gate_assertion":     {"", "the gate's assertion is missing or invalid"},
}

// genericWire describes an error that is none of ours (from a
// TokenValidator the user wrote): its message could hold anything.
const genericWire = "token invalid"

// describe returns the error_description for err.
func describe(err error) string {
	var df *dpopFailure
	if errors.As(err, &df) {
		return "invalid DPoP proof: " + df.why // fixed text: which check failed
	}
	if r, ok := reasons[accesstoken.ReasonCode(err)]; ok && r.wire != "" {
		return r.wire
	}
	return genericWire
}

// logReason returns the text of a rejection reason fit for a log line.
func logReason(err error) string {
	r, ok := reasons[accesstoken.ReasonCode(err)]
	switch {
	case !ok:
		return genericWire
	case r.log != "":
		return r.log
	}
	return r.wire
}
