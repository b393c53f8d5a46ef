package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// DefaultRealm is the realm of the WWW-Authenticate challenge when none is
// configured.
const DefaultRealm = "idsauth"

// RejectFunc is called on every rejected request with the answer's status
// and the reason: one of this package's Err* values, or an error of the
// bearer header's form. It never receives the token. Use it for metrics
// and audit logs.
type RejectFunc func(r *http.Request, status int, err error)

// Option configures RequireBearer and SCIMAuth.
type Option func(*options)

type options struct {
	realm    string
	onReject RejectFunc
	logger   *slog.Logger

	// SCIMAuth only.
	tenant      func(*http.Request) string
	idTokens    TokenValidator
	idTokenNeed []string
	scimLimits  SCIMLimits
}

func newOptions(realm string, opts []Option) *options {
	o := &options{realm: realm}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// WithRealm sets the realm of the WWW-Authenticate challenge.
func WithRealm(realm string) Option { return func(o *options) { o.realm = realm } }

// WithRejectHook sets a function called on every rejection.
func WithRejectHook(fn RejectFunc) Option { return func(o *options) { o.onReject = fn } }

// WithLogger logs every rejection at Info level: method, path (without the
// query), status and reason. Nothing is logged without it.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// reject reports a rejection to the hook and the logger.
func (o *options) reject(r *http.Request, status int, err error) {
	if o.onReject != nil {
		o.onReject(r, status, err)
	}
	if o.logger != nil {
		o.logger.LogAttrs(r.Context(), slog.LevelInfo, "idsauth: request rejected",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.String("reason", logReason(err)))
	}
}

type stateKey struct{}

// state is what RequireBearer leaves in the request context for
// RequireScope and the handler.
type state struct {
	claims *Claims
	opts   *options
}

// ClaimsFrom returns the validated claims that RequireBearer or SCIMAuth
// (with identity-service tokens enabled) put in the request context.
func ClaimsFrom(ctx context.Context) (*Claims, bool) {
	s, ok := ctx.Value(stateKey{}).(*state)
	if !ok || s.claims == nil {
		return nil, false
	}
	return s.claims, true
}

func withState(r *http.Request, c *Claims, o *options) *http.Request {
	return r.WithContext(&stateCtx{Context: r.Context(), st: state{claims: c, opts: o}})
}

// stateCtx carries the state in one allocation, where context.WithValue
// and a *state would take two: this is on every request's path.
type stateCtx struct {
	context.Context
	st state
}

func (c *stateCtx) Value(key any) any {
	if _, ok := key.(stateKey); ok {
		return &c.st
	}
	return c.Context.Value(key)
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
