package idsauthtest

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/kit"
	"github.com/idsauth/idsauth/scope"
)

// report runs cases against h, in process, and reports with t.Errorf
// each problem, prefixed with what (the checker and the route).
func report(t TB, h http.Handler, what string, cases []kit.Case) {
	t.Helper()
	for _, r := range kit.Run(kit.Handler{H: h}, cases) {
		if r.Skipped != "" {
			t.Errorf("%s: %s: %s", what, r.Name, r.Skipped) // never, in process
		}
		for _, msg := range r.Problems {
			t.Errorf("%s: %s: %s", what, r.Name, msg)
		}
	}
}

// tokens are the issuer's tokens as the kit's tables ask for them, each
// minted with its key (or got from its token endpoint).
type tokens struct {
	i *Issuer
	t TB
}

const minted = "minted by idsauthtest's issuer"

func (k tokens) Good(need []string) kit.Token {
	return kit.Token{Value: k.i.Token(k.t, need...), Source: minted}
}
func (k tokens) OtherScope(need []string) kit.Token {
	return kit.Token{Value: k.i.Token(k.t, k.i.otherScope(need)), Source: minted}
}
func (k tokens) Expired(need []string) kit.Token {
	return kit.Token{Value: k.i.ExpiredToken(k.t, need...), Source: minted}
}
func (k tokens) NotYetValid(need []string) kit.Token {
	return kit.Token{Value: k.i.NotYetValidToken(k.t, need...), Source: minted}
}
func (k tokens) Tampered(need []string) kit.Token {
	return kit.Token{Value: k.i.TamperedToken(k.t, need...), Source: minted}
}
func (k tokens) UnknownKey(need []string) kit.Token {
	return kit.Token{Value: k.i.UnknownKeyToken(k.t, need...), Source: minted}
}
func (k tokens) AlgNone(need []string) kit.Token {
	return kit.Token{Value: k.i.AlgNoneToken(k.t, need...), Source: minted}
}
func (k tokens) WrongIssuer(need []string) kit.Token {
	return kit.Token{Value: k.i.WrongIssuerToken(k.t, need...), Source: minted}
}
func (k tokens) WrongAudience(need []string) kit.Token {
	return kit.Token{Value: k.i.WrongAudienceToken(k.t, need...), Source: minted}
}
func (k tokens) Bound(need []string) kit.Token {
	return kit.Token{Value: k.i.BoundToken(k.t, need...), Source: minted}
}

const fromEndpoint = "idsauthtest's issuer, its token endpoint"

func (k tokens) Reference(need []string) kit.Token {
	return kit.Token{Value: k.i.ReferenceToken(k.t, k.i.someScope(need)...), Source: fromEndpoint}
}
func (k tokens) RevokedReference(need []string) kit.Token {
	return kit.Token{Value: k.i.RevokedReferenceToken(k.t, k.i.someScope(need)...), Source: fromEndpoint + ", then revoked"}
}

// someScope is need, or when it is empty (any valid token will do) a
// scope of the issuer's: its token endpoint gives no token without one.
func (i *Issuer) someScope(need []string) []string {
	if len(need) == 0 {
		return []string{i.otherScope(nil)}
	}
	return need
}
func (k tokens) ReferenceOtherScope(need []string) kit.Token {
	return kit.Token{Value: k.i.ReferenceToken(k.t, k.i.otherScope(need)), Source: fromEndpoint}
}
func (k tokens) DPoP(need []string) (kit.Token, *clientauth.Signer) {
	return kit.Token{Value: k.i.DPoPToken(k.t, need...), Source: minted}, k.i.dpop
}
func (k tokens) DPoPOtherScope(need []string) kit.Token {
	return kit.Token{Value: k.i.DPoPToken(k.t, k.i.otherScope(need)), Source: minted}
}
func (k tokens) CertificateBound(need []string) (kit.Token, *tls.Certificate) {
	c := k.i.ClientCertificate(k.t)
	return kit.Token{Value: k.i.CertificateBoundToken(k.t, c.Leaf, need...), Source: minted}, &c
}
func (k tokens) CertificateBoundOtherScope(need []string, cert *tls.Certificate) kit.Token {
	return kit.Token{Value: k.i.CertificateBoundToken(k.t, cert.Leaf, k.i.otherScope(need)), Source: minted}
}
func (k tokens) OtherCertificate() *tls.Certificate {
	c := k.i.ClientCertificate(k.t)
	return &c
}

