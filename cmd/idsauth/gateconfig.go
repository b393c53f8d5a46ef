package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// gateConfig is the gate's configuration file (docs/GATEWAY.md).
type gateConfig struct {
	// Issuers are the authorization servers whose tokens the routes take.
	Issuers []gateIssuer `json:"issuers"`
	// Routes are what the gate decides for: a request no route covers is
	// refused.
	Routes []gateRouteConfig `json:"routes"`
	// TrustedProxies are the addresses the proxies ask from: their
	// X-Forwarded-* headers and the certificates they forward are read
	// from these alone.
	TrustedProxies []string `json:"trustedProxies"`
	// Scheme is how clients reach the routes' hosts, for DPoP's htu and
	// the RFC 9728 documents; empty means "https".
	Scheme string `json:"scheme,omitempty"`
	// Claims names, for each claim that goes upstream, the header of the
	// gate's 200 answer that carries it, such as {"client_id":
	// "X-Client-Id"}.
	Claims map[string]string `json:"claims,omitempty"`
	// DPoP, when set, takes DPoP-bound tokens with their proofs (RFC 9449).
	DPoP *gateDPoP `json:"dpop,omitempty"`
	// Certificates, when set, takes certificate-bound tokens (RFC 8705)
	// with the client certificate the trusted proxies forward in Header.
	Certificates *gateCertificates `json:"certificates,omitempty"`
	// Assertion, when set, signs an assertion for the upstream.
	Assertion *gateAssertion `json:"assertion,omitempty"`
	// Realm is the challenges' realm; empty means "idsauth".
	Realm string `json:"realm,omitempty"`
	// CacheSeconds bounds how long a decision (a token validated or
	// introspected, its answer's headers) is reused: zero means the
	// defaults (5 minutes for a JWT, 1 minute for an introspected token),
	// negative none.
	CacheSeconds int `json:"cacheSeconds,omitempty"`
	// CaseInsensitivePaths says that the upstreams ignore the case of a
	// path (IIS, say): the routes' prefixes are matched so too.
	CaseInsensitivePaths bool `json:"caseInsensitivePaths,omitempty"`

	dir string // the file's folder: relative paths are from it
}

// gateIssuer is one authorization server.
type gateIssuer struct {
	// Issuer is its "iss" (RFC 8414 or OpenID Connect).
	Issuer string `json:"issuer"`
	// JWKS is the URL of its key set, or "discover" to take the one its
	// metadata names (OpenID Connect discovery, else RFC 8414); empty
	// with Introspection: every token is introspected.
	JWKS string `json:"jwks,omitempty"`
	// Introspection, when set, checks its opaque tokens (RFC 7662).
	Introspection *gateIntrospection `json:"introspection,omitempty"`
	// CAFile holds the PEM CAs that its TLS certificate chains to; empty
	// means the system's.
	CAFile string `json:"caFile,omitempty"`
}

// gateIntrospection is an issuer's introspection endpoint and the gate's
// credentials there: the secret from a file or the environment, never
// the configuration.
type gateIntrospection struct {
	// Endpoint is its URL; empty means the one the issuer's metadata
	// names.
	Endpoint   string `json:"endpoint,omitempty"`
	ClientID   string `json:"clientId"`
	SecretFile string `json:"secretFile,omitempty"`
	SecretEnv  string `json:"secretEnv,omitempty"`

	// Secret and ClientSecret are refused: a secret in the file would be
	// in every copy of it.
	Secret       json.RawMessage `json:"secret,omitempty"`
	ClientSecret json.RawMessage `json:"clientSecret,omitempty"`
}

// gateRouteConfig is one route: the requests it covers and what they need.
type gateRouteConfig struct {
	// Name names the route: the assertion's "aud", in logs. Empty means
	// its host and path prefix.
	Name string `json:"name,omitempty"`
	// Host is the host (and port, when not the scheme's default) clients
	// address; required, matched without regard to case.
	Host string `json:"host"`
	// PathPrefix is the path the route covers, and every path under it,
	// segment by segment: "/orders" covers "/orders" and "/orders/1", not
	// "/ordersx". Empty means "/".
	PathPrefix string `json:"pathPrefix,omitempty"`
	// Methods are the methods it covers; empty means all.
	Methods []string `json:"methods,omitempty"`
	// Scopes are those a token needs, one of them at least; required.
	Scopes []string `json:"scopes"`
	// Audience is what the token's "aud" must hold, one of these; or
	// Resource, the RFC 8707 resource indicator the client asked its
	// token for (the "aud" the issuer gives it), which is the RFC 9728
	// document's "resource" too. One of the two is required.
	Audience []string `json:"audience,omitempty"`
	Resource string   `json:"resource,omitempty"`
}

