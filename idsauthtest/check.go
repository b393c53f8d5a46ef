package idsauthtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/tokenecho"
	"github.com/idsauth/idsauth/scope"
)

// answer is what a handler wrote.
type answer struct {
	status int
	header http.Header
	body   string
}

func serve(h http.Handler, r *http.Request) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return answer{rec.Code, rec.Header(), rec.Body.String()}
}

// newRequest makes a request for route, "METHOD /path" (a bare path means
// GET), with the given Authorization values.
func newRequest(t TB, route string, authz ...string) *http.Request {
	t.Helper()
	method, path, ok := strings.Cut(route, " ")
	if !ok {
		method, path = http.MethodGet, route
	}
	r := httptest.NewRequest(method, "http://service.test"+path, nil)
	for _, a := range authz {
		r.Header.Add("Authorization", a)
	}
	return r
}

// problems collects what one case got wrong.
type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// bareChallenge checks the no-token answer (CONTRACT.md §1): 401, a
// Bearer challenge without error, no JSON.
func (p *problems) bareChallenge(a answer) {
	if a.status != http.StatusUnauthorized {
		p.addf("status %d, want 401", a.status)
		return
	}
	ch := a.header.Get("WWW-Authenticate")
	if !strings.HasPrefix(ch, "Bearer realm=") || strings.Contains(ch, "error=") {
		p.addf("WWW-Authenticate %q, want a bare Bearer challenge (realm only, no error)", ch)
	}
	if json.Valid([]byte(a.body)) && strings.HasPrefix(strings.TrimSpace(a.body), "{") {
		p.addf("body is JSON (%q); a request without a token gets none", a.body)
	}
}

// oauthError checks a JSON error answer with its Bearer challenge.
func (p *problems) oauthError(a answer, status int, code string) map[string]any {
	return p.schemeError(a, "Bearer", status, code)
}

// schemeError checks a JSON error answer with its challenge of scheme.
func (p *problems) schemeError(a answer, scheme string, status int, code string) map[string]any {
	if a.status != status {
		p.addf("status %d, want %d", a.status, status)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(a.body), &m); err != nil || m["error"] != code {
		p.addf("body %q, want JSON with \"error\":%q", a.body, code)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p.addf("Content-Type %q, want application/json", ct)
	}
	if ch := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, scheme+" ") || !strings.Contains(ch, `error="`+code+`"`) {
		p.addf("WWW-Authenticate %q, want a %s challenge with error=%q", ch, scheme, code)
	}
	return m
}

// refusal checks what every 401 and 403 shares: no caching, no echo.
func (p *problems) refusal(a answer, token string) {
	if a.status != http.StatusUnauthorized && a.status != http.StatusForbidden && a.status != http.StatusBadRequest {
		return
	}
	if cc := a.header.Get("Cache-Control"); cc != "no-store" {
		p.addf("Cache-Control %q, want no-store", cc)
	}
	echoes(p, a, token)
}

// echoes reports an answer (its headers or body; net/http writes the
// status line's text itself) that holds any part of the token (see
// tokenecho.Parts).
func echoes(p *problems, a answer, token string) {
	var h strings.Builder
	_ = a.header.Write(&h)
	if part := tokenecho.Find(h.String()+"\n"+a.body, token); part != "" {
		p.addf("the answer echoes the token's %s", part)
	}
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
	i.checkRequests(t, h, "CheckProtected "+route, func(authz ...string) *http.Request { return newRequest(t, route, authz...) }, need, nil)
}

