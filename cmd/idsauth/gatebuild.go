package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/assertion"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/observe"
)

// gateEngine is one configuration of the gate, compiled: what a reload
// replaces at once. It holds the routes' handler chains, each the
// middleware's own (RequireBearer and RequireScope), so that the gate's
// answers are the middleware's, byte for byte.
type gateEngine struct {
	routes  []*gateRoute
	trusted []netip.Prefix
	scheme  string
	fold    bool
	// certHeader is the forwarded certificate's header, canonical; ""
	// without one.
	certHeader string
	upstream   *upstreamHeaders
	decisions  *decisionCache      // the upstream headers of decisions to admit
	jwks       []*accesstoken.JWKS // the issuers' key sets, for readiness
	gateKeys   []byte              // the assertion's JWKS; nil without one
	stop       context.CancelFunc  // ends the key sets' refreshes
}

// gateRoute is a route, compiled.
type gateRoute struct {
	name, host, prefix string
	methods            []string
	chain              http.Handler // PublicOrigin, RequireBearer, RequireScope, the 200
	metadata           http.Handler // its RFC 9728 documents
}

// gateShared is what outlives a reload: the replay memory of the proofs
// (a new one would take a proof again), and nginx's kept refusals. The
// decisions' upstream headers are an engine's own: a reload may name
// other claims, or sign with another key.
type gateShared struct {
	dpop    *middleware.DPoP // nil without DPoP
	dpopCfg string           // the dpop section it was made of, as JSON
	answers *answerMemory
}

// buildGate compiles cfg. The key sets are fetched once before it
// returns, and refreshed until the engine's stop.
func buildGate(cfg *gateConfig, shared *gateShared, obs *gateObserve) (_ *gateEngine, err error) {
	trusted, err := cfg.prefixes()
	if err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			stop()
		}
	}()
	e := &gateEngine{trusted: trusted, scheme: cfg.Scheme, fold: cfg.CaseInsensitivePaths, stop: stop, decisions: newDecisionCache()}
	if e.scheme == "" {
		e.scheme = "https"
	}
	if e.upstream, e.gateKeys, err = newUpstreamHeaders(cfg); err != nil {
		return nil, err
	}
	issuers := make([]builtIssuer, len(cfg.Issuers))
	for i, is := range cfg.Issuers {
		if issuers[i], err = buildIssuer(life, cfg, is, obs); err != nil {
			return nil, fmt.Errorf("issuers[%d]: %w", i, err)
		}
		if issuers[i].jwks != nil {
			e.jwks = append(e.jwks, issuers[i].jwks)
		}
	}
	var fwd *middleware.ForwardedCert
	if cfg.Certificates != nil {
		fwd = &middleware.ForwardedCert{Header: cfg.Certificates.Header, TrustedProxies: trusted}
		e.certHeader = http.CanonicalHeaderKey(cfg.Certificates.Header)
	}
	for i := range cfg.Routes {
		r, err := buildRoute(life, cfg, &cfg.Routes[i], e, issuers, shared, fwd, obs)
		if err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		e.routes = append(e.routes, r)
	}
	return e, nil
}

// builtIssuer is an issuer's keys and introspection, ready for the
// routes' validators.
type builtIssuer struct {
	issuer string
	jwks   *accesstoken.JWKS
	intro  *accesstoken.Introspection
}

func buildIssuer(life context.Context, cfg *gateConfig, is gateIssuer, obs *gateObserve) (builtIssuer, error) {
	b := builtIssuer{issuer: is.Issuer}
	hc, err := issuerClient(cfg, is)
	if err != nil {
		return b, err
	}
	if is.JWKS != "" {
		jc := accesstoken.JWKSConfig{HTTPClient: hc, Logger: obs.logger, Observer: obs.metrics}
		if is.JWKS == "discover" {
			jc.Issuer = is.Issuer
		} else {
			jc.URL = is.JWKS
		}
		// Fetched once before NewJWKS returns, within its timeout, then
		// refreshed until the engine is replaced.
		if b.jwks, err = accesstoken.NewJWKS(life, jc); err != nil {
			return b, fmt.Errorf("jwks: %w", err)
		}
	}
	if in := is.Introspection; in != nil {
		secret, err := gateSecret(cfg, in.SecretFile, in.SecretEnv)
		if err != nil {
			return b, fmt.Errorf("introspection: %w", err)
		}
		b.intro = &accesstoken.Introspection{Endpoint: in.Endpoint, ClientID: in.ClientID, ClientSecret: secret, HTTPClient: hc}
		switch {
		case cfg.CacheSeconds < 0:
			b.intro.CacheBytes, b.intro.InactiveCacheMaxAge = -1, -1
		case cfg.CacheSeconds > 0:
			b.intro.CacheMaxAge = time.Duration(cfg.CacheSeconds) * time.Second
		}
	}
	return b, nil
}

