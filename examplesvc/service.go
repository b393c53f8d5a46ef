package main

import (
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/scope"
)

//go:embed default-config.json
var defaultConfig []byte

// configSource is where the configuration comes from: a file, or the
// embedded demo configuration when file is empty. issuer replaces the
// file's issuer URL.
type configSource struct {
	file   string
	issuer string
}

func (s configSource) load() (*issuer.Config, error) {
	var (
		cfg *issuer.Config
		err error
	)
	if s.file == "" {
		cfg, err = issuer.ParseConfig(defaultConfig, ".")
	} else {
		cfg, err = issuer.LoadConfig(s.file)
	}
	if err != nil {
		return nil, err
	}
	cfg.Issuer = s.issuer
	return cfg, cfg.Validate()
}

// service holds the issuer, the validator and the in-memory data of the
// four API families.
type service struct {
	src     configSource
	logger  *slog.Logger
	iss     *issuer.Issuer
	tenants *middleware.Tenants
	v       *middleware.Validator

	mu      sync.Mutex // serializes reloads
	current *issuer.Config

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
	cfg.Logger = logger
	iss, err := issuer.New(cfg)
	if err != nil {
		return nil, err
	}
	// The issuer is in this process: validate with its keys, no HTTP.
	v, err := middleware.NewValidator(ctx, middleware.ValidatorConfig{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		return nil, err
	}
	return &service{
		src:      src,
		logger:   logger,
		iss:      iss,
		tenants:  middleware.NewTenants(cfg.Tenants()),
		v:        v,
		current:  cfg,
		admin:    newAdminStore(),
		sessions: newSessionStore(),
		scim:     newSCIMStore(),
	}, nil
}

// routes wires the four API families behind their middleware.
func (s *service) routes() http.Handler {
	logs := middleware.WithLogger(s.logger)
	bearer := alice.New(middleware.RequireBearer(s.v, logs))
	admin := bearer.Append(middleware.RequireScope(scope.AdminWebAPI))
	connect := bearer.Append(middleware.RequireScope(scope.ConnectWebAPI))
	scim := alice.New(middleware.SCIMAuth(s.tenants, logs))

	mux := http.NewServeMux()
	mux.Handle("/ids/", s.iss)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })

	const api = "/webapi/api/v3/{datasourceId}"
	mux.Handle("GET "+api+"/Admin/Users", admin.ThenFunc(s.listUsers))
	mux.Handle("GET "+api+"/Admin/Groups", admin.ThenFunc(s.listGroups))
	mux.Handle(api+"/Admin/", admin.ThenFunc(notFound))

	mux.Handle("POST "+api+"/Connect/Documents", connect.ThenFunc(s.generateDocument))
	mux.Handle("POST "+api+"/Connect/Session", connect.ThenFunc(s.createSession))
	mux.Handle("GET "+api+"/Connect/Session/{sessionId}", connect.ThenFunc(s.getSession))
	mux.Handle("DELETE "+api+"/Connect/Session/{sessionId}", connect.ThenFunc(s.deleteSession))
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

// reload reads the configuration again and applies it to the issuer and
// the SCIM tenants together, or to neither.
func (s *service) reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src.file == "" {
		s.logger.Info("reload: nothing to reload, the embedded demo configuration is in use")
		return
	}
	cfg, err := s.src.load()
	if err != nil {
		s.logger.Error("reload refused: keeping the current configuration", "error", err)
		return
	}
	cfg.Logger = s.logger
	oldKeys := s.iss.KeyIDs()
	if err := s.iss.Reload(cfg); err != nil {
		s.logger.Error("reload refused: keeping the current configuration", "error", err)
		return
	}
	s.tenants.Replace(cfg.Tenants())
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

func clientIDs(c *issuer.Config) []string {
	var ids []string
	for _, cl := range c.Clients {
		ids = append(ids, cl.ClientID)
	}
	return ids
}

func tenantNames(c *issuer.Config) []string {
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
