package accesstoken

import (
	"context"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// Presentation is how a request presented its access token, beside the
// token itself, which decides the binding the token needs (RFC 7800's
// "cnf"). The zero value is a plain bearer token (RFC 6750) over a
// connection without a client certificate. Validate reads it from the
// request's context (NewContext); the caller that checks the proof, such
// as middleware.RequireBearer, asks Check.
type Presentation struct {
	// DPoP says the token came as "Authorization: DPoP" with a proof
	// (RFC 9449 §7): the token must be bound to a DPoP key (cnf.jkt), and
	// the caller checks, once Validate has accepted it, that the proof is
	// by that key (Claims.JKT).
	DPoP bool
	// CertThumbprint is the SHA-256 thumbprint of the client certificate
	// the request came with over mutual TLS (RFC 8705 §3): the base64url,
	// without padding, of the SHA-256 of its DER, as "x5t#S256" writes
	// it. A token bound to a certificate (Claims.X5T) is accepted only
	// with this one, compared in constant time. Empty: the request
	// presented no certificate. The caller finds it where the request
	// came from: the TLS connection, or the header of a proxy it trusts
	// (middleware.RequireBearer does both).
	CertThumbprint string
}

// Check returns why c may not be used as presented so, or nil: presented
// with DPoP, c must be bound to a DPoP key ("not_bound"); bound to a
// certificate, it must come with that certificate ("wrong_certificate"
// for another, "bound_token" for none); bound to a DPoP key, or to what
// no rule here proves, it must not come as a plain bearer token
// ("bound_token"). The refusal is a *ValidationError. A Validator checks
// the same, except that with Config.AllowBoundTokens it admits a bound
// token presented without its proof (a certificate that is not the
// token's is refused whatever it allows); Check is the rule that holds
// whatever the validator.
func (p Presentation) Check(c *Claims) error {
	if err := p.check(c, false); err != nil {
		return refused(err)
	}
	return nil
}

// check is Check's rule, allowBearer the validator's AllowBoundTokens.
func (p Presentation) check(c *Claims, allowBearer bool) error {
	switch {
	case p.DPoP && c.JKT == "":
		return errUnboundToken
	case c.X5T != "" && p.CertThumbprint != "" && !clientcert.Equal(c.X5T, p.CertThumbprint):
		return errWrongCertificate
	case allowBearer:
		return nil
	case c.JKT != "" && !p.DPoP, c.X5T != "" && p.CertThumbprint == "":
		return errBoundToken // the proof of its key is missing
	case c.bound && c.JKT == "" && c.X5T == "" && !p.DPoP:
		return errBoundToken // bound by a confirmation method no rule here proves
	}
	return nil
}

type presentationKey struct{}

// NewContext returns a copy of ctx that tells Validate how the request
// presented its token.
func (p Presentation) NewContext(ctx context.Context) context.Context {
	return &presentationCtx{Context: ctx, p: p}
}

// presentationCtx carries a Presentation in one allocation, where
// context.WithValue and the Presentation boxed in its interface would
// take two: this is on the path of every DPoP or mutual TLS request.
type presentationCtx struct {
	context.Context
	p Presentation
}

func (c *presentationCtx) Value(key any) any {
	if _, ok := key.(presentationKey); ok {
		return &c.p
	}
	return c.Context.Value(key)
}

// presentationOf returns how the request of ctx presented its token: as
// a bearer token unless NewContext says otherwise.
func presentationOf(ctx context.Context) Presentation {
	if p, ok := ctx.Value(presentationKey{}).(*Presentation); ok {
		return *p
	}
	return Presentation{}
}
