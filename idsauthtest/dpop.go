package idsauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/middleware"
)

// newProver makes a DPoP key and its proofs' signer.
func newProver() (*clientauth.Signer, string, error) {
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

// DPoPToken returns a token for scopes bound to the issuer's DPoP key
// (cnf.jkt, RFC 9449), as the token endpoint issues it to a client that
// sends a proof: present it as "DPoP <token>" with a proof from Proof.
func (i *Issuer) DPoPToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["cnf"] = map[string]string{"jkt": i.dpopJKT}
	return i.Mint(t, c)
}

// Proof returns a new DPoP proof by the issuer's DPoP key for a request
// with method to url (the URL as the client addresses it: the service's
// public URL and the path), for token (its hash goes in ath), with the
// server's nonce when it asked for one ("" for none).
func (i *Issuer) Proof(t TB, method, url, token, nonce string) string {
	t.Helper()
	return proofBy(t, i.dpop, method, url, token, nonce, time.Now())
}

func proofBy(t TB, s *clientauth.Signer, method, url, token, nonce string, at time.Time) string {
	t.Helper()
	p, err := s.Proof(method, url, token, nonce, at)
	if err != nil {
		t.Fatalf("idsauthtest: a DPoP proof: %v", err)
	}
	return p
}

// CheckProtectedDPoP runs the DPoP cases (RFC 9449 §7) for a route that
// accepts DPoP-bound tokens, against h, whose RequireBearer has
// BearerConfig.DPoP made from cfg: pass the DPoPConfig the route's
// middleware.NewDPoP got, so that the cases follow its mode. It reports
// with t.Errorf each case h answers wrongly: a bound token with a fresh
// proof gets past the middleware; the same proof again, no proof, two
// proofs, a proof for another method or URL, one older than ProofMaxAge,
// one without ath, and one by another key get 401 invalid_dpop_proof with
// a DPoP challenge; one without the route's scope gets 403
// insufficient_scope; and no answer echoes the token. A request without a
// token gets a bare DPoP challenge, and a bearer token:
//
//   - where Bearer is accepted too (Required false): the request without
//     a token gets a bare Bearer challenge beside the DPoP one, and the
//     bound token as Bearer 401 invalid_token;
//   - where DPoP alone is (Required): no Bearer challenge is ever sent,
//     and a bearer token, the bound one or another, is answered as no
//     token, a bare DPoP challenge without JSON, as DPoPConfig.Required
//     says.
//
// With RequireNonce, the first proof, without a nonce, must get 401
// use_dpop_nonce with a DPoP-Nonce, and every other proof carries that
// nonce. The proofs' iat is cfg.Now's time when it is set. route is
// "METHOD /path", as for CheckProtected, which checks the bearer cases of
// a route that accepts both.
func (i *Issuer) CheckProtectedDPoP(t TB, h http.Handler, cfg middleware.DPoPConfig, route string, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("idsauthtest: CheckProtectedDPoP needs the scopes the route requires")
	}
	if cfg.PublicURL == "" {
		t.Fatalf("idsauthtest: CheckProtectedDPoP needs the route's DPoPConfig, with its PublicURL")
	}
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodGet, route
	}
	htu := strings.TrimSuffix(cfg.PublicURL, "/") + path
	clock := cfg.Now
	if clock == nil {
		clock = time.Now
	}
	tok := i.DPoPToken(t, need...)
	other, _, err := newProver()
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	otherMethod := http.MethodPost
	if method == http.MethodPost {
		otherMethod = http.MethodPut
	}
	req := func(authz string, proofs ...string) *http.Request {
		r := newRequest(t, route, authz)
		for _, p := range proofs {
			r.Header.Add("DPoP", p)
		}
		return r
	}
	type row struct {
		name  string
		req   *http.Request
		got   *answer // the answer, when it came before the rows were run
		check func(p *problems, a answer)
	}
	badProof := func(p *problems, a answer) {
		p.schemeError(a, "DPoP", http.StatusUnauthorized, "invalid_dpop_proof")
		if ch := a.header.Get("WWW-Authenticate"); !strings.Contains(ch, "algs=") {
			p.addf("WWW-Authenticate %q names no algs", ch)
		}
	}
	var rows []row
	nonce := ""
	if cfg.RequireNonce {
		a := serve(h, req("DPoP "+tok, proofBy(t, i.dpop, method, htu, tok, "", clock())))
		nonce = a.header.Get("DPoP-Nonce")
		rows = append(rows, row{"a proof without the server's nonce", nil, &a, func(p *problems, a answer) {
			p.schemeError(a, "DPoP", http.StatusUnauthorized, "use_dpop_nonce")
			if nonce == "" {
				p.addf("no DPoP-Nonce header, where nonces are required (RequireNonce)")
			}
		}})
	}
	proof := func(s *clientauth.Signer, method, htu, token string, at time.Time) string {
		return proofBy(t, s, method, htu, token, nonce, at)
	}
	now := clock()
	good := proof(i.dpop, method, htu, tok, now)
	oldName, age := "a proof ten minutes old", 10*time.Minute
	maxAge := cfg.ProofMaxAge
	if maxAge == 0 {
		maxAge = time.Minute // DPoPConfig's default
	}
	if maxAge+time.Minute > age {
		age = maxAge + time.Minute
		oldName = fmt.Sprintf("a proof %v old, over ProofMaxAge", age)
	}
	rows = append(rows,
		row{"a bound token with a fresh proof", req("DPoP "+tok, good), nil, func(p *problems, a answer) {
			if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
				p.addf("status %d: the middleware refused a valid DPoP request (body %q, WWW-Authenticate %q)", a.status, a.body, a.header.Values("WWW-Authenticate"))
			}
		}},
		row{"the same proof again", req("DPoP "+tok, good), nil, badProof},
		row{"no proof", req("DPoP " + tok), nil, badProof},
		row{"two proofs", req("DPoP "+tok, proof(i.dpop, method, htu, tok, now), proof(i.dpop, method, htu, tok, now)), nil, badProof},
		row{"a proof for another method", req("DPoP "+tok, proof(i.dpop, otherMethod, htu, tok, now)), nil, badProof},
		row{"a proof for another URL", req("DPoP "+tok, proof(i.dpop, method, htu+"-other", tok, now)), nil, badProof},
		row{oldName, req("DPoP "+tok, proof(i.dpop, method, htu, tok, now.Add(-age))), nil, badProof},
		row{"a proof without ath", req("DPoP "+tok, proof(i.dpop, method, htu, "", now)), nil, badProof},
		row{"a proof by another key", req("DPoP "+tok, proof(other, method, htu, tok, now)), nil, badProof},
	)
	bare := func(scheme string) func(string) bool {
		return func(ch string) bool {
			return strings.HasPrefix(ch, scheme+" realm=") && !strings.Contains(ch, "error=")
		}
	}
	noToken := func(p *problems, a answer) {
		chs := a.header.Values("WWW-Authenticate")
		if a.status != http.StatusUnauthorized {
			p.addf("status %d, want 401", a.status)
		}
		if !slices.ContainsFunc(chs, bare("DPoP")) {
			p.addf("WWW-Authenticate %q has no bare DPoP challenge", chs)
		}
		switch bearer := slices.ContainsFunc(chs, func(ch string) bool { return strings.HasPrefix(ch, "Bearer ") }); {
		case cfg.Required && bearer:
			p.addf("WWW-Authenticate %q offers Bearer, where DPoP alone is accepted (Required)", chs)
		case !cfg.Required && !slices.ContainsFunc(chs, bare("Bearer")):
			p.addf("WWW-Authenticate %q has no bare Bearer challenge, where Bearer is accepted too", chs)
		}
		if json.Valid([]byte(a.body)) && strings.HasPrefix(strings.TrimSpace(a.body), "{") {
			p.addf("body is JSON (%q); a request without a token gets none", a.body)
		}
	}
	rows = append(rows, row{"no token", req(""), nil, noToken})
	if cfg.Required {
		// DPoPConfig.Required: "a bearer token is answered as no token (a
		// bare DPoP challenge)".
		rows = append(rows,
			row{"the bound token as Bearer, where DPoP alone is accepted", req("Bearer " + tok), nil, noToken},
			row{"an unbound token as Bearer, where DPoP alone is accepted", req("Bearer " + i.Token(t, need...)), nil, noToken})
	} else {
		rows = append(rows, row{"the bound token as Bearer", req("Bearer " + tok), nil, func(p *problems, a answer) {
			p.oauthError(a, http.StatusUnauthorized, "invalid_token")
		}})
	}
	wrong := i.DPoPToken(t, i.otherScope(need))
	rows = append(rows, row{"a bound token without the route's scope", req("DPoP "+wrong, proof(i.dpop, method, htu, wrong, now)), nil, func(p *problems, a answer) {
		p.schemeError(a, "DPoP", http.StatusForbidden, "insufficient_scope")
	}})
	for _, r := range rows {
		a := r.got
		if a == nil {
			served := serve(h, r.req)
			a = &served
		}
		var p problems
		r.check(&p, *a)
		p.refusal(*a, tok)
		for _, msg := range p {
			t.Errorf("CheckProtectedDPoP %s: %s: %s", route, r.name, msg)
		}
	}
}
