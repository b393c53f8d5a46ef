package accesstoken

import "context"

// Presentation is how a request presented its access token, beside the
// token itself, which decides the binding the token needs (RFC 7800's
// "cnf"). The zero value is a plain bearer token (RFC 6750). Validate
// reads it from the request's context (NewContext); the caller that
// checks the proof, such as middleware.RequireBearer, asks Check.
type Presentation struct {
	// DPoP says the token came as "Authorization: DPoP" with a proof
	// (RFC 9449 §7): the token must be bound to a DPoP key (cnf.jkt), and
	// the caller checks, once Validate has accepted it, that the proof is
	// by that key (Claims.JKT).
	DPoP bool
}

// Check returns why c may not be used as presented so, or nil: presented
// with DPoP, c must be bound to a DPoP key ("not_bound"); presented as a
// bearer token, it must not be, since the proof of that key is missing
// ("bound_token"). The refusal is a *ValidationError. A Validator also
// refuses a bearer token bound to a key of any kind, unless
// Config.AllowBoundTokens; Check is the rule that holds whatever the
// validator, where DPoP is accepted.
func (p Presentation) Check(c *Claims) error {
	switch {
	case p.DPoP && c.JKT == "":
		return refused(errUnboundToken)
	case !p.DPoP && c.JKT != "":
		return refused(errBoundToken)
	}
	return nil
}

type presentationKey struct{}

// NewContext returns a copy of ctx that tells Validate how the request
// presented its token.
func (p Presentation) NewContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, presentationKey{}, p)
}

// presentationOf returns how the request of ctx presented its token: as
// a bearer token unless NewContext says otherwise.
func presentationOf(ctx context.Context) Presentation {
	p, _ := ctx.Value(presentationKey{}).(Presentation)
	return p
}
