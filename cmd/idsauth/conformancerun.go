package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/kit"
)

// runResource runs the tables of a protected route at f.target, and for
// gate those of a gate in front of one.
func runResource(ctx context.Context, f conformanceFlags, cfg client.Config, gate bool) (*report, error) {
	origin, route, err := splitTarget(f.target, f.method)
	if err != nil {
		return nil, err
	}
	need := strings.Fields(f.scopes)
	meta, err := discoverIssuer(ctx, cfg.HTTPClient, f.issuer)
	if err != nil {
		return nil, err
	}
	cfg.TokenURL = meta.TokenEndpoint
	rt, err := newRunnerTokens(ctx, cfg, meta, f.otherScope)
	if err != nil {
		return nil, err
	}
	if g := rt.Good(need); g.Skip != "" {
		return nil, fmt.Errorf("%s (-scope %s)", g.Skip, f.scopes)
	}
	s := &kit.HTTP{Origin: origin, Client: apiClient(cfg.HTTPClient)}
	probe, err := s.Send(kit.NewRequest(route))
	if err != nil {
		return nil, fmt.Errorf("the API at %s: %w", f.target, err)
	}
	rep := &report{Target: f.target}
	bearer := kit.Protected(rt, s, route, need)
	if gate {
		proxyMayRefuse(bearer, "two Authorization headers")
	}
	rep.add("bearer", s, bearer)
	rep.add("metadata", s, metadataCases(probe, f.target, meta.Issuer, need, apiClient(cfg.HTTPClient)(nil)))
	if hasScheme(probe, "DPoP") {
		tok, _ := rt.DPoP(need)
		mode, _, err := kit.DetectDPoP(s, route, origin, tok)
		if err != nil {
			return nil, err
		}
		rep.add("dpop", s, kit.DPoP(rt, s, mode, route, need))
	} else {
		rep.add("dpop", s, []kit.Case{{Name: "DPoP-bound tokens", Skip: "the route offers no DPoP: its answer without a token has no DPoP challenge"}})
	}
	rep.add("mtls", s, kit.MTLS(rt, nil, route, need, ""))
	if gate {
		rep.add("gate", s, gateCases(rt, route, need))
	}
	return rep, nil
}

// proxyMayRefuse lets the proxy in front of a gate answer the case name
// with a 400 of its own, before it asks the gate: nginx refuses a
// request with two Authorization headers so ("client sent duplicate
// header line"). The contract's answer passes too; the answer must still
// be a 400, and echo nothing of the token.
func proxyMayRefuse(cases []kit.Case, name string) {
	for i := range cases {
		c := &cases[i]
		if c.Name != name {
			continue
		}
		check, token := c.Check, c.Token
		c.OwnChecks = true
		c.Check = func(p *kit.Problems, a kit.Answer) {
			if a.Status == http.StatusBadRequest && !strings.HasPrefix(strings.TrimSpace(a.Body), "{") && a.Header.Get("WWW-Authenticate") == "" {
				p.Echoes(a, token) // the proxy's own refusal
				return
			}
			check(p, a)
			if cc := a.Header.Get("Cache-Control"); cc != "no-store" {
				p.Addf("Cache-Control %q, want no-store", cc)
			}
			p.Echoes(a, token)
		}
	}
}

// hasScheme reports whether a's challenges offer scheme.
func hasScheme(a kit.Answer, scheme string) bool {
	return slices.ContainsFunc(a.Header.Values("WWW-Authenticate"), func(ch string) bool { return strings.HasPrefix(ch, scheme+" ") })
}

var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]*)"`)

