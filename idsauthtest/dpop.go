package idsauthtest

import (
	"net/http"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/kit"
	"github.com/idsauth/idsauth/middleware"
)

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
	mode := kit.DPoPMode{PublicURL: cfg.PublicURL, Required: cfg.Required, RequireNonce: cfg.RequireNonce, ProofMaxAge: cfg.ProofMaxAge, Now: cfg.Now}
	report(t, h, "CheckProtectedDPoP "+route, kit.DPoP(tokens{i, t}, kit.Handler{H: h}, mode, route, need))
}
