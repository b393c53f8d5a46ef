package accesstoken

import "github.com/idsauth/idsauth/internal/clientcert"

// Presentation is how a request presented its access token, beside the
// token itself, which decides the binding the token needs (RFC 7800's
// "cnf"). The zero value is a plain bearer token (RFC 6750) over a
// connection without a client certificate, to a transport that takes no
// DPoP. A transport finds it in the request and passes it to Decide,
// which passes it to the validator.
type Presentation struct {
	// DPoP says the token came as "Authorization: DPoP" with a proof (RFC
	// 9449 §7): the token must be bound to a DPoP key (cnf.jkt), and the
	// transport checks, once Decide has accepted it, that the proof is by
	// that key (Claims.JKT).
	DPoP bool
	// DPoPAccepted says the transport takes DPoP proofs (a route with
	// middleware.BearerConfig.DPoP): a token bound to a key that came
	// without its proof is then refused whatever the validator allows
	// (Config.AllowBoundTokens). False: the transport takes none.
	DPoPAccepted bool
	// CertThumbprint is the SHA-256 thumbprint of the client certificate
	// the request came with over mutual TLS (RFC 8705 §3): the base64url,
	// without padding, of the SHA-256 of its DER, as "x5t#S256" writes
	// it. A token bound to a certificate (Claims.X5T) is accepted only
	// with this one, compared in constant time. Empty: the request
	// presented no certificate. The transport finds it where the request
	// came from: the TLS connection, or the header of a proxy it trusts.
	CertThumbprint string
}

// check returns why c may not be used as presented so, or nil:
// presented with DPoP, c must be bound to a DPoP key; bound to a
// certificate, it must come with that certificate (another is refused
// whatever allowBearer says); bound to a DPoP key, or to what no rule
// here proves, it must not come as a plain bearer token, unless
// allowBearer.
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
