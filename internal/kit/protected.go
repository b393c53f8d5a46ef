package kit

import (
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"

	"github.com/idsauth/idsauth/internal/clientauth"
)

// Token is a token a case presents, how it was obtained, or why it could
// not be.
type Token struct {
	Value  string
	Source string // "the issuer, client_credentials", "forged: ...", ...
	Skip   string // why there is none; Value is then empty
}

// Tokens gives the tokens the tables present. idsauthtest's issuer mints
// every one of them with its key; idsauth conformance gets the good ones
// from the real issuer and forges the others with keys of its own, which
// the API must refuse all the same, or says why it cannot.
type Tokens interface {
	// Good is a valid token with the scopes need.
	Good(need []string) Token
	// OtherScope is a valid token with none of need.
	OtherScope(need []string) Token
	// Expired, NotYetValid, Tampered, UnknownKey, AlgNone, WrongIssuer,
	// WrongAudience and Bound are tokens the API must refuse as invalid:
	// expired an hour ago, nbf an hour ahead, one character of its
	// signature changed, signed by a key the issuer does not publish,
	// unsigned, of another issuer, for another audience, and bound to a
	// DPoP key (cnf.jkt) that no proof comes with.
	Expired(need []string) Token
	NotYetValid(need []string) Token
	Tampered(need []string) Token
	UnknownKey(need []string) Token
	AlgNone(need []string) Token
	WrongIssuer(need []string) Token
	WrongAudience(need []string) Token
	Bound(need []string) Token
	// Reference is a reference (opaque) token with need; Revoked one
	// whose client revoked it; ReferenceOtherScope one with none of need.
	Reference(need []string) Token
	RevokedReference(need []string) Token
	ReferenceOtherScope(need []string) Token
	// DPoP is a token with need bound to the key of prover, which makes
	// its proofs.
	DPoP(need []string) (Token, *clientauth.Signer)
	// DPoPOtherScope is a token bound to the same key, with none of need.
	DPoPOtherScope(need []string) Token
	// CertificateBound is a token with need bound to a client
	// certificate, and that certificate; OtherCertificate a certificate
	// it is not bound to.
	CertificateBound(need []string) (Token, *tls.Certificate)
	CertificateBoundOtherScope(need []string, cert *tls.Certificate) Token
	OtherCertificate() *tls.Certificate
}

// presented is a case presenting tok in its Authorization header as
// scheme, on a request like base, or skipped for want of it.
func presented(name string, tok Token, base Request, scheme string, check func(p *Problems, a Answer)) Case {
	c := Case{Name: name, Source: tok.Source, Skip: tok.Skip, Token: tok.Value, Check: check}
	if tok.Skip == "" {
		c.Req = authorized(base, scheme+" "+tok.Value)
	}
	return c
}

// authorized is a copy of base with the given Authorization values.
func authorized(base Request, authz ...string) Request {
	r := base
	r.Header = base.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	for _, a := range authz {
		r.Header.Add("Authorization", a)
	}
	return r
}

// Protected is the table of a protected route (CONTRACT.md §1): a valid
// token with the scope gets past the middleware; no token, another scheme,
// Bearer alone and a token in the query only get a bare challenge; two
// Authorization headers 400 invalid_request; an expired, not yet valid,
// tampered, unknown-key, unsigned, foreign, wrong-audience or cnf-bound
// token 401 invalid_token; a token without the scope 403
// insufficient_scope naming it. Reference tokens: where probe, sent a
// valid reference token, is refused 401, the route takes JWTs only and
// that is the case; otherwise a valid one passes, a revoked one gets 401
// and one without the scope 403. route is "METHOD /path".
func Protected(tk Tokens, s Sender, route string, need []string) []Case {
	return ProtectedRequest(tk, s, NewRequest(route), need)
}

