package rpcauth

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/bearer"
	"github.com/idsauth/idsauth/scope"
)

// Kind is what a refusal is, as both protocols name their codes.
type Kind int

const (
	// NoToken: no authorization value, another scheme, or "Bearer" with
	// nothing after it (HTTP: 401 with a bare challenge).
	NoToken Kind = iota + 1
	// BadRequest: two authorization values, or a space inside the token
	// (HTTP: 400 invalid_request).
	BadRequest
	// InvalidToken: a token that fails validation (HTTP: 401
	// invalid_token).
	InvalidToken
	// InsufficientScope: a valid token without the method's scope, or a
	// method the configuration names nowhere (HTTP: 403
	// insufficient_scope).
	InsufficientScope
)

// String is the code's name in gRPC's and Connect's status lists.
func (k Kind) String() string {
	switch k {
	case NoToken, InvalidToken:
		return "unauthenticated"
	case BadRequest:
		return "invalid_argument"
	case InsufficientScope:
		return "permission_denied"
	}
	return "unknown"
}

// The messages of the refusals. People and tools read them, so, like the
// HTTP side's descriptions, they never change; none holds any part of a
// token. A client decides by a refusal's ErrorInfo (see IsInvalidToken),
// never by its message.
const (
	NoTokenMessage          = "no bearer token"
	InvalidTokenPrefix      = "invalid_token: "
	invalidRequestPrefix    = "invalid_request: "
	insufficientScopePrefix = "insufficient_scope: "
	NotConfiguredMessage    = insufficientScopePrefix + "no scope grants this method"
)

// Refusal is a call refused: its code, its fixed message, and the reason
// code for a log line.
type Refusal struct {
	Kind    Kind
	Message string
	Reason  string
	scope   string // InsufficientScope: the scopes the method needs, space-separated
}

// Challenge is the WWW-Authenticate value of the refusal, for a protocol
// whose refusals are HTTP answers (Connect's 401, 403 and 400; RFC 7235
// §3.1 wants one on every 401): a bare Bearer challenge for no token,
// with error= and the reason for the others (RFC 6750 §3), and scope=
// for the scope refusal. Reasons and scopes hold no quote or backslash.
func (r *Refusal) Challenge(realm string) string {
	c := `Bearer realm="` + realm + `"`
	code, description, scope := r.params()
	if code != "" {
		c += `, error="` + code + `"`
	}
	if description != "" {
		c += `, error_description="` + description + `"`
	}
	if scope != "" {
		c += `, scope="` + scope + `"`
	}
	return c
}

// Domain is the domain of the refusals' ErrorInfo (see Info).
const Domain = "idsauth"

// Info is the refusal as a google.rpc.ErrorInfo detail states it
// (AIP-193), under Domain, for a protocol that cannot carry the
// challenge (gRPC: Go's HTTP/2 server drops a WWW-Authenticate trailer):
// the reason code in upper snake case ("EXPIRED", "NO_TOKEN"), and the
// challenge's parameters, error, error_description and scope, as its
// metadata (nil for no token, whose challenge has none).
func (r *Refusal) Info() (reason string, metadata map[string]string) {
	code, description, scope := r.params()
	if code != "" {
		metadata = map[string]string{"error": code}
		if description != "" {
			metadata["error_description"] = description
		}
		if scope != "" {
			metadata["scope"] = scope
		}
	}
	return strings.ToUpper(r.Reason), metadata
}

// params are the challenge's parameters (RFC 6750 §3) beside the realm:
// none for no token.
func (r *Refusal) params() (code, description, scope string) {
	switch r.Kind {
	case BadRequest:
		return "invalid_request", r.Reason, ""
	case InvalidToken:
		return "invalid_token", r.Reason, ""
	case InsufficientScope:
		return "insufficient_scope", "", r.scope
	}
	return "", "", ""
}

