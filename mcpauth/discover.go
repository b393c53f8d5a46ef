package mcpauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/rpcauth"
)

// DiscoveryError is why a client found no way to a token for an MCP
// endpoint that answered 401: its resource metadata (RFC 9728) or its
// authorization server's (RFC 8414) could not be had, or did not hold
// together. No token request was made.
type DiscoveryError struct {
	Resource string // the endpoint called, without its query
	Reason   string // fixed text: "resource metadata names another resource", ...
	Err      error  // the underlying error, if any
}

func (e *DiscoveryError) Error() string {
	s := "mcpauth: no authorization server for " + e.Resource + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DiscoveryError) Unwrap() error { return e.Err }

// The reasons of a DiscoveryError.
const (
	reasonMetadata     = "no protected resource metadata"
	reasonMismatch     = "resource metadata names another resource"
	reasonNoServer     = "resource metadata names no authorization server"
	reasonServer       = "no authorization server metadata"
	reasonIssuer       = "authorization server is not the configured issuer"
	reasonInsecure     = "an endpoint is neither https nor on loopback"
	maxDocumentBytes   = 1 << 20
	documentFetchLimit = 10 * time.Second
)

// resourceMetadata is what a client reads of an RFC 9728 document.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is what a client reads of an RFC 8414 document.
type serverMetadata struct {
	Issuer              string   `json:"issuer"`
	TokenEndpoint       string   `json:"token_endpoint"`
	AuthMethods         []string `json:"token_endpoint_auth_methods_supported"`
	MTLSEndpointAliases struct {
		TokenEndpoint string `json:"token_endpoint"`
	} `json:"mtls_endpoint_aliases"`
}

// discovered is where and how an endpoint's tokens are asked for.
type discovered struct {
	resource string   // the endpoint, as its metadata names it
	scopes   []string // the challenge's, else the metadata's scopes_supported
	as       serverMetadata
}

// discover finds, from an endpoint's 401, its authorization server, as
// the MCP specification has a client do: the challenge's
// resource_metadata, or the well-known URLs of the endpoint (path
// inserted, then the root); that document's resource must be the URL
// called; its first authorization server's metadata (RFC 8414 path
// insertion, OpenID Connect discovery inserted and appended) must name
// that server as its issuer. Every URL is https or on loopback.
func discover(ctx context.Context, hc *http.Client, called *url.URL, challenges []string, issuer string) (*discovered, error) {
	resource := resourceOf(called)
	fail := func(reason string, err error) error {
		return &DiscoveryError{Resource: resource, Reason: reason, Err: err}
	}
	params := challengeParams(challenges)
	var urls []string
	if md := params["resource_metadata"]; md != "" {
		urls = append(urls, md)
	}
	root := called.Scheme + "://" + called.Host
	if p := strings.TrimSuffix(called.EscapedPath(), "/"); p != "" {
		urls = append(urls, root+"/.well-known/oauth-protected-resource"+p)
	}
	urls = append(urls, root+"/.well-known/oauth-protected-resource")
	var prm *resourceMetadata
	var lastErr error
	for _, u := range urls {
		var doc resourceMetadata
		if lastErr = fetchJSON(ctx, hc, u, &doc); lastErr == nil {
			prm = &doc
			break
		}
	}
	if prm == nil {
		return nil, fail(reasonMetadata, lastErr)
	}
	if !sameResource(prm.Resource, resource) {
		return nil, fail(reasonMismatch, fmt.Errorf("it names %q", prm.Resource))
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, fail(reasonNoServer, nil)
	}
	asURL := prm.AuthorizationServers[0]
	if issuer != "" {
		if i := slices.IndexFunc(prm.AuthorizationServers, func(s string) bool { return sameIssuer(s, issuer) }); i >= 0 {
			asURL = prm.AuthorizationServers[i]
		} else {
			return nil, fail(reasonIssuer, fmt.Errorf("it names %q", prm.AuthorizationServers))
		}
	}
	var asm *serverMetadata
	for _, u := range serverMetadataURLs(asURL) {
		var doc serverMetadata
		if lastErr = fetchJSON(ctx, hc, u, &doc); lastErr != nil {
			continue
		}
		if !sameIssuer(doc.Issuer, asURL) {
			lastErr = fmt.Errorf("%s names the issuer %q", u, doc.Issuer)
			continue
		}
		asm = &doc
		break
	}
	if asm == nil {
		return nil, fail(reasonServer, lastErr)
	}
	for _, u := range []string{asm.TokenEndpoint, asm.MTLSEndpointAliases.TokenEndpoint} {
		if u != "" && !secureURL(u) {
			return nil, fail(reasonInsecure, fmt.Errorf("the token endpoint %q", u))
		}
	}
	if asm.TokenEndpoint == "" {
		return nil, fail(reasonServer, fmt.Errorf("no token_endpoint"))
	}
	d := &discovered{resource: resource, as: *asm, scopes: strings.Fields(params["scope"])}
	if len(d.scopes) == 0 {
		d.scopes = prm.ScopesSupported
	}
	return d, nil
}