// checkRequests runs CheckProtected's cases against h, with requests mk
// makes, reporting each under label: the cases of a token without the
// scope only when need names one. also, when not nil, checks every
// answer besides.
func (i *Issuer) checkRequests(t TB, h http.Handler, label string, mk func(authz ...string) *http.Request, need []string, also func(p *problems, a answer)) {
	t.Helper()
	good := i.Token(t, need...)
	type row struct {
		name  string
		req   *http.Request
		token string
		check func(p *problems, a answer)
	}
	invalid := func(p *problems, a answer) { p.oauthError(a, http.StatusUnauthorized, "invalid_token") }
	bare := func(p *problems, a answer) { p.bareChallenge(a) }
	query := mk()
	q := query.URL.Query()
	q.Set("access_token", good)
	query.URL.RawQuery = q.Encode()
	passes := func(p *problems, a answer) {
		if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
			p.addf("status %d: the middleware refused a valid token (body %q)", a.status, a.body)
		}
	}
	rows := []row{
		{"a valid token with the scope", mk("Bearer " + good), good, passes},
		{"no token", mk(), "", bare},
		{"another scheme (Basic)", mk("Basic dGVzdDp0ZXN0"), "", bare},
		{"Bearer with nothing after it", mk("Bearer"), "", bare},
		{"a token in the query only", query, good, bare},
		{"two Authorization headers", mk("Bearer "+good, "Bearer "+good), good, func(p *problems, a answer) {
			p.oauthError(a, http.StatusBadRequest, "invalid_request")
		}},
		{"an expired token", mk("Bearer " + i.ExpiredToken(t, need...)), "", invalid},
		{"a token not yet valid", mk("Bearer " + i.NotYetValidToken(t, need...)), "", invalid},
		{"a tampered token", mk("Bearer " + i.TamperedToken(t, need...)), "", invalid},
		{"a token signed by an unknown key", mk("Bearer " + i.UnknownKeyToken(t, need...)), "", invalid},
		{"an unsigned token (alg none)", mk("Bearer " + i.AlgNoneToken(t, need...)), "", invalid},
		{"a token of another issuer", mk("Bearer " + i.WrongIssuerToken(t, need...)), "", invalid},
		{"a token for another audience", mk("Bearer " + i.WrongAudienceToken(t, need...)), "", invalid},
		// Bound to a DPoP key (RFC 9449): as a bearer token, probably stolen.
		{"a token bound to a key (cnf)", mk("Bearer " + i.BoundToken(t, need...)), "", invalid},
	}
	lacksScope := func(p *problems, a answer) {
		m := p.oauthError(a, http.StatusForbidden, "insufficient_scope")
		if a.status != http.StatusForbidden {
			return
		}
		ch := a.header.Get("WWW-Authenticate")
		for _, s := range need {
			if !strings.Contains(ch, s) {
				p.addf("WWW-Authenticate %q does not name the scope %s in scope=", ch, s)
			}
		}
		if m != nil && m["scope"] == nil {
			p.addf("body %q has no \"scope\"", a.body)
		}
	}
	if len(need) > 0 {
		wrongScope := i.Token(t, i.otherScope(need))
		rows = append(rows, row{"a token without the route's scope", mk("Bearer " + wrongScope), wrongScope, lacksScope})
	}
	// Reference tokens: a route that accepts them (i.ValidatorWithReferences)
	// gets their cases; one that does not must refuse them as invalid.
	refScopes := need
	if len(refScopes) == 0 {
		refScopes = []string{i.otherScope(nil)} // the issuer gives no token without a scope
	}
	ref := i.ReferenceToken(t, refScopes...)
	if probe := serve(h, mk("Bearer "+ref)); probe.status == http.StatusUnauthorized {
		rows = append(rows, row{"a reference token, on a route that takes JWTs only", mk("Bearer " + ref), ref, invalid})
	} else {
		rows = append(rows,
			row{"a valid reference token with the scope", mk("Bearer " + ref), ref, passes},
			row{"a revoked reference token", mk("Bearer " + i.RevokedReferenceToken(t, refScopes...)), "", invalid})
		if len(need) > 0 {
			otherRef := i.ReferenceToken(t, i.otherScope(need))
			rows = append(rows, row{"a reference token without the route's scope", mk("Bearer " + otherRef), otherRef, lacksScope})
		}
	}
	for _, r := range rows {
		if r.token == "" {
			r.token = strings.TrimPrefix(r.req.Header.Get("Authorization"), "Bearer ")
		}
		a := serve(h, r.req)
		var p problems
		r.check(&p, a)
		p.refusal(a, r.token)
		if also != nil {
			also(&p, a)
		}
		for _, msg := range p {
			t.Errorf("%s: %s: %s", label, r.name, msg)
		}
	}
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
	if a := serve(h, newRequest(t, path, "Bearer "+token)); a.status == http.StatusUnauthorized || a.status == http.StatusForbidden || a.status == http.StatusTooManyRequests {
		t.Errorf("CheckSCIM %s: the tenant's token: status %d, want past SCIMAuth (body %q)", path, a.status, a.body)
	}
	var first *answer
	for _, r := range []struct {
		name string
		req  *http.Request
	}{
		{"no token", newRequest(t, path)},
		{"another scheme (Basic)", newRequest(t, path, "Basic dGVzdDp0ZXN0")},
		{"a wrong token", newRequest(t, path, "Bearer "+token+"x")},
		{"the token on an unknown tenant", newRequest(t, strings.ReplaceAll(route, "{tenant}", tenant+"-unknown-tenant"), "Bearer "+token)},
	} {
		a := serve(h, r.req)
		var p problems
		if a.status != http.StatusUnauthorized {
			p.addf("status %d, want 401", a.status)
		}
		if ct := a.header.Get("Content-Type"); ct != "application/scim+json" {
			p.addf("Content-Type %q, want application/scim+json", ct)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(a.body), &m); err != nil || m["status"] != "401" {
			p.addf("body %q, want a SCIM error with \"status\":\"401\"", a.body)
		}
		if ch := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer realm=") {
			p.addf("WWW-Authenticate %q, want a Bearer challenge", ch)
		}
		if first == nil {
			first = &a
		} else if a.body != first.body {
			p.addf("body %q differs from the no-token answer %q: refusals must not tell cases apart", a.body, first.body)
		}
		echoes(&p, a, token)
		for _, msg := range p {
			t.Errorf("CheckSCIM %s: %s: %s", path, r.name, msg)
		}
	}
}
