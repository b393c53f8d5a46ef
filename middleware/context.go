package middleware

import (
	"context"
	"net/http"
)

type stateKey struct{}

// state is what RequireBearer (or SCIMAuth, for an identity-service
// token) leaves in the request context for RequireScope and the handler.
type state struct {
	claims *Claims
	resp   *responder
}

// ClaimsFrom returns the validated claims that RequireBearer or SCIMAuth
// (with identity-service tokens enabled) put in the request context.
func ClaimsFrom(ctx context.Context) (*Claims, bool) {
	s, ok := stateFrom(ctx)
	if !ok {
		return nil, false
	}
	return s.claims, true
}

// stateFrom returns the state RequireBearer left, if any.
func stateFrom(ctx context.Context) (*state, bool) {
	s, ok := ctx.Value(stateKey{}).(*state)
	if !ok || s.claims == nil {
		return nil, false
	}
	return s, true
}

func withState(r *http.Request, c *Claims, o *responder) *http.Request {
	return r.WithContext(&stateCtx{Context: r.Context(), st: state{claims: c, resp: o}})
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
