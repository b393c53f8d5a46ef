package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/metrics"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// service holds the issuer, the validator and the in-memory data of the
// four API families.
type service struct {
	src     configSource
	logger  *slog.Logger
	iss     *issuer.Issuer
	tenants *middleware.Tenants
	v       accesstoken.TokenValidator // JWTs, and reference tokens when the configuration has an API resource
	// secrets checks client secrets and SCIM tokens alike, so one bound
	// on concurrent bcrypt checks and one failure floor cover both.
	secrets *secret.Verifier
	metrics *metrics.Metrics // every event of the issuer, validator and middleware

	mu      sync.Mutex // serializes reloads
	current *fileConfig

	// The stores hold the API families' data. Each guards its own state:
	// locks are taken inside store methods only, never by handlers, and
	// every store hands out copies (or, for the read-only admin store,
	// slices nobody writes).
	admin    *adminStore
	sessions *sessionStore
	scim     *scimStore
}

func newService(ctx context.Context, src configSource, logger *slog.Logger) (*service, error) {
	cfg, err := src.load()
	if err != nil {
		return nil, err
	}
	if src.file == "" {
		logger.Warn("using the embedded DEMO configuration: well-known secrets, development only")
	}
	tenants, err := cfg.tenants()
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	secrets := secret.NewVerifier(cfg.Verifier)
	iss, err := issuer.New(&cfg.Config, issuer.WithLogger(logger), issuer.WithVerifier(secrets), issuer.WithObserver(m))
	if err != nil {
		return nil, err
	}
	// The issuer is in this process: validate with its keys, no HTTP.
	// The audience is the issuer's default for its clients, the resource
	// these APIs are; a token minted for another audience is refused
	// (RFC 9068 §4).
	vc := accesstoken.Config{
		Issuer:   iss.URL(),
		Audience: []string{iss.URL() + "/resources"},
		Keys:     iss,
		Observer: m,
	}
	if len(cfg.APIResources) > 0 {
		// Reference tokens are checked in this process, as the first API
		// resource of the configuration: nothing on the wire, and no
		// cache, so that a revocation holds at the next request.
		api := cfg.APIResources[0].Name
		vc.Introspection = &accesstoken.Introspection{ClientID: api, Local: iss, CacheBytes: -1}
		logger.Info("the APIs accept reference tokens, introspected in this process", slog.String("api_resource", api))
	}
	tv, err := accesstoken.New(ctx, vc)
	if err != nil {
		return nil, err
	}
	return &service{
		src:      src,
		logger:   logger,
		iss:      iss,
		tenants:  tenants,
		v:        tv,
		secrets:  secrets,
		metrics:  m,
		current:  cfg,
		admin:    newAdminStore(),
		sessions: newSessionStore(maxSessionsPerClient),
		scim:     newSCIMStore(maxUsersPerTenant),
	}, nil
}