// metadataCases check the RFC 9728 document the 401 to a request without
// a token names: that it is the document of the URL called (§3.3: a
// client keeps a document only if its "resource" is that URL), and what
// it says: the issuer among authorization_servers, the route's scopes,
// the Authorization header as the way to send a token.
func metadataCases(probe kit.Answer, called, issuer string, need []string, hc *http.Client) []kit.Case {
	m := resourceMetadataParam.FindStringSubmatch(strings.Join(probe.Header.Values("WWW-Authenticate"), ", "))
	if m == nil {
		return []kit.Case{{Name: "RFC 9728 metadata named in the challenge", Skip: "the challenge names no resource_metadata (RFC 9728 §5.1): nothing to check"}}
	}
	u, _ := url.Parse(called)
	resource := u.Scheme + "://" + u.Host + u.EscapedPath()
	want := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + u.EscapedPath()
	named := kit.Case{Name: "the challenge names the document of the URL called", Got: &probe, Check: func(p *kit.Problems, a kit.Answer) {
		if m[1] != want {
			p.Addf("resource_metadata %q, want %q (RFC 9728 §3.1)", m[1], want)
		}
	}}
	doc := kit.Case{Name: "the document says the URL called is its resource", OwnChecks: true}
	var a kit.Answer
	resp, err := hc.Get(m[1])
	if err != nil {
		doc.Skip = "fetching " + m[1] + ": " + err.Error()
		return []kit.Case{named, doc}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a = kit.Answer{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
	doc.Got = &a
	doc.Check = func(p *kit.Problems, a kit.Answer) {
		var d struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			Scopes               []string `json:"scopes_supported"`
			BearerMethods        []string `json:"bearer_methods_supported"`
		}
		if a.Status != http.StatusOK || json.Unmarshal([]byte(a.Body), &d) != nil {
			p.Addf("status %d, body %q: want 200 with the JSON document", a.Status, a.Body)
			return
		}
		if d.Resource != resource {
			p.Addf("resource %q, want the URL called, %q (RFC 9728 §3.3)", d.Resource, resource)
		}
		if !slices.Contains(d.AuthorizationServers, issuer) {
			p.Addf("authorization_servers %q, without the issuer %q", d.AuthorizationServers, issuer)
		}
		for _, s := range need {
			if len(d.Scopes) > 0 && !slices.Contains(d.Scopes, s) {
				p.Addf("scopes_supported %q, without the route's %s", d.Scopes, s)
			}
		}
		if len(d.BearerMethods) > 0 && !slices.Contains(d.BearerMethods, "header") {
			p.Addf("bearer_methods_supported %q, without header", d.BearerMethods)
		}
	}
	return []kit.Case{named, doc}
}

// gateCases are what a gate in front of a route adds to its contract:
// the request a proxy asks about is the one the client made, whatever
// forwarding headers the client wrote; and the route's path, written
// other ways (dot segments, empty segments, escapes), never reaches the
// upstream without a token.
func gateCases(tk *runnerTokens, route string, need []string) []kit.Case {
	method, path := splitRouteOf(route)
	spoof := func(r kit.Request) kit.Request {
		r.Header.Set("X-Forwarded-Uri", "/")
		r.Header.Set("X-Forwarded-Method", "OPTIONS")
		r.Header.Set("X-Forwarded-Host", "public.conformance.invalid")
		r.Header.Set("X-Original-Uri", "/")
		r.Header.Set("X-Original-Method", "OPTIONS")
		return r
	}
	good := tk.Good(need)
	cases := []kit.Case{
		{Name: "no token, and forwarding headers of the client's own", Req: spoof(kit.NewRequest(route)), Check: func(p *kit.Problems, a kit.Answer) { p.BareChallenge(a) }},
	}
	withToken := kit.Case{Name: "a valid token, and forwarding headers of the client's own", Source: good.Source, Skip: good.Skip, Token: good.Value,
		Check: func(p *kit.Problems, a kit.Answer) { p.Passes(a) }}
	if good.Skip == "" {
		withToken.Req = spoof(kit.NewRequest(route, "Bearer "+good.Value))
	}
	cases = append(cases, withToken)
	p, query, _ := strings.Cut(path, "?")
	if query != "" {
		query = "?" + query
	}
	last := p[strings.LastIndexByte(p, '/')+1:]
	for _, v := range []struct{ name, path string }{
		{"a dot segment", strings.Replace(p, "/", "/./", 1)},
		{"an empty segment", "/" + p},
		{"a detour through ..", "/conformance-detour/.." + p},
		{"an escaped detour (%2e%2e)", "/conformance-detour/%2e%2e" + p},
		{"an escaped slash", strings.TrimSuffix(p, "/"+last) + "%2F" + last},
		{"a backslash", strings.TrimSuffix(p, "/"+last) + "%5C" + last},
		{"a trailing dot segment", p + "/."},
	} {
		if v.path == p || v.path == "" {
			continue
		}
		cases = append(cases, kit.Case{Name: "no token, the path as " + v.name + ": " + v.path,
			Req: kit.NewRequest(method + " " + v.path + query), Check: func(p *kit.Problems, a kit.Answer) {
				if a.Status < 300 {
					p.Addf("status %d: a request without a token reached the upstream (body %q)", a.Status, a.Body)
				}
			}})
	}
	return cases
}

func splitRouteOf(route string) (method, path string) {
	method, path, _ = strings.Cut(route, " ")
	return method, path
}