// ProtectedRequest is Protected's table for requests like base (its
// method, path or URL, headers and body), each with its Authorization
// added: an MCP endpoint's JSON-RPC POST, say. need empty means any valid
// token passes: the cases of a token without the scope are left out.
func ProtectedRequest(tk Tokens, s Sender, base Request, need []string) []Case {
	good := tk.Good(need)
	invalid := func(p *Problems, a Answer) { p.OAuthError(a, http.StatusUnauthorized, "invalid_token") }
	bare := func(p *Problems, a Answer) { p.BareChallenge(a) }
	passes := func(p *Problems, a Answer) { p.Passes(a) }
	query := Case{Name: "a token in the query only", Source: good.Source, Skip: good.Skip, Token: good.Value, Check: bare}
	if good.Skip == "" {
		query.Req = authorized(base)
		path, q, _ := strings.Cut(query.Req.Path, "?")
		values, _ := url.ParseQuery(q)
		values.Set("access_token", good.Value)
		query.Req.Path = path + "?" + values.Encode()
	}
	two := Case{Name: "two Authorization headers", Source: good.Source, Skip: good.Skip, Token: good.Value, Check: func(p *Problems, a Answer) {
		p.OAuthError(a, http.StatusBadRequest, "invalid_request")
	}}
	if good.Skip == "" {
		two.Req = authorized(base, "Bearer "+good.Value, "Bearer "+good.Value)
	}
	cases := []Case{
		presented("a valid token with the scope", good, base, "Bearer", passes),
		{Name: "no token", Req: authorized(base), Check: bare},
		{Name: "another scheme (Basic)", Req: authorized(base, "Basic dGVzdDp0ZXN0"), Token: "Basic dGVzdDp0ZXN0", Check: bare},
		{Name: "Bearer with nothing after it", Req: authorized(base, "Bearer"), Token: "Bearer", Check: bare},
		query,
		two,
		presented("an expired token", tk.Expired(need), base, "Bearer", invalid),
		presented("a token not yet valid", tk.NotYetValid(need), base, "Bearer", invalid),
		presented("a tampered token", tk.Tampered(need), base, "Bearer", invalid),
		presented("a token signed by an unknown key", tk.UnknownKey(need), base, "Bearer", invalid),
		presented("an unsigned token (alg none)", tk.AlgNone(need), base, "Bearer", invalid),
		presented("a token of another issuer", tk.WrongIssuer(need), base, "Bearer", invalid),
		presented("a token for another audience", tk.WrongAudience(need), base, "Bearer", invalid),
		// Bound to a DPoP key (RFC 9449): as a bearer token, probably stolen.
		presented("a token bound to a key (cnf)", tk.Bound(need), base, "Bearer", invalid),
	}
	lacksScope := func(p *Problems, a Answer) {
		m := p.OAuthError(a, http.StatusForbidden, "insufficient_scope")
		if a.Status != http.StatusForbidden {
			return
		}
		ch := a.Header.Get("WWW-Authenticate")
		for _, s := range need {
			if !strings.Contains(ch, s) {
				p.Addf("WWW-Authenticate %q does not name the scope %s in scope=", ch, s)
			}
		}
		if m != nil && m["scope"] == nil {
			p.Addf("body %q has no \"scope\"", a.Body)
		}
	}
	if len(need) > 0 {
		cases = append(cases, presented("a token without the route's scope", tk.OtherScope(need), base, "Bearer", lacksScope))
	}
	// Reference tokens: a route that takes them gets their cases; one
	// that does not must refuse them as invalid.
	ref := tk.Reference(need)
	if ref.Skip != "" {
		return append(cases, presented("a reference token", ref, base, "Bearer", invalid))
	}
	probe := presented("a reference token, on a route that takes JWTs only", ref, base, "Bearer", invalid)
	if s.Skip(probe.Req) == "" {
		if a, err := s.Send(probe.Req); err == nil && a.Status == http.StatusUnauthorized {
			probe.Got = &a
			return append(cases, probe)
		}
	}
	cases = append(cases,
		presented("a valid reference token with the scope", ref, base, "Bearer", passes),
		presented("a revoked reference token", tk.RevokedReference(need), base, "Bearer", invalid))
	if len(need) > 0 {
		cases = append(cases, presented("a reference token without the route's scope", tk.ReferenceOtherScope(need), base, "Bearer", lacksScope))
	}
	return cases
}
