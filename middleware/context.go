package middleware

import (
	"context"
	"net/http"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/oauthwire"
)

type stateKey struct{}

// state is what RequireBearer (or SCIMAuth, for an identity-service
// token) leaves in the request context for RequireScope and the handler.
type state struct {
	claims *accesstoken.Claims
	resp   *responder
}

// ClaimsFrom returns the validated claims that RequireBearer or SCIMAuth
// (with identity-service tokens enabled) put in the request context.
func ClaimsFrom(ctx context.Context) (*accesstoken.Claims, bool) {
	s, ok := stateFrom(ctx)
	if !ok {
		return nil, false
	}
	return s.claims, true
}

// defaultResponder answers for claims put in a context by ContextWithClaims.
var defaultResponder = &responder{realm: oauthwire.Realm, scheme: "Bearer"}

// ContextWithClaims returns a copy of ctx that carries c as RequireBearer
// leaves validated claims: ClaimsFrom finds c, and a RequireScope after it
// checks c's scopes (answering, when it refuses, with the realm "idsauth"). It is
// for testing a handler without a token (see idsauthtest.WithClaims), and
// for middleware of your own that authenticates some other way. c must be
// claims you trust: nothing here checks them. A nil c is not stored.
func ContextWithClaims(ctx context.Context, c *accesstoken.Claims) context.Context {
	if c == nil {
		return ctx
	}
	return &stateCtx{Context: ctx, st: state{claims: c, resp: defaultResponder}}
}

// stateFrom returns the state RequireBearer left, if any.
func stateFrom(ctx context.Context) (*state, bool) {
	s, ok := ctx.Value(stateKey{}).(*state)
	if !ok || s.claims == nil {
		return nil, false
	}
	return s, true
}

func withState(r *http.Request, c *accesstoken.Claims, o *responder) *http.Request {
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