// otherScope returns a scope the issuer knows that is none of need: one
// of WithScopes' first, then one of the product's.
func (i *Issuer) otherScope(need []string) string {
	for _, s := range slices.Concat(i.own, scope.All()) {
		if !slices.Contains(need, s) {
			return s
		}
	}
	return "idsauthtest_other_scope"
}

// CheckProtected runs the contract's cases for a protected route
// (CONTRACT.md §1) against h, which should be your handler chain with
// RequireBearer(i.Validator()) and RequireScope(need...) in it, and
// reports with t.Errorf each case h answers wrongly: no token (a bare
// challenge, no JSON), another scheme, a token in the query only, two
// Authorization headers (400 invalid_request), expired, not yet valid,
// tampered, unknown key, alg none, wrong issuer, wrong audience and bound
// to a key by a cnf claim (401 invalid_token), a token without the scope
// (403 insufficient_scope naming it), Cache-Control: no-store on every
// refusal, and no echo of any part of the token in a refusal's headers or
// body (a segment's start or end, the header or payload decoded, its jti,
// sub, client_id or kid); and
// that a valid token with the scope gets past the middleware (neither 401
// nor 403). route is "METHOD /path", e.g. "GET /webapi/api/v3/demo/Admin/Users".
//
// Reference tokens: when h accepts the issuer's reference tokens (its
// validator is i.ValidatorWithReferences()),
// a valid one with the scope gets past it, a revoked one gets 401
// invalid_token and one without the scope 403; when it does not, a
// reference token gets 401 invalid_token.
func (i *Issuer) CheckProtected(t TB, h http.Handler, route string, need ...string) {
	t.Helper()
	if len(need) == 0 {
		t.Fatalf("idsauthtest: CheckProtected needs the scopes the route requires")
	}
	report(t, h, "CheckProtected "+route, kit.Protected(tokens{i, t}, kit.Handler{H: h}, route, need))
}

// CheckSCIM runs the contract's cases for a SCIM route (CONTRACT.md §4)
// against h, which should serve route through SCIMAuth, and reports with
// t.Errorf each case h answers wrongly: the tenant's token gets past
// SCIMAuth; no token, another scheme, a wrong token, and the token on an
// unknown tenant all get the one 401 SCIM error (application/scim+json,
// "status":"401", a Bearer challenge, the same body for all), with no echo
// of the token. route is "METHOD /path" with "{tenant}" where the tenant
// goes, as the mux pattern has it: "GET /webapi/scim-api/v1/{tenant}/scim/Users"
// (the contract's path) or any other.
func CheckSCIM(t TB, h http.Handler, route, tenant, token string) {
	t.Helper()
	if !strings.Contains(route, "{tenant}") {
		t.Fatalf("idsauthtest: CheckSCIM's route %q has no {tenant}", route)
	}
	path := strings.ReplaceAll(route, "{tenant}", tenant)
	send := kit.Handler{H: h}
	if a, _ := send.Send(kit.NewRequest(path, "Bearer "+token)); a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden || a.Status == http.StatusTooManyRequests {
		t.Errorf("CheckSCIM %s: the tenant's token: status %d, want past SCIMAuth (body %q)", path, a.Status, a.Body)
	}
	var first *kit.Answer
	for _, r := range []struct {
		name string
		req  kit.Request
	}{
		{"no token", kit.NewRequest(path)},
		{"another scheme (Basic)", kit.NewRequest(path, "Basic dGVzdDp0ZXN0")},
		{"a wrong token", kit.NewRequest(path, "Bearer "+token+"x")},
		{"the token on an unknown tenant", kit.NewRequest(strings.ReplaceAll(route, "{tenant}", tenant+"-unknown-tenant"), "Bearer "+token)},
	} {
		a, _ := send.Send(r.req)
		var p kit.Problems
		if a.Status != http.StatusUnauthorized {
			p.Addf("status %d, want 401", a.Status)
		}
		if ct := a.Header.Get("Content-Type"); ct != "application/scim+json" {
			p.Addf("Content-Type %q, want application/scim+json", ct)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(a.Body), &m); err != nil || m["status"] != "401" {
			p.Addf("body %q, want a SCIM error with \"status\":\"401\"", a.Body)
		}
		if ch := a.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer realm=") {
			p.Addf("WWW-Authenticate %q, want a Bearer challenge", ch)
		}
		if first == nil {
			first = &a
		} else if a.Body != first.Body {
			p.Addf("body %q differs from the no-token answer %q: refusals must not tell cases apart", a.Body, first.Body)
		}
		p.Echoes(a, token)
		for _, msg := range p {
			t.Errorf("CheckSCIM %s: %s: %s", path, r.name, msg)
		}
	}
}
