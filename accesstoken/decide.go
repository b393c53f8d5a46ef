package accesstoken

import "context"

// TokenValidator decides whether an access token, presented as p, is
// good, and returns its claims. *Validator is the implementation; the
// transports (middleware.RequireBearer, grpcauth, connectauth) take the
// interface, so that a service can put its own in front of it (NewClaims
// builds the claims of one's own), and call it through Decide.
type TokenValidator interface {
	Validate(ctx context.Context, token string, p Presentation) (*Claims, error)
}

// Decide is what every transport does with a token presented as p: v
// validates it, and then the binding its claims ask for is checked,
// whatever v made of p, so that a validator of one's own cannot ignore a
// proof. Presented with DPoP, the token must be bound to a DPoP key
// ("not_bound"); bound to a certificate and presented with another, it
// is refused ("wrong_certificate"); where p.DPoPAccepted, a token bound
// to a key must come with its proof ("bound_token"). A validator that
// returns neither claims nor an error is refused ("no_claims"). These
// refusals are *ValidationErrors; v's own errors are returned as they
// are. A DPoP proof itself (its signature, htm, htu, jti) is the
// transport's to check, once Decide has accepted the token, against
// Claims.JKT.
func Decide(ctx context.Context, v TokenValidator, token string, p Presentation) (*Claims, error) {
	c, err := v.Validate(ctx, token, p)
	switch {
	case err != nil:
		return nil, err
	case c == nil:
		return nil, refused(errNoClaims) // a bug of v's: fail closed
	}
	if err := p.check(c, !p.DPoPAccepted); err != nil {
		return nil, refused(err)
	}
	return c, nil
}

type claimsKey struct{}

// ContextWithClaims returns a copy of ctx that carries c, as a transport
// leaves the claims of a token it admitted: ClaimsFrom finds c, and
// middleware.RequireScope checks its scopes (answering, when it refuses,
// with the realm "idsauth"). It is for testing a handler without a token
// (see idsauthtest.WithClaims), and for middleware of your own that
// authenticates some other way. c must be claims you trust: nothing here
// checks them. A nil c is not stored.
func ContextWithClaims(ctx context.Context, c *Claims) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, c)
}

// ClaimsFrom returns the claims of the token a transport admitted
// (middleware.RequireBearer, middleware.SCIMAuth with identity-service
// tokens, grpcauth, connectauth), or that ContextWithClaims put in ctx.
func ClaimsFrom(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok
}