// issuerClient is the HTTP client that reaches an issuer, trusting its
// caFile when it has one.
func issuerClient(cfg *gateConfig, is gateIssuer) (*http.Client, error) {
	if is.CAFile == "" {
		return &http.Client{}, nil
	}
	pem, err := os.ReadFile(cfg.path(is.CAFile))
	if err != nil {
		return nil, fmt.Errorf("caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("caFile: %s holds no PEM certificate", is.CAFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

// gateSecret reads a secret from a file (a trailing newline dropped) or
// the environment.
func gateSecret(cfg *gateConfig, file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(cfg.path(file))
		if err != nil {
			return "", fmt.Errorf("secretFile: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	s := os.Getenv(env)
	if s == "" {
		return "", fmt.Errorf("secretEnv: %s is empty or unset", env)
	}
	return s, nil
}

// buildRoute compiles a route: its validator, its metadata, its chain.
func buildRoute(life context.Context, cfg *gateConfig, rc *gateRouteConfig, e *gateEngine, issuers []builtIssuer, shared *gateShared,
	fwd *middleware.ForwardedCert, obs *gateObserve) (_ *gateRoute, err error) {
	audience := rc.Audience
	if rc.Resource != "" {
		audience = []string{rc.Resource}
	}
	vc := accesstoken.Config{Logger: obs.logger, Observer: obs.metrics}
	switch {
	case cfg.CacheSeconds < 0:
		vc.CacheSize = -1
	case cfg.CacheSeconds > 0:
		vc.CacheMaxAge = time.Duration(cfg.CacheSeconds) * time.Second
	}
	var servers []string
	if len(issuers) == 1 {
		vc.Issuer, vc.Audience, vc.Introspection = issuers[0].issuer, audience, issuers[0].intro
		if issuers[0].jwks != nil {
			vc.Keys = issuers[0].jwks
		}
		servers = []string{issuers[0].issuer}
	} else {
		for _, b := range issuers {
			vc.Issuers = append(vc.Issuers, accesstoken.TrustedIssuer{Issuer: b.issuer, Audience: audience, Keys: b.jwks})
			servers = append(servers, b.issuer)
		}
	}
	v, err := accesstoken.New(life, vc)
	if err != nil {
		return nil, err
	}
	origin := e.scheme + "://" + strings.ToLower(rc.Host)
	r := &gateRoute{name: rc.name(), host: rc.Host, prefix: rc.prefix(), methods: rc.Methods}
	md := middleware.ResourceMetadata{Resource: rc.Resource, AuthorizationServers: servers, ScopesSupported: rc.Scopes,
		TLSClientCertificateBoundAccessTokens: fwd != nil}
	if md.Resource == "" {
		md.Resource = origin + strings.TrimSuffix(r.prefix, "/")
	}
	if shared.dpop != nil {
		md.DPoPSigningAlgValuesSupported = middleware.DPoPAlgorithms()
		md.DPoPBoundAccessTokensRequired = cfg.DPoP.Required
	}
	if r.metadata, err = md.Handler(); err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	defer func() {
		// The middleware panics on what it cannot work with (a scope name
		// that no token can carry, say): a configuration error here.
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	bc := middleware.BearerConfig{Realm: cfg.Realm, DPoP: shared.dpop, ForwardedCert: fwd, ResourceMetadata: &md, Observer: obs.metrics, Logger: obs.logger}
	final := e.upstream.handler(r.name, e.decisions, obs)
	r.chain = middleware.PublicOrigin(origin)(middleware.RequireBearerWithConfig(v, bc)(middleware.RequireScope(rc.Scopes...)(final)))
	return r, nil
}

// newDPoP makes the DPoP checker of the configuration, or nil without a
// dpop section; replays is the shared store of the proofs' jtis, nil
// for this process's memory.
func newDPoP(cfg *gateConfig, replays limit.ReplayStore) (*middleware.DPoP, error) {
	d := cfg.DPoP
	if d == nil {
		return nil, nil
	}
	scheme := cfg.Scheme
	if scheme == "" {
		scheme = "https"
	}
	dc := middleware.DPoPConfig{
		Required: d.Required, RequireNonce: d.RequireNonce, Replays: replays,
		PublicURL:   scheme + "://" + strings.ToLower(cfg.Routes[0].Host), // each route's chain says its own (PublicOrigin)
		ProofMaxAge: time.Duration(d.ProofMaxAgeSeconds) * time.Second,
	}
	if d.JTI == "upstream" {
		dc.Replays = upstreamConsumes{&limit.Memory{}}
	}
	if d.NonceKeyFile != "" {
		key, err := os.ReadFile(cfg.path(d.NonceKeyFile))
		if err != nil {
			return nil, fmt.Errorf("dpop.nonceKeyFile: %w", err)
		}
		if len(key) < 32 {
			return nil, fmt.Errorf("dpop.nonceKeyFile: %d bytes: at least 32 (head -c 32 /dev/urandom > FILE)", len(key))
		}
		dc.NonceKey = key
	}
	return middleware.NewDPoP(dc)
}

// upstreamConsumes is the replay memory of a gate whose upstream
// consumes the proofs' jtis (dpop.jti "upstream"): it remembers none, so
// that the upstream, checking the same proof, finds it fresh. Every other
// check of the proof is the gate's.
type upstreamConsumes struct{ limit.Store }

func (upstreamConsumes) Remember(context.Context, limit.Replay) (bool, error) { return true, nil }

// loadAssertionKey reads the gate's own signing key.
func loadAssertionKey(cfg *gateConfig) (*assertion.Signer, error) {
	a := cfg.Assertion
	pem, err := os.ReadFile(cfg.path(a.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("assertion.keyFile: %w", err)
	}
	key, err := keys.ParsePEM(pem)
	if err != nil {
		return nil, fmt.Errorf("assertion.keyFile: %w", err)
	}
	return assertion.NewSigner(key, a.Issuer, time.Duration(a.LifetimeSeconds)*time.Second)
}

// gateObserve is where the engine's parts tell what happens.
type gateObserve struct {
	logger  *slog.Logger
	metrics observe.Observer
}