// routes wires the four API families behind their middleware.
func (s *service) routes() http.Handler {
	// The APIs take bearer and DPoP-bound tokens (RFC 9449), and every
	// challenge names the metadata (RFC 9728) of the URL called, whose
	// "resource" is that URL. The protected calls are under /webapi/api/v3
	// (SCIM, beside it, takes its tenants' tokens, not the issuer's). Their
	// public origin is the issuer's: the service serves both; the mutual
	// TLS listener gives them its own (middleware.PublicOrigin, in run).
	base := origin(s.iss.URL())
	md := &middleware.ResourceMetadata{
		Resource:                      base + "/webapi/api/v3",
		AuthorizationServers:          []string{s.iss.URL()},
		ScopesSupported:               scope.All(),
		DPoPSigningAlgValuesSupported: middleware.DPoPAlgorithms(),
		// Over the mutual TLS listener (-mtls-addr), a token bound to a
		// client certificate is taken with that certificate.
		TLSClientCertificateBoundAccessTokens: s.src.mtlsAlias != "",
	}
	mdHandler, _ := md.Handler()                                          // base is the issuer's origin: a URL
	dpop, _ := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: base}) // likewise
	bearer := alice.New(middleware.RequireBearerWithConfig(s.v, middleware.BearerConfig{
		Logger: s.logger, Observer: s.metrics,
		DPoP:             dpop,
		ResourceMetadata: md,
	}))
	admin := bearer.Append(middleware.RequireFamily(scope.Admin))
	connect := bearer.Append(middleware.RequireFamily(scope.Connect))
	session := bearer.Append(middleware.RequireFamily(scope.ConnectSession))
	scim := alice.New(middleware.SCIMAuthWithConfig(s.tenants, middleware.SCIMConfig{Logger: s.logger, Observer: s.metrics, Limits: s.current.Limits, Verifier: s.secrets}))

	mux := http.NewServeMux()
	mux.Handle("/ids/", s.iss)
	mux.Handle("/.well-known/oauth-protected-resource/", mdHandler)
	mux.Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler()) // RFC 8414
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })

	const api = "/webapi/api/v3/{datasourceId}"
	mux.Handle("GET "+api+"/Admin/Users", admin.ThenFunc(s.listUsers))
	mux.Handle("GET "+api+"/Admin/Groups", admin.ThenFunc(s.listGroups))
	mux.Handle(api+"/Admin/", admin.ThenFunc(notFound))

	mux.Handle("POST "+api+"/Connect/Documents", connect.ThenFunc(s.generateDocument))
	mux.Handle("POST "+api+"/Connect/Session", session.ThenFunc(s.createSession))
	mux.Handle("GET "+api+"/Connect/Session/{sessionId}", session.ThenFunc(s.getSession))
	mux.Handle("DELETE "+api+"/Connect/Session/{sessionId}", session.ThenFunc(s.deleteSession))
	mux.Handle(api+"/Connect/", connect.ThenFunc(notFound))

	const scimBase = "/webapi/scim-api/v1/{tenant}/scim"
	mux.Handle("GET "+scimBase+"/ServiceProviderConfig", scim.Then(scimerr.Handler(serviceProviderConfig)))
	mux.Handle("GET "+scimBase+"/Users", scim.Then(scimerr.Handler(s.scimListUsers)))
	mux.Handle("POST "+scimBase+"/Users", scim.Then(scimerr.Handler(s.scimCreateUser)))
	mux.Handle("GET "+scimBase+"/Users/{id}", scim.Then(scimerr.Handler(s.scimGetUser)))
	mux.Handle("PUT "+scimBase+"/Users/{id}", scim.Then(scimerr.Handler(s.scimReplaceUser)))
	mux.Handle("DELETE "+scimBase+"/Users/{id}", scim.Then(scimerr.Handler(s.scimDeleteUser)))
	mux.Handle(scimBase+"/", scim.Then(scimerr.Handler(scimNotFound)))
	return mux
}

// origin is the scheme and host of u, an absolute URL.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Scheme + "://" + p.Host
}

// reload reads the configuration again and applies it to the issuer and
// the SCIM tenants together, or to neither: the tenants are checked
// first, then the issuer's Reload checks and applies its part, and only
// then are the tenants replaced.
func (s *service) reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src.file == "" {
		s.logger.Info("reload: nothing to reload, the embedded demo configuration is in use")
		return
	}
	cfg, err := s.src.load()
	if err == nil {
		_, err = cfg.tenants() // checked before anything is applied
	}
	if err != nil {
		s.logger.Error("reload refused: keeping the current configuration", "error", err)
		return
	}
	// The validator checks iss and aud against the URL the service
	// started with; a new one would fail every new token.
	if strings.TrimSuffix(cfg.Issuer, "/") != s.iss.URL() {
		s.logger.Error("reload refused: keeping the current configuration", "error", "the issuer URL changed; restart to change it",
			"issuer", s.iss.URL(), "new_issuer", cfg.Issuer)
		return
	}
	oldKeys := s.iss.KeyIDs()
	if err := s.iss.Reload(&cfg.Config); err != nil {
		s.logger.Error("reload refused: keeping the current configuration", "error", err)
		return
	}
	if err := s.tenants.Replace(cfg.SCIMTenants); err != nil { // checked above: cannot fail
		s.logger.Error("reload: the SCIM tenants were not replaced", "error", err)
	}
	added, removed := diff(clientIDs(s.current), clientIDs(cfg))
	tAdded, tRemoved := diff(tenantNames(s.current), tenantNames(cfg))
	kAdded, kRemoved := diff(oldKeys, s.iss.KeyIDs())
	s.logger.Info("configuration reloaded",
		"signing_kid", s.iss.KeyIDs()[0],
		"keys_added", kAdded, "keys_removed", kRemoved,
		"clients_added", added, "clients_removed", removed,
		"tenants_added", tAdded, "tenants_removed", tRemoved)
	s.current = cfg
}

func clientIDs(c *fileConfig) []string {
	var ids []string
	for _, cl := range c.Clients {
		ids = append(ids, cl.ClientID)
	}
	return ids
}

func tenantNames(c *fileConfig) []string {
	var names []string
	for _, t := range c.SCIMTenants {
		names = append(names, t.Tenant)
	}
	return names
}

// diff returns what b has that a lacks, and what a has that b lacks.
func diff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}
