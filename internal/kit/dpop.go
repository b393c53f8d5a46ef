package kit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
)

// NewProver makes a DPoP key and its proofs' signer.
func NewProver() (*clientauth.Signer, string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	s, err := clientauth.NewSigner(k, "ES256", "")
	if err != nil {
		return nil, "", err
	}
	jkt, err := s.JKT()
	return s, jkt, err
}

// DPoPMode is how a route takes DPoP, as its DPoPConfig says, or as a
// runner that cannot read it finds out (see DetectDPoP).
type DPoPMode struct {
	// PublicURL is the scheme and host the client addresses (htu's
	// start).
	PublicURL string
	// Required: DPoP alone; else Bearer too.
	Required bool
	// RequireNonce: every proof needs the route's nonce.
	RequireNonce bool
	// ProofMaxAge: how old a proof may be; zero means a minute.
	ProofMaxAge time.Duration
	// Now is the clock of the proofs' iat; nil means time.Now.
	Now func() time.Time
}

// DetectDPoP finds, for a runner that cannot read a route's settings,
// whether it takes DPoP at all (a bare DPoP challenge to a request
// without a token), whether DPoP alone (no Bearer challenge beside it),
// and whether it requires nonces: a fresh proof by another key than the
// token's, without a nonce, answered use_dpop_nonce (the nonce is the
// last check of a proof's own) rather than invalid_dpop_proof. The probe
// spends no jti: a refused proof is not remembered.
func DetectDPoP(s Sender, route, publicURL string, tok Token) (mode DPoPMode, takes bool, err error) {
	mode.PublicURL = publicURL
	a, err := s.Send(NewRequest(route))
	if err != nil {
		return mode, false, err
	}
	chs := a.Header.Values("WWW-Authenticate")
	takes = slices.ContainsFunc(chs, func(ch string) bool { return strings.HasPrefix(ch, "DPoP ") })
	if !takes || tok.Skip != "" {
		return mode, takes, nil
	}
	mode.Required = !slices.ContainsFunc(chs, func(ch string) bool { return strings.HasPrefix(ch, "Bearer ") })
	method, path := splitRoute(route)
	other, _, err := NewProver()
	if err != nil {
		return mode, takes, err
	}
	proof, err := other.Proof(method, strings.TrimSuffix(publicURL, "/")+path, tok.Value, "", time.Now())
	if err != nil {
		return mode, takes, err
	}
	req := NewRequest(route, "DPoP "+tok.Value)
	req.Header.Set("DPoP", proof)
	if a, err = s.Send(req); err != nil {
		return mode, takes, err
	}
	mode.RequireNonce = a.Header.Get("DPoP-Nonce") != ""
	return mode, takes, nil
}

func splitRoute(route string) (method, path string) {
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		return http.MethodGet, route
	}
	return method, path
}

