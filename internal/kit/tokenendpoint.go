package kit

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// multipleResources is IdentityServer's error_description for a token
// request with several resource parameters.
const multipleResources = "Multiple resource indicators not supported on token endpoint."

// TokenEndpoint is the table of a token endpoint under profile ("rfc" or
// "identityserver": docs/CONTRACT.md §2.1), sent to path (the token
// endpoint's, on the sender's origin): an unknown client and a wrong
// secret (by HTTP Basic), no credentials, no grant_type, two resources,
// openid asked, and no scope; for every error, its status, its error
// code, its error_description where the profile fixes one, whether it
// carries a WWW-Authenticate, and Cache-Control: no-store. clientID and
// secret are a registered client's, allowed scope and client_credentials;
// the two resources asked for are of nobody's. It sends the client's
// secret wrong once.
func TokenEndpoint(path, clientID, secret, profile, scope string) []Case {
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
	admin := scope
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
	cases := make([]Case, 0, len(rows))
	for _, row := range rows {
		req := Request{Method: http.MethodPost, Path: path, Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, Body: row.form.Encode()}
		if row.authz != "" {
			req.Header.Set("Authorization", row.authz)
		}
		w := row.want
		cases = append(cases, Case{Name: row.name, Req: req, OwnChecks: true, Check: func(p *Problems, a Answer) {
			var got map[string]any
			_ = json.Unmarshal([]byte(a.Body), &got)
			switch {
			case a.Status != w.status:
				p.Addf("status %d, want %d (body %q)", a.Status, w.status, a.Body)
			case w.status == 200:
			default:
				if got["error"] != w.code {
					p.Addf("error %v, want %q", got["error"], w.code)
				}
				desc, hasDesc := got["error_description"]
				if w.noDesc && hasDesc {
					p.Addf("error_description %q, want none", desc)
				}
				if w.desc != "" && desc != w.desc {
					p.Addf("error_description %v, want %q", desc, w.desc)
				}
				if w.notDesc != "" && desc == w.notDesc {
					p.Addf("error_description %q: IdentityServer's refusal of several resources, where each resource is refused on its own", desc)
				}
				if ch := a.Header.Get("WWW-Authenticate"); (ch != "") != w.challenge {
					p.Addf("WWW-Authenticate %q, want %s", ch, map[bool]string{true: "a Basic challenge", false: "none"}[w.challenge])
				}
				if cc := a.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
					p.Addf("Cache-Control %q, want no-store", cc)
				}
			}
		}})
	}
	return cases
}