// gateDPoP is how the routes take DPoP proofs.
type gateDPoP struct {
	// Required takes DPoP-bound tokens alone.
	Required bool `json:"required,omitempty"`
	// RequireNonce makes every proof carry the gate's nonce, given back
	// in DPoP-Nonce through the proxy.
	RequireNonce bool `json:"requireNonce,omitempty"`
	// NonceKeyFile holds the key the nonces are made with: every replica
	// given the same one gives and takes the same nonces. Empty means a
	// random key of this process's.
	NonceKeyFile string `json:"nonceKeyFile,omitempty"`
	// ProofMaxAgeSeconds is how old a proof may be; zero means 60.
	ProofMaxAgeSeconds int `json:"proofMaxAgeSeconds,omitempty"`
	// Replays, when set, remembers the proofs' jtis in a Redis that every
	// gate shares, as serve's tokenStore is written: {"redis": {...}}.
	// Empty means this process's memory.
	Replays *storeConfig `json:"replays,omitempty"`
	// JTI says who consumes a proof's jti: "gate" (the default: a proof
	// is taken once, here) or "upstream" (an upstream that checks the
	// proof too, with a replay memory of its own; the gate then checks
	// all but the replay).
	JTI string `json:"jti,omitempty"`
}

// gateCertificates is where the trusted proxies forward their clients'
// certificates.
type gateCertificates struct {
	// Header is the header, such as "X-Forwarded-Client-Cert" (Envoy's
	// XFCC), "Client-Cert" (RFC 9440) or nginx's "X-SSL-Cert".
	Header string `json:"header"`
}

// gateAssertion is the assertion the gate signs for the upstream.
type gateAssertion struct {
	// KeyFile is the gate's PEM private key (idsauth gen-key); its own,
	// never an issuer's.
	KeyFile string `json:"keyFile"`
	// Issuer is the assertion's "iss", such as "https://gate.example.com".
	Issuer string `json:"issuer"`
	// Header is the header of the 200 answer that carries it; empty
	// means "X-Idsauth-Assertion".
	Header string `json:"header,omitempty"`
	// LifetimeSeconds is how long it lives; zero means 30, at most 60.
	LifetimeSeconds int `json:"lifetimeSeconds,omitempty"`
}

// loadGateConfig reads the gate's file strictly: an unknown field, or
// anything after the object, is an error.
func loadGateConfig(path string) (*gateConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c gateConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, fmt.Errorf("%s: something follows the configuration object", path)
	}
	c.dir = filepath.Dir(path)
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// path is p, relative to the configuration file's folder unless absolute.
func (c *gateConfig) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// check checks what can be checked without the network.
func (c *gateConfig) check() error {
	if len(c.Issuers) == 0 {
		return errors.New("issuers: at least one")
	}
	seen := map[string]bool{}
	for i, is := range c.Issuers {
		field := fmt.Sprintf("issuers[%d]", i)
		if err := is.check(field, len(c.Issuers)); err != nil {
			return err
		}
		if seen[is.Issuer] {
			return fmt.Errorf("%s.issuer: %q is named twice", field, is.Issuer)
		}
		seen[is.Issuer] = true
	}
	if _, err := c.prefixes(); err != nil {
		return err
	}
	if strings.ContainsFunc(c.Realm, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) {
		return fmt.Errorf("realm: %q: printable ASCII without quotes or backslashes, as a challenge's quoted string holds it", c.Realm)
	}
	switch c.Scheme {
	case "", "https", "http":
	default:
		return fmt.Errorf("scheme: %q: want https or http", c.Scheme)
	}
	if len(c.Routes) == 0 {
		return errors.New("routes: at least one")
	}
	names := map[string]bool{}
	for i := range c.Routes {
		r := &c.Routes[i]
		if err := r.check(fmt.Sprintf("routes[%d]", i)); err != nil {
			return err
		}
		if names[r.name()] {
			return fmt.Errorf("routes[%d].name: %q is another route's", i, r.name())
		}
		names[r.name()] = true
	}
	for claim, header := range c.Claims {
		if err := checkHeaderName(header); err != nil {
			return fmt.Errorf("claims.%s: %w", claim, err)
		}
	}
	if d := c.DPoP; d != nil {
		switch {
		case d.JTI != "" && d.JTI != "gate" && d.JTI != "upstream":
			return fmt.Errorf("dpop.jti: %q: want \"gate\" or \"upstream\"", d.JTI)
		case d.ProofMaxAgeSeconds < 0:
			return errors.New("dpop.proofMaxAgeSeconds: negative")
		case d.Replays != nil && d.JTI == "upstream":
			return errors.New("dpop.replays: the gate remembers no jti where the upstream consumes it (jti \"upstream\")")
		}
		if d.Replays != nil {
			if err := d.Replays.check(); err != nil {
				return fmt.Errorf("dpop.replays.%w", err)
			}
		}
	}
	if ce := c.Certificates; ce != nil {
		prefixes, _ := c.prefixes()
		if _, err := clientcert.NewSource(ce.Header, prefixes); err != nil {
			return fmt.Errorf("certificates: %w (trustedProxies)", err)
		}
	}
	if a := c.Assertion; a != nil {
		switch {
		case a.KeyFile == "":
			return errors.New("assertion.keyFile: required (idsauth gen-key makes one: the gate's own, never an issuer's)")
		case a.Issuer == "":
			return errors.New("assertion.issuer: required (the assertion's iss, such as https://gate.example.com)")
		case a.LifetimeSeconds < 0 || a.LifetimeSeconds > 60:
			return fmt.Errorf("assertion.lifetimeSeconds: %d: at most 60", a.LifetimeSeconds)
		case seen[a.Issuer]:
			return fmt.Errorf("assertion.issuer: %q is an issuer's: the gate's assertions must never pass for its tokens", a.Issuer)
		}
		if a.Header != "" {
			if err := checkHeaderName(a.Header); err != nil {
				return fmt.Errorf("assertion.header: %w", err)
			}
		}
	}
	return nil
}

