// Package observe reports what idsauth does, as events, to an Observer:
// each token validation, rejected request, JWKS fetch, token request and
// SCIM authentication. It depends on nothing but the standard library, so
// that watching idsauth costs no telemetry dependency: the OpenTelemetry
// adapter is a module of its own (github.com/idsauth/idsauth/idsauthotel),
// and an Observer of a few lines can count into expvar or anything else.
//
// Every field of an Event takes a bounded set of values or a registered
// name (a client ID or tenant from the configuration): never a token, a
// secret, an unregistered client ID or tenant, an error_description or
// other free text. An Observer may thus turn each field into a metric
// label or a span attribute as it is.
//
// Who sends what: accesstoken.Validator (accesstoken.Config.Observer) sends
// ValidationSucceeded, ValidationFailed, KeysFetched and KeysFetchFailed;
// RequireBearer and the RequireScope after it (BearerConfig.Observer)
// send Rejected; SCIMAuth (SCIMConfig.Observer) sends SCIMAuthenticated
// and SCIMRefused; the issuer (issuer.WithObserver) sends TokenIssued and
// TokenRefused. Each is sent once per request, or once per fetch, after
// the work and on its goroutine.
package observe

import (
	"context"
	"time"
)

// Observer receives events. Observe runs on the goroutine that did the
// work, before the request goes on: it must be quick, must not block, and
// must be safe for concurrent use. ctx is the request's (for a background
// JWKS fetch, the fetch's), so a tracer finds the request's span in it.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Func is an Observer made of a function.
type Func func(ctx context.Context, e Event)

// Observe calls f.
func (f Func) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Multi returns an Observer that gives each event to every one of obs in
// turn. Nil entries are left out; with none left Multi returns nil, so
// that a sender that checks for nil does no work at all.
func Multi(obs ...Observer) Observer {
	var m multi
	for _, o := range obs {
		switch o := o.(type) {
		case nil:
		case multi:
			m = append(m, o...)
		default:
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return nil
	case 1:
		return m[0]
	}
	return m
}

type multi []Observer

func (m multi) Observe(ctx context.Context, e Event) {
	for _, o := range m {
		o.Observe(ctx, e)
	}
}

// Kind says what happened, and so which fields of an Event are set.
type Kind uint8

// The kinds of event, with the fields each sets besides Kind.
const (
	// ValidationSucceeded: a token passed the Validator. Cached, Duration.
	ValidationSucceeded Kind = iota + 1
	// ValidationFailed: a token failed the Validator. Reason, Duration.
	ValidationFailed
	// Rejected: RequireBearer or RequireScope refused a request. Reason,
	// Status.
	Rejected
	// KeysFetched: the Validator fetched the issuer's JWKS. Keys.
	KeysFetched
	// KeysFetchFailed: a JWKS fetch failed. Reason, why (see Event.Reason).
	KeysFetchFailed
	// TokenIssued: the token endpoint issued a token. ClientID, Scopes,
	// Credential when a workload's token authenticated the client,
	// Duration.
	TokenIssued
	// TokenRefused: the token endpoint refused a request. Reason (its
	// OAuth error code, such as "invalid_client" or "slow_down"), Status,
	// ClientID when the request named a registered client, Limit when a
	// failure limit refused it, Duration.
	TokenRefused
	// SCIMAuthenticated: SCIMAuth admitted a request. Tenant, when it is
	// registered.
	SCIMAuthenticated
	// SCIMRefused: SCIMAuth (or a RequireScope after it) refused a
	// request. Reason, Status, Limit when a failure limit refused it, and
	// Tenant when the request named a registered one and got as far as
	// the tenant's check (not for a missing or over-long token).
	SCIMRefused
)

var kindNames = [...]string{
	ValidationSucceeded: "validation_succeeded",
	ValidationFailed:    "validation_failed",
	Rejected:            "rejected",
	KeysFetched:         "keys_fetched",
	KeysFetchFailed:     "keys_fetch_failed",
	TokenIssued:         "token_issued",
	TokenRefused:        "token_refused",
	SCIMAuthenticated:   "scim_authenticated",
	SCIMRefused:         "scim_refused",
}

// String returns the kind's name in snake case, such as
// "validation_succeeded", or "unknown".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one thing idsauth did. Which fields are set depends on Kind;
// the others are zero. An Observer must not change Scopes, which may be
// shared.
type Event struct {
	Kind Kind

	// Reason is why a token or request failed: for ValidationFailed,
	// Rejected and SCIMRefused the code of the middleware's reasons
	// table (accesstoken.ReasonCode: "expired", "signature",
	// "no_token", "insufficient_scope", ..., "other" for an error of a
	// TokenValidator of your own); for TokenRefused the OAuth error code;
	// for KeysFetchFailed one of "timeout" (the fetch ran out of time),
	// "transport" (no answer: connection refused, DNS, TLS), "http_status"
	// (an answer other than 200), "invalid" (a 200 whose body is no JWKS
	// the validator reads) and, from the issuer, "stale" (no fetch of a
	// trusted issuer's or a client's keys succeeded within their grace:
	// they verify nothing until one does). The codes are fixed: fit for a
	// metric label.
	Reason string

	// Status is the HTTP status of the answer to a refused request.
	Status int

	// Cached reports a ValidationSucceeded answered from the cache of
	// verified tokens, without a signature check.
	Cached bool

	// Keys is how many keys a KeysFetched JWKS holds that the validator
	// could read.
	Keys int

	// ClientID is a registered client's ID; empty when the request named
	// none or one that is not registered.
	ClientID string

	// Scopes are the scopes a TokenIssued token grants.
	Scopes []string

	// Credential is the federated credential that authenticated the
	// client of a TokenIssued token (a workload's token of a trusted
	// issuer), as the issuer's configuration writes it: the issuer, a
	// space, the subject ("spiffe://example.org spiffe://example.org/web");
	// empty for any other authentication.
	Credential string

	// Tenant is a registered SCIM tenant; empty when the request named
	// none or one that is not registered.
	Tenant string

	// Limit is the failure budget (limit.Config) that refused a
	// TokenRefused or SCIMRefused request with 429: "address" (the client
	// address's), "client" (the client ID's, at the token endpoint) or
	// "tenant" (the tenant's, at SCIMAuth); empty otherwise.
	Limit string

	// Duration is how long the validation (ValidationSucceeded,
	// ValidationFailed) or the token request (TokenIssued, TokenRefused)
	// took, by the monotonic clock. The event is sent when it ends, so it
	// started Duration before: enough for a tracer to record a span
	// around it.
	Duration time.Duration
}