var (
	noToken       = &Refusal{Kind: NoToken, Message: NoTokenMessage, Reason: "no_token"}
	notConfigured = &Refusal{Kind: InsufficientScope, Message: NotConfiguredMessage, Reason: "not_configured"}
)

// IsInvalidToken reports whether a refusal's google.rpc.ErrorInfo detail,
// its domain and metadata (see Refusal.Info), says the token failed
// validation: the answer of an Unauthenticated status that a client
// retries once with a new token.
func IsInvalidToken(domain string, metadata map[string]string) bool {
	return domain == Domain && metadata["error"] == "invalid_token"
}

// Validator is accesstoken's decision as a module adapts it: the one
// place where that package's names are used.
type Validator interface {
	// Validate checks token and returns the context the handler gets
	// (carrying the claims, for accesstoken.ClaimsFrom), the token's
	// scopes and its expiry (its "exp", at which a stream admitted with
	// it ends; zero for none); or the error of the refusal.
	Validate(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error)
	// Reason returns the fixed code of a refusal's error, for its
	// message and the log: "expired", "multiple_headers", ...
	Reason(err error) string
}

// Admit decides a call of method whose authorization values are authz,
// in the contract's order: a public method passes untouched; then the
// token's form, its validation, the method's scope. It returns the
// handler's context, or the refusal (logged when the policy has a
// logger).
func (p *Policy) Admit(ctx context.Context, method string, authz []string, v Validator) (context.Context, *Refusal) {
	ctx, _, ref := p.AdmitUntil(ctx, method, authz, v)
	return ctx, ref
}

// AdmitUntil is Admit that also returns until when the admission
// holds: the token's expiry, at which a stream must end (Expired, Ended);
// zero for a public method or a token without expiry.
func (p *Policy) AdmitUntil(ctx context.Context, method string, authz []string, v Validator) (context.Context, time.Time, *Refusal) {
	r := p.lookup(method)
	if r != nil && r.public {
		return ctx, time.Time{}, nil
	}
	ctx, until, ref := p.admit(ctx, r, authz, v)
	if ref != nil {
		p.log(ctx, "idsauth: call refused", method, ref)
	}
	return ctx, until, ref
}

// Expired is the refusal that ends a stream still open at its token's
// expiry: Unauthenticated "invalid_token: expired", as the validator
// would now refuse the token.
func Expired() *Refusal { return expired }

var expired = &Refusal{Kind: InvalidToken, Message: InvalidTokenPrefix + "expired", Reason: "expired"}

// Ended logs, as "idsauth: stream ended", a stream of method that Expired
// ended.
func (p *Policy) Ended(ctx context.Context, method string) {
	p.log(ctx, "idsauth: stream ended", method, expired)
}

func (p *Policy) log(ctx context.Context, msg, method string, ref *Refusal) {
	if p.logger != nil {
		p.logger.LogAttrs(ctx, slog.LevelInfo, msg,
			slog.String("method", method), slog.String("code", ref.Kind.String()), slog.String("reason", ref.Reason))
	}
}

func (p *Policy) admit(ctx context.Context, r *rule, authz []string, v Validator) (context.Context, time.Time, *Refusal) {
	tok, _, err := bearer.FromValues(authz, false)
	switch {
	case errors.Is(err, bearer.ErrMissing):
		return ctx, time.Time{}, noToken
	case err != nil:
		reason := v.Reason(err)
		return ctx, time.Time{}, &Refusal{Kind: BadRequest, Message: invalidRequestPrefix + reason, Reason: reason}
	}
	next, scopes, until, err := v.Validate(ctx, tok)
	if err != nil {
		reason := v.Reason(err)
		return ctx, time.Time{}, &Refusal{Kind: InvalidToken, Message: InvalidTokenPrefix + reason, Reason: reason}
	}
	switch {
	case r == nil:
		return ctx, time.Time{}, notConfigured
	case !scopes.HasAny(r.scopes...):
		return ctx, time.Time{}, r.refusal
	}
	return next, until, nil
}
