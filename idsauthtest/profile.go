package idsauthtest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// multipleResources is IdentityServer's error_description for a token
// request with several resource parameters.
const multipleResources = "Multiple resource indicators not supported on token endpoint."

// CheckTokenEndpoint sends the token endpoint at tokenURL (this module's
// issuer, IdentityServer, or any other) the requests of IdentityServer's
// table (docs/CONTRACT.md §2.1) and reports with t.Errorf each answer that
// differs from profile's: an unknown client and a wrong secret (by HTTP
// Basic), no credentials, no grant_type, two resources, openid asked, and
// no scope; for every error, its status, its error code, its
// error_description where the profile fixes one, whether it carries a
// WWW-Authenticate, and Cache-Control: no-store. clientID and secret are
// a registered client's, allowed pd_AdminWebApi and client_credentials;
// the two resources asked for are of nobody's. Run it against your own
// deployment to see whether its clients can tell it from the product's
// IdentityServer. profile is "rfc" or "identityserver" (the issuer's
// Config.Profile). It sends the client's secret wrong once:
// on a live deployment, that is one failure on the client's budget.
func CheckTokenEndpoint(t TB, tokenURL, clientID, secret, profile string) {
	t.Helper()
	if profile != "rfc" && profile != "identityserver" {
		t.Fatalf(`idsauthtest: CheckTokenEndpoint: profile %q: want "rfc" or "identityserver"`, profile)
	}
	ids := profile == "identityserver"
	basic := func(id, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(pass)))
	}
	type want struct {
		status    int
		code      string
		desc      string // "" means any
		notDesc   string // a description the answer must not have
		noDesc    bool
		challenge bool
	}
	either := func(rfc, idsrv want) want {
		if ids {
			return idsrv
		}
		return rfc
	}
	const admin = "pd_AdminWebApi"
	rows := []struct {
		name  string
		form  url.Values
		authz string
		want  want
	}{
		{"an unknown client", url.Values{"grant_type": {"client_credentials"}, "scope": {admin}}, basic("idsauthtest-nobody", "x"),
			either(want{status: 401, code: "invalid_client", challenge: true}, want{status: 400, code: "invalid_client", noDesc: true})},
		{"a wrong secret", url.Values{"grant_type": {"client_credentials"}, "scope": {admin}}, basic(clientID, secret+"-wrong"),
			either(want{status: 401, code: "invalid_client", challenge: true}, want{status: 400, code: "invalid_client", noDesc: true})},
		{"no client credentials", url.Values{"grant_type": {"client_credentials"}, "scope": {admin}}, "",
			either(want{status: 401, code: "invalid_client"}, want{status: 400, code: "invalid_request"})},
		{"no grant_type", url.Values{"scope": {admin}}, basic(clientID, secret),
			either(want{status: 400, code: "invalid_request"}, want{status: 400, code: "unsupported_grant_type"})},
		{"two resources", url.Values{"grant_type": {"client_credentials"}, "scope": {admin}, "resource": {"https://nobody.test/a", "https://nobody.test/b"}}, basic(clientID, secret),
			either(want{status: 400, code: "invalid_target", notDesc: multipleResources}, want{status: 400, code: "invalid_target", desc: multipleResources})},
		{"openid asked", url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}}, basic(clientID, secret),
			want{status: 400, code: "invalid_scope"}},
		{"no scope", url.Values{"grant_type": {"client_credentials"}}, basic(clientID, secret),
			either(want{status: 400, code: "invalid_scope"}, want{status: 200})},
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, row := range rows {
		req, err := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(row.form.Encode()))
		if err != nil {
			t.Fatalf("idsauthtest: %v", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if row.authz != "" {
			req.Header.Set("Authorization", row.authz)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("CheckTokenEndpoint %s: %s: %v", profile, row.name, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		var got map[string]any
		_ = json.Unmarshal(body, &got)
		var p problems
		w := row.want
		switch {
		case resp.StatusCode != w.status:
			p.addf("status %d, want %d (body %q)", resp.StatusCode, w.status, body)
		case w.status == 200:
		default:
			if got["error"] != w.code {
				p.addf("error %v, want %q", got["error"], w.code)
			}
			desc, hasDesc := got["error_description"]
			if w.noDesc && hasDesc {
				p.addf("error_description %q, want none", desc)
			}
			if w.desc != "" && desc != w.desc {
				p.addf("error_description %v, want %q", desc, w.desc)
			}
			if w.notDesc != "" && desc == w.notDesc {
				p.addf("error_description %q: IdentityServer's refusal of several resources, where each resource is refused on its own", desc)
			}
			if ch := resp.Header.Get("WWW-Authenticate"); (ch != "") != w.challenge {
				p.addf("WWW-Authenticate %q, want %s", ch, map[bool]string{true: "a Basic challenge", false: "none"}[w.challenge])
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				p.addf("Cache-Control %q, want no-store", cc)
			}
		}
		for _, msg := range p {
			t.Errorf("CheckTokenEndpoint %s: %s: %s", profile, row.name, msg)
		}
	}
}