// serverMetadataURLs are where an authorization server's metadata may
// be, in the MCP specification's order: RFC 8414 with the well-known
// path inserted, OpenID Connect discovery inserted, and appended.
func serverMetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil
	}
	root, p := u.Scheme+"://"+u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{root + "/.well-known/oauth-authorization-server", root + "/.well-known/openid-configuration"}
	}
	return []string{
		root + "/.well-known/oauth-authorization-server" + p,
		root + "/.well-known/openid-configuration" + p,
		root + p + "/.well-known/openid-configuration",
	}
}

// fetchJSON gets u, which must be https or on loopback, and decodes at
// most maxDocumentBytes of its 200 answer into v.
func fetchJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	if !secureURL(u) {
		return fmt.Errorf("%s: neither https nor on loopback", u)
	}
	ctx, cancel := context.WithTimeout(ctx, documentFetchLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocumentBytes)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

// secureURL reports whether u is https, or http to a loopback address
// or localhost.
func secureURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	return p.Scheme == "https" || (p.Scheme == "http" && rpcauth.Loopback(p.Host))
}

// resourceOf is the URL called as a resource identifier: without query
// or fragment (RFC 8707 §2).
func resourceOf(u *url.URL) string {
	r := *u
	r.RawQuery, r.ForceQuery, r.Fragment, r.RawFragment, r.User = "", false, "", "", nil
	return r.String()
}

// sameResource reports whether a metadata document's resource is the
// URL called (RFC 9728 §3.3): identical, but for the case of the scheme
// and host, and a trailing slash.
func sameResource(named, called string) bool {
	a, err1 := url.Parse(named)
	b, err2 := url.Parse(called)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host) &&
		strings.TrimSuffix(a.EscapedPath(), "/") == strings.TrimSuffix(b.EscapedPath(), "/") && a.RawQuery == "" && a.Fragment == ""
}

// sameIssuer compares issuer identifiers, a trailing slash aside.
func sameIssuer(a, b string) bool { return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/") }

// challengeParams returns the parameters of the challenges (RFC 9110
// §11.6.1) as name to value, the first of each name: resource_metadata
// and scope are all a client reads.
func challengeParams(challenges []string) map[string]string {
	out := map[string]string{}
	for _, c := range challenges {
		for len(c) > 0 {
			c = strings.TrimLeft(c, " ,")
			eq := strings.IndexByte(c, '=')
			sp := strings.IndexByte(c, ' ')
			if eq < 0 {
				break
			}
			if sp >= 0 && sp < eq { // a scheme name before the first parameter
				c = c[sp+1:]
				continue
			}
			name := strings.ToLower(strings.TrimSpace(c[:eq]))
			c = c[eq+1:]
			var val string
			if strings.HasPrefix(c, `"`) {
				var b strings.Builder
				i := 1
				for ; i < len(c) && c[i] != '"'; i++ {
					if c[i] == '\\' && i+1 < len(c) {
						i++
					}
					b.WriteByte(c[i])
				}
				val, c = b.String(), c[min(i+1, len(c)):]
			} else {
				end := strings.IndexAny(c, ", ")
				if end < 0 {
					end = len(c)
				}
				val, c = c[:end], c[end:]
			}
			if _, seen := out[name]; !seen {
				out[name] = val
			}
		}
	}
	return out
}
