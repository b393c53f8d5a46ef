package idsauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
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
// BearerConfig.DPoP with PublicURL publicURL, and reports with t.Errorf
// each case h answers wrongly: a bound token with a fresh proof gets past
// the middleware; the same proof again, no proof, two proofs, a proof for
// another method or URL, an old one, one without ath, and one by another
// key get 401 invalid_dpop_proof with a DPoP challenge; the bound token
// as Bearer gets 401 invalid_token; one without the scope gets 403
// insufficient_scope; a request without a token gets a bare DPoP
// challenge among its challenges; and no answer echoes the token. route
// is "METHOD /path", as for CheckProtected, which checks the bearer cases
// of a route that accepts both.
func (i *Issuer) CheckProtectedDPoP(t TB, h http.Handler, publicURL, route string, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("idsauthtest: CheckProtectedDPoP needs the scopes the route requires")
	}
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodGet, route
	}
	htu := strings.TrimSuffix(publicURL, "/") + path
	tok := i.DPoPToken(t, need...)
	other, _, err := newProver()
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	otherMethod := http.MethodPost
	if method == http.MethodPost {
		otherMethod = http.MethodPut
	}
	now := time.Now()
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
		check func(p *problems, a answer)
	}
	badProof := func(p *problems, a answer) {
		p.schemeError(a, "DPoP", http.StatusUnauthorized, "invalid_dpop_proof")
		if ch := a.header.Get("WWW-Authenticate"); !strings.Contains(ch, "algs=") {
			p.addf("WWW-Authenticate %q names no algs", ch)
		}
	}
	good := i.Proof(t, method, htu, tok, "")
	rows := []row{
		{"a bound token with a fresh proof", req("DPoP "+tok, good), func(p *problems, a answer) {
			if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
				p.addf("status %d: the middleware refused a valid DPoP request (body %q, WWW-Authenticate %q)", a.status, a.body, a.header.Values("WWW-Authenticate"))
			}
		}},
		{"the same proof again", req("DPoP "+tok, good), badProof},
		{"no proof", req("DPoP " + tok), badProof},
		{"two proofs", req("DPoP "+tok, i.Proof(t, method, htu, tok, ""), i.Proof(t, method, htu, tok, "")), badProof},
		{"a proof for another method", req("DPoP "+tok, i.Proof(t, otherMethod, htu, tok, "")), badProof},
		{"a proof for another URL", req("DPoP "+tok, i.Proof(t, method, htu+"-other", tok, "")), badProof},
		{"a proof ten minutes old", req("DPoP "+tok, proofBy(t, i.dpop, method, htu, tok, "", now.Add(-10*time.Minute))), badProof},
		{"a proof without ath", req("DPoP "+tok, i.Proof(t, method, htu, "", "")), badProof},
		{"a proof by another key", req("DPoP "+tok, proofBy(t, other, method, htu, tok, "", now)), badProof},
		{"the bound token as Bearer", req("Bearer " + tok), func(p *problems, a answer) {
			p.oauthError(a, http.StatusUnauthorized, "invalid_token")
		}},
		{"no token", req(""), func(p *problems, a answer) {
			if a.status != http.StatusUnauthorized {
				p.addf("status %d, want 401", a.status)
			}
			if !slices.ContainsFunc(a.header.Values("WWW-Authenticate"), func(ch string) bool {
				return strings.HasPrefix(ch, "DPoP realm=") && !strings.Contains(ch, "error=")
			}) {
				p.addf("WWW-Authenticate %q has no bare DPoP challenge", a.header.Values("WWW-Authenticate"))
			}
		}},
	}
	wrong := i.DPoPToken(t, i.otherScope(need))
	rows = append(rows, row{"a bound token without the route's scope", req("DPoP "+wrong, i.Proof(t, method, htu, wrong, "")), func(p *problems, a answer) {
		p.schemeError(a, "DPoP", http.StatusForbidden, "insufficient_scope")
	}})
	for _, r := range rows {
		a := serve(h, r.req)
		var p problems
		r.check(&p, a)
		p.refusal(a, tok)
		for _, msg := range p {
			t.Errorf("CheckProtectedDPoP %s: %s: %s", route, r.name, msg)
		}
	}
}