func (is gateIssuer) check(field string, issuers int) error {
	u, err := url.Parse(is.Issuer)
	switch {
	case is.Issuer == "" || err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil:
		return fmt.Errorf("%s.issuer: %q: want the issuer's URL, its \"iss\"", field, is.Issuer)
	case is.JWKS == "" && is.Introspection == nil:
		return fmt.Errorf("%s: give jwks (a URL, or \"discover\"), introspection, or both", field)
	case is.Introspection != nil && issuers > 1:
		return fmt.Errorf("%s.introspection: with several issuers, none introspects: an opaque token names no issuer to ask", field)
	}
	if is.JWKS != "" && is.JWKS != "discover" {
		if u, err := url.Parse(is.JWKS); err != nil || u.Host == "" || u.User != nil {
			return fmt.Errorf("%s.jwks: %q: want a URL, or \"discover\"", field, is.JWKS)
		}
	}
	if in := is.Introspection; in != nil {
		switch {
		case in.Secret != nil || in.ClientSecret != nil:
			return fmt.Errorf("%s.introspection: a secret is never written in the file: give secretFile or secretEnv", field)
		case in.ClientID == "":
			return fmt.Errorf("%s.introspection.clientId: required (the gate's name at the issuer)", field)
		case (in.SecretFile == "") == (in.SecretEnv == ""):
			return fmt.Errorf("%s.introspection: give secretFile or secretEnv, one of them", field)
		}
	}
	return nil
}

func (r *gateRouteConfig) check(field string) error {
	switch {
	case r.Host == "" || strings.ContainsAny(r.Host, "/?#@ ") || strings.Contains(r.Host, "://"):
		return fmt.Errorf("%s.host: %q: want the host (and port) clients address", field, r.Host)
	case r.PathPrefix != "" && (!strings.HasPrefix(r.PathPrefix, "/") || strings.ContainsAny(r.PathPrefix, "?#%\\") ||
		strings.Contains(r.PathPrefix+"/", "/./") || strings.Contains(r.PathPrefix+"/", "/../") || strings.Contains(r.PathPrefix, "//")):
		return fmt.Errorf("%s.pathPrefix: %q: want a plain path, starting with /", field, r.PathPrefix)
	case len(r.Scopes) == 0 || slices.Contains(r.Scopes, ""):
		return fmt.Errorf("%s.scopes: the scopes a token needs, one at least", field)
	case len(r.Audience) == 0 && r.Resource == "":
		return fmt.Errorf("%s: give audience or resource: the token's aud is always checked (RFC 9068 §4)", field)
	case len(r.Audience) > 0 && r.Resource != "":
		return fmt.Errorf("%s: audience and resource: give one", field)
	}
	for _, m := range r.Methods {
		if m == "" || strings.ToUpper(m) != m || strings.ContainsAny(m, " /") {
			return fmt.Errorf("%s.methods: %q: want a method in capitals", field, m)
		}
	}
	if r.Resource != "" {
		u, err := url.Parse(r.Resource)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return fmt.Errorf("%s.resource: %q: want an http(s) URL without query or fragment (RFC 8707 §2)", field, r.Resource)
		}
	}
	return nil
}

// name is the route's name, or its host and prefix.
func (r *gateRouteConfig) name() string {
	if r.Name != "" {
		return r.Name
	}
	return strings.ToLower(r.Host) + r.prefix()
}

// prefix is the route's path prefix, "/" when empty, without a trailing
// slash but for the root.
func (r *gateRouteConfig) prefix() string {
	p := strings.TrimSuffix(r.PathPrefix, "/")
	if p == "" {
		return "/"
	}
	return p
}

// prefixes are the trusted proxies' prefixes; an address alone is its
// own /32 or /128.
func (c *gateConfig) prefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.TrustedProxies))
	for i, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("trustedProxies[%d]: %q: want an address or a prefix, such as 10.0.0.0/8", i, s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

// checkHeaderName refuses what is no header name, and the headers the
// client sends that the gate reads.
func checkHeaderName(h string) error {
	switch {
	case h == "" || strings.Trim(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") != "":
		return fmt.Errorf("%q is not a header name", h)
	case slices.ContainsFunc([]string{"Authorization", "DPoP", "Cookie", "Host", "Content-Length", "Transfer-Encoding", "Connection",
		"X-Forwarded-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-For", "WWW-Authenticate", "Set-Cookie"},
		func(s string) bool { return strings.EqualFold(s, h) }):
		return fmt.Errorf("%q is a header the gate or the proxy reads for itself", h)
	}
	return nil
}