// DPoP is the table of a route that takes DPoP-bound tokens (RFC 9449 §7),
// in mode: a bound token with a fresh proof gets past the middleware; the
// same proof again, no proof, two proofs, a proof for another method or
// URL, one older than ProofMaxAge, one without ath, and one by another key
// get 401 invalid_dpop_proof with a DPoP challenge; one without the
// route's scope gets 403 insufficient_scope; a request without a token a
// bare DPoP challenge, and a bearer token: where Bearer is accepted too, a
// bare Bearer challenge beside the DPoP one without a token, and the bound
// token as Bearer 401 invalid_token; where DPoP alone is, no Bearer
// challenge ever, and a bearer token answered as no token. With
// RequireNonce, the first proof, without a nonce, must get 401
// use_dpop_nonce with a DPoP-Nonce, and every other proof carries that
// nonce. Its first case is sent as the table is made, for the nonce.
func DPoP(tk Tokens, s Sender, mode DPoPMode, route string, need []string) []Case {
	method, path := splitRoute(route)
	htu := strings.TrimSuffix(mode.PublicURL, "/") + path
	clock := mode.Now
	if clock == nil {
		clock = time.Now
	}
	tok, prover := tk.DPoP(need)
	if tok.Skip != "" {
		return []Case{{Name: "DPoP-bound tokens", Source: tok.Source, Skip: tok.Skip}}
	}
	other, _, err := NewProver()
	if err != nil {
		return []Case{{Name: "DPoP-bound tokens", Skip: err.Error()}}
	}
	otherMethod := http.MethodPost
	if method == http.MethodPost {
		otherMethod = http.MethodPut
	}
	req := func(authz string, proofs ...string) Request {
		r := NewRequest(route)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		for _, p := range proofs {
			r.Header.Add("DPoP", p)
		}
		return r
	}
	var failed string
	proofBy := func(s *clientauth.Signer, method, url, token, nonce string, at time.Time) string {
		p, err := s.Proof(method, url, token, nonce, at)
		if err != nil && failed == "" {
			failed = "a DPoP proof: " + err.Error()
		}
		return p
	}
	badProof := func(p *Problems, a Answer) {
		p.SchemeError(a, "DPoP", http.StatusUnauthorized, "invalid_dpop_proof")
		if ch := a.Header.Get("WWW-Authenticate"); !strings.Contains(ch, "algs=") {
			p.Addf("WWW-Authenticate %q names no algs", ch)
		}
	}
	src := tok.Source
	row := func(name string, r Request, check func(p *Problems, a Answer)) Case {
		return Case{Name: name, Source: src, Req: r, Token: tok.Value, Check: check}
	}
	var cases []Case
	nonce := ""
	if mode.RequireNonce {
		first := req("DPoP "+tok.Value, proofBy(prover, method, htu, tok.Value, "", clock()))
		c := row("a proof without the server's nonce", first, func(p *Problems, a Answer) {
			p.SchemeError(a, "DPoP", http.StatusUnauthorized, "use_dpop_nonce")
			if nonce == "" {
				p.Addf("no DPoP-Nonce header, where nonces are required (RequireNonce)")
			}
		})
		if c.Skip = s.Skip(first); c.Skip == "" {
			a, err := s.Send(first)
			if err != nil {
				return []Case{{Name: c.Name, Skip: err.Error()}}
			}
			nonce, c.Got = a.Header.Get("DPoP-Nonce"), &a
		}
		cases = append(cases, c)
	}
	proof := func(s *clientauth.Signer, method, htu, token string, at time.Time) string {
		return proofBy(s, method, htu, token, nonce, at)
	}
	now := clock()
	good := proof(prover, method, htu, tok.Value, now)
	oldName, age := "a proof ten minutes old", 10*time.Minute
	maxAge := mode.ProofMaxAge
	if maxAge == 0 {
		maxAge = time.Minute // DPoPConfig's default
	}
	if maxAge+time.Minute > age {
		age = maxAge + time.Minute
		oldName = fmt.Sprintf("a proof %v old, over ProofMaxAge", age)
	}
	cases = append(cases,
		row("a bound token with a fresh proof", req("DPoP "+tok.Value, good), func(p *Problems, a Answer) {
			if a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
				p.Addf("status %d: the middleware refused a valid DPoP request (body %q, WWW-Authenticate %q)", a.Status, a.Body, a.Header.Values("WWW-Authenticate"))
			}
		}),
		row("the same proof again", req("DPoP "+tok.Value, good), badProof),
		row("no proof", req("DPoP "+tok.Value), badProof),
		row("two proofs", req("DPoP "+tok.Value, proof(prover, method, htu, tok.Value, now), proof(prover, method, htu, tok.Value, now)), badProof),
		row("a proof for another method", req("DPoP "+tok.Value, proof(prover, otherMethod, htu, tok.Value, now)), badProof),
		row("a proof for another URL", req("DPoP "+tok.Value, proof(prover, method, htu+"-other", tok.Value, now)), badProof),
		row(oldName, req("DPoP "+tok.Value, proof(prover, method, htu, tok.Value, now.Add(-age))), badProof),
		row("a proof without ath", req("DPoP "+tok.Value, proof(prover, method, htu, "", now)), badProof),
		row("a proof by another key", req("DPoP "+tok.Value, proof(other, method, htu, tok.Value, now)), badProof),
	)
	bare := func(scheme string) func(string) bool {
		return func(ch string) bool {
			return strings.HasPrefix(ch, scheme+" realm=") && !strings.Contains(ch, "error=")
		}
	}
	noToken := func(p *Problems, a Answer) {
		chs := a.Header.Values("WWW-Authenticate")
		if a.Status != http.StatusUnauthorized {
			p.Addf("status %d, want 401", a.Status)
		}
		if !slices.ContainsFunc(chs, bare("DPoP")) {
			p.Addf("WWW-Authenticate %q has no bare DPoP challenge", chs)
		}
		switch bearer := slices.ContainsFunc(chs, func(ch string) bool { return strings.HasPrefix(ch, "Bearer ") }); {
		case mode.Required && bearer:
			p.Addf("WWW-Authenticate %q offers Bearer, where DPoP alone is accepted (Required)", chs)
		case !mode.Required && !slices.ContainsFunc(chs, bare("Bearer")):
			p.Addf("WWW-Authenticate %q has no bare Bearer challenge, where Bearer is accepted too", chs)
		}
		if isJSON(a.Body) {
			p.Addf("body is JSON (%q); a request without a token gets none", a.Body)
		}
	}
	cases = append(cases, Case{Name: "no token", Req: req(""), Token: tok.Value, Check: noToken})
	if mode.Required {
		// DPoPConfig.Required: "a bearer token is answered as no token (a
		// bare DPoP challenge)".
		unbound := tk.Good(need)
		cases = append(cases,
			row("the bound token as Bearer, where DPoP alone is accepted", req("Bearer "+tok.Value), noToken),
			Case{Name: "an unbound token as Bearer, where DPoP alone is accepted", Source: unbound.Source, Skip: unbound.Skip, Req: req("Bearer " + unbound.Value), Token: tok.Value, Check: noToken})
	} else {
		cases = append(cases, row("the bound token as Bearer", req("Bearer "+tok.Value), func(p *Problems, a Answer) {
			p.OAuthError(a, http.StatusUnauthorized, "invalid_token")
		}))
	}
	wrong := tk.DPoPOtherScope(need)
	c := Case{Name: "a bound token without the route's scope", Source: wrong.Source, Skip: wrong.Skip, Token: tok.Value, Check: func(p *Problems, a Answer) {
		p.SchemeError(a, "DPoP", http.StatusForbidden, "insufficient_scope")
	}}
	if wrong.Skip == "" {
		c.Req = req("DPoP "+wrong.Value, proof(prover, method, htu, wrong.Value, now))
	}
	cases = append(cases, c)
	if failed != "" {
		for i := range cases {
			if cases[i].Skip == "" && cases[i].Got == nil {
				cases[i].Skip = failed
			}
		}
	}
	return cases
}
