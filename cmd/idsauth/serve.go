package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/internal/serving"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/metrics"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/tokenstore"
)

const serveAbout = `Serve the identity service: the issuer of the configuration FILE (its
token endpoint, discovery document and JWKS), mounted at the path of its
"issuer" URL, and nothing else on that listener. A second listener, on
loopback by default, serves /healthz, /readyz and /metrics (Prometheus).

With a "clientStore" section, the clients registered in PostgreSQL are
served beside the file's, and the administration API that manages them
(idsauth clients) under the issuer's path, at /admin/.

SIGHUP reloads the configuration file and the TLS files; a bad file
changes nothing and is logged with the field. SIGTERM and SIGINT make
/readyz answer 503, stop accepting and let the requests in flight finish
within -drain-timeout: exit status 0 when they all did, 1 when the timeout
cut some off.

Every flag has an environment variable, used when the flag is not given:
IDSAUTH_CONFIG, IDSAUTH_ADDR, IDSAUTH_OPS_ADDR, IDSAUTH_TLS_CERT,
IDSAUTH_TLS_KEY, IDSAUTH_LOG_FORMAT, IDSAUTH_LOG_LEVEL, IDSAUTH_DRAIN_TIMEOUT,
IDSAUTH_CLIENT_AUTH, IDSAUTH_CLIENT_CA, IDSAUTH_MTLS_ADDR.

Mutual TLS (RFC 8705): -mtls-addr serves the issuer on a second TLS
listener that asks clients for a certificate (-client-auth request or
require), for the clients that authenticate with one or bind their tokens
to it; name its URL in the configuration's mtls.alias, and discovery sends
them there (mtls_endpoint_aliases). Without -mtls-addr, -client-auth asks
on the main listener.
Logs go to standard error: JSON unless it is a terminal. No line ever holds
a secret or a token.`

// serveFlags are serve's settings, each a flag with an environment
// variable.
type serveFlags struct {
	config, addr, opsAddr, tlsCert, tlsKey, logFormat, logLevel string
	drain                                                       time.Duration
	mtls                                                        mtlsFlags
}

func serve(ctx context.Context, e env, args []string) error {
	fs := flags(e, "serve", "[flags] [-config] FILE", serveAbout)
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "issuer configuration file (IDSAUTH_CONFIG)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address of the identity service, host:port (IDSAUTH_ADDR)")
	fs.StringVar(&f.opsAddr, "ops-addr", "127.0.0.1:9090", "listen address of /healthz, /readyz and /metrics; \"off\" serves none (IDSAUTH_OPS_ADDR)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (IDSAUTH_TLS_CERT)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key file of -tls-cert (IDSAUTH_TLS_KEY)")
	fs.StringVar(&f.logFormat, "log-format", "", "json or text; default json, text on a terminal (IDSAUTH_LOG_FORMAT)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (IDSAUTH_LOG_LEVEL)")
	fs.DurationVar(&f.drain, "drain-timeout", serving.DefaultDrainTimeout, "how long a shutdown waits for the requests in flight (IDSAUTH_DRAIN_TIMEOUT)")
	fs.StringVar(&f.mtls.clientAuth, "client-auth", "", "ask TLS clients for a certificate (mutual TLS, RFC 8705): none, request or require; on -mtls-addr when given (default request there), else on -addr (default none) (IDSAUTH_CLIENT_AUTH)")
	fs.StringVar(&f.mtls.clientCA, "client-ca", "", "PEM CAs that client certificates must chain to at the handshake; without it any certificate is taken and the issuer checks it (IDSAUTH_CLIENT_CA)")
	fs.StringVar(&f.mtls.addr, "mtls-addr", "", "listen address of a second TLS listener that asks for client certificates, host:port: the issuer's mtls.alias (IDSAUTH_MTLS_ADDR)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := fromEnv(fs, e.getenv); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 1 && f.config == "":
		f.config = fs.Arg(0)
	case fs.NArg() > 0:
		return usagef("give the configuration file once, as -config or an argument")
	}
	if f.config == "" {
		return usagef("no configuration file: give -config FILE or IDSAUTH_CONFIG")
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usagef("give -tls-cert and -tls-key together")
	}
	if err := f.mtls.check(f.tlsCert != ""); err != nil {
		return err
	}
	logger, err := newLogger(e, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	// SIGHUP is caught for the command's whole life, not only while it
	// serves: Go's default for it ends the process, and a configuration
	// push that meets a start or a stop must not cut requests off.
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	return runServe(ctx, f, logger, e, hangups)
}

// fromEnv sets every flag not given on the command line from its
// environment variable, IDSAUTH_ and the flag's name in upper case.
func fromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "IDSAUTH_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && !given[f.Name] && err == nil {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = usagef("%s=%q: %v", name, v, serr)
			}
		}
	})
	return err
}

func newLogger(e env, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "" {
		format = "json"
		if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
	}
	return nil, usagef("log format %q: want json or text", format)
}

// server is the identity service of serve: the issuer, its metrics and
// what a reload changes.
type server struct {
	file    string
	iss     *issuer.Issuer
	cert    *serving.Certificate // nil without TLS
	metrics *metrics.Metrics
	logger  *slog.Logger

	store                     *limiterStore // nil without a limiterStore section
	storeConfig               *storeConfig
	tokenStoreConfig          *tokenStoreConfig
	tokens                    *redisstore.TokenStore // nil without a tokenStore section
	clientStoreConfig         *clientStoreConfig
	registry                  *pgregistry.Registry // nil without a clientStore section
	reloadMu                  sync.Mutex
	reloadsOK, reloadsFailed  atomic.Uint64
	lastOK, lastFailed        atomic.Int64 // Unix seconds; 0 never
	jwksServed                atomic.Uint64
	inFlight                  atomic.Int64
	ready                     atomic.Bool
	version, revision, goVers string
}

func runServe(ctx context.Context, f serveFlags, logger *slog.Logger, e env, hangups <-chan os.Signal) error {
	s := &server{file: f.config, metrics: metrics.New(), logger: logger}
	done := make(chan struct{})
	defer close(done)
	go s.onHangups(done, hangups)
	s.version, s.revision, s.goVers = buildInfo()
	cfg, err := loadServeConfig(f.config)
	if err != nil {
		return err
	}
	opts := []issuer.Option{issuer.WithLogger(logger), issuer.WithObserver(s.metrics)}
	if cfg.LimiterStore != nil {
		if s.store, err = newLimiterStore(cfg, logger); err != nil {
			return inFile(f.config, err)
		}
		defer s.store.rdb.Close()
		s.storeConfig = cfg.LimiterStore
		opts = append(opts, issuer.WithLimiterStore(s.store.store))
		logger.Info("failure budgets in Redis", slog.String("address", strings.Join(cfg.LimiterStore.Redis.nodes(), ",")), slog.Bool("cluster", len(cfg.LimiterStore.Redis.Cluster) > 0))
	}
	if cfg.TokenStore != nil {
		ts, rdb, err := newTokenStore(ctx, cfg, logger)
		if err != nil {
			return inFile(f.config, err)
		}
		defer rdb.Close()
		s.tokenStoreConfig, s.tokens = cfg.TokenStore, ts
		opts = append(opts, issuer.WithTokenStore(ts))
		logger.Info("reference tokens in Redis", slog.String("address", strings.Join(cfg.TokenStore.Redis.nodes(), ",")), slog.Bool("cluster", len(cfg.TokenStore.Redis.Cluster) > 0))
	}
	if len(cfg.SCIMTenants) > 0 {
		logger.Info("scimTenants: checked, not served: idsauth serve serves the identity service only", slog.Int("tenants", len(cfg.SCIMTenants)))
	}
	if s.iss, err = issuer.New(&cfg.Config, opts...); err != nil {
		return inFile(f.config, err)
	}
	if f.tlsCert != "" {
		if s.cert, err = serving.LoadCertificate(f.tlsCert, f.tlsKey); err != nil {
			return err
		}
	}
	mount, err := mountPath(s.iss.URL())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(mount, s.instrument(s.iss))
	if cfg.ClientStore != nil {
		if s.registry, err = newRegistry(ctx, cfg, s.iss, logger, e.getenv); err != nil {
			return inFile(f.config, err)
		}
		defer s.registry.Close()
		s.clientStoreConfig = cfg.ClientStore
		if err := waitRegistry(ctx, s.registry); err != nil {
			logger.Warn("the client registry is not loaded yet: not ready until it is", slog.String("error", err.Error()))
		}
		st := s.registry.Status()
		logger.Info("registered clients in PostgreSQL", slog.Bool("loaded", st.Loaded), slog.Int("clients", st.Clients), slog.Int("api_resources", st.APIResources),
			slog.String("admin", adminMount(mount)))
		mux.Handle(adminMount(mount), s.instrument(s.registry))
	}
	// RFC 8414 metadata at the host root, with the issuer's path inserted.
	mux.Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler())

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	if f.opsAddr != "off" {
		oln, err := net.Listen("tcp", f.opsAddr)
		if err != nil {
			ln.Close()
			return err
		}
		ops := serving.NewServer(s.opsRoutes(), logger)
		go func() { _ = ops.Serve(oln) }()
		defer ops.Close()
		logger.Info("operations endpoints", slog.String("addr", oln.Addr().String()),
			slog.String("paths", "/healthz /readyz /metrics"))
	}
	srv := serving.NewServer(mux, logger)
	scheme, tlsConfig := "http", (*tls.Config)(nil)
	if s.cert != nil {
		scheme, tlsConfig = "https", s.cert.TLSConfig()
		if mode := f.mtls.clientAuth; f.mtls.addr == "" && (mode == "request" || mode == "require") {
			if tlsConfig, err = f.mtls.tlsConfig(tlsConfig, mode); err != nil {
				ln.Close()
				return err
			}
		}
	}
	// Ready before the line that says so: the listener accepts already,
	// and Serve takes what it queued.
	s.ready.Store(true)
	defer s.ready.Store(false)
	// Not ready from the instant a stop begins, before the drain: a load
	// balancer that asks sends nothing more here while the requests in
	// flight finish.
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	go func() {
		select {
		case <-ctx.Done():
			s.ready.Store(false)
			stopServing()
		case <-serveCtx.Done():
		}
	}()
	logger.Info("identity service listening", slog.String("addr", scheme+"://"+ln.Addr().String()),
		slog.String("issuer", s.iss.URL()), slog.String("mount", mount), slog.String("version", s.version))
	if f.mtls.addr == "" {
		return serving.Serve(serveCtx, srv, ln, tlsConfig, f.drain, logger)
	}
	wait, err := f.mtls.serveAlias(serveCtx, stopServing, mux, s.cert.TLSConfig(), cfg.MTLS.Alias, f.drain, logger)
	if err != nil {
		ln.Close()
		return err
	}
	err = serving.Serve(serveCtx, srv, ln, tlsConfig, f.drain, logger)
	stopServing()
	return errors.Join(err, wait())
}

// onHangups takes every SIGHUP until done closes: a reload while the
// service is ready, a log line while it starts or stops.
func (s *server) onHangups(done <-chan struct{}, hangups <-chan os.Signal) {
	for {
		select {
		case <-done:
			return
		case <-hangups:
			if !s.ready.Load() {
				s.logger.Warn("SIGHUP ignored: the service is starting or stopping; nothing is reloaded")
				continue
			}
			s.reload()
		}
	}
}

// mountPath is the pattern that mounts the issuer at its URL's path.
func mountPath(issuerURL string) (string, error) {
	u, err := url.Parse(issuerURL)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u.Path, "/") + "/", nil
}

// reload reads the configuration and TLS files again and applies them, or
// nothing: a bad file is logged with its error, which names the field.
func (s *server) reload() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	err := s.reloadFiles()
	now := time.Now().Unix()
	if err != nil {
		s.reloadsFailed.Add(1)
		s.lastFailed.Store(now)
		s.logger.Error("reload failed: the previous configuration stays", slog.String("file", s.file), slog.String("error", explainPermission(err).Error()))
		return
	}
	s.reloadsOK.Add(1)
	s.lastOK.Store(now)
	s.logger.Info("reloaded", slog.String("file", s.file))
}

// reloadFiles reads and checks every file first, and changes nothing
// unless all are good: the issuer's configuration and the certificate
// are applied together, the certificate last, since installing it cannot
// fail.
func (s *server) reloadFiles() error {
	cfg, err := loadServeConfig(s.file)
	if err != nil {
		return err
	}
	if !sameStore(cfg.LimiterStore, s.storeConfig) {
		return errors.New("limiterStore: differs from the store in use: restart to change it")
	}
	if !sameStore(cfg.TokenStore, s.tokenStoreConfig) {
		return errors.New("tokenStore: differs from the store in use: restart to change it")
	}
	if !sameStore(cfg.ClientStore, s.clientStoreConfig) {
		return errors.New("clientStore: differs from the store in use: restart to change it")
	}
	mount, err := mountPath(cfg.Issuer)
	if err != nil {
		return err
	}
	if was, _ := mountPath(s.iss.URL()); mount != was {
		return fmt.Errorf("issuer: the path %q differs from the one served, %q: restart to move it", mount, was)
	}
	useCert := func() {}
	if s.cert != nil {
		if useCert, err = s.cert.Read(); err != nil {
			return err
		}
	}
	if err := s.iss.Reload(&cfg.Config); err != nil {
		return inFile(s.file, err)
	}
	useCert()
	return nil
}

// instrument counts the requests in flight and the JWKS documents
// served.
func (s *server) instrument(h http.Handler) http.Handler {
	jwks := strings.TrimSuffix(mustPath(s.iss.JWKSURL()), "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		if r.URL.Path == jwks && r.Method == http.MethodGet {
			s.jwksServed.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

func (s *server) opsRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if reason := s.notReady(r.Context()); reason != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", reason)
			return
		}
		if s.registry != nil {
			if _, degraded := registryReadiness(s.registry); degraded != "" {
				fmt.Fprintln(w, "ready, degraded:", degraded)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /metrics", s.writeMetrics)
	return mux
}

// notReady says why the service should not get traffic, or "": it is
// not serving, no key is published, or the shared store does not answer.
func (s *server) notReady(ctx context.Context) string {
	if !s.ready.Load() {
		return "not serving"
	}
	if len(s.iss.KeyIDs()) == 0 {
		return "no signing key published"
	}
	if s.store != nil {
		if err := s.store.ping(ctx); err != nil {
			return "the limiter store (Redis) does not answer"
		}
	}
	if s.registry != nil {
		if reason, _ := registryReadiness(s.registry); reason != "" {
			return reason
		}
	}
	if s.tokens != nil {
		// A look-up as introspection makes, within the store's own bound:
		// ready only if reference operations would answer. No token's
		// hash is the zero key.
		if _, _, err := s.tokens.Get(ctx, tokenstore.Key{}, time.Now()); err != nil {
			return "the token store (Redis) does not answer within its bound: no reference token can be issued or checked"
		}
	}
	return ""
}

func (s *server) writeMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", promtext.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.metrics.WriteTo(w); err != nil {
		return
	}
	pw := promtext.NewWriter(w)
	now := time.Now()
	pw.Header("idsauth_reloads_total", "Configuration reloads, by result (ok, failed).", "counter")
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"ok"}, strconv.FormatUint(s.reloadsOK.Load(), 10))
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"failed"}, strconv.FormatUint(s.reloadsFailed.Load(), 10))
	pw.Header("idsauth_last_reload_timestamp_seconds", "When the last reload of each result happened, in Unix seconds; 0 never.", "gauge")
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"ok"}, strconv.FormatInt(s.lastOK.Load(), 10))
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"failed"}, strconv.FormatInt(s.lastFailed.Load(), 10))
	pw.Header("idsauth_http_requests_in_flight", "Requests to the identity service being handled now.", "gauge")
	pw.Sample("idsauth_http_requests_in_flight", nil, nil, strconv.FormatInt(s.inFlight.Load(), 10))
	pw.Header("idsauth_jwks_served_total", "JWKS documents requested from the identity service.", "counter")
	pw.Sample("idsauth_jwks_served_total", nil, nil, strconv.FormatUint(s.jwksServed.Load(), 10))
	keys := s.iss.KeySchedule()
	pw.Header("idsauth_signing_key_info", "The key that signs now, by kid and alg (value 1).", "gauge")
	if kids := s.iss.KeyIDs(); len(kids) > 0 {
		for _, k := range keys {
			if k.KID == kids[0] {
				pw.Sample("idsauth_signing_key_info", []string{"kid", "alg"}, []string{k.KID, k.Alg}, "1")
				break
			}
		}
	}
	next := nextChange(keys, now)
	pw.Header("idsauth_key_schedule_next_change_timestamp_seconds", "When the key schedule next publishes, switches or retires a key, in Unix seconds; 0 none scheduled.", "gauge")
	var nextUnix int64
	if !next.IsZero() {
		nextUnix = next.Unix()
	}
	pw.Sample("idsauth_key_schedule_next_change_timestamp_seconds", nil, nil, strconv.FormatInt(nextUnix, 10))
	if s.registry != nil {
		writeRegistryMetrics(pw, s.registry)
	}
	pw.Header("idsauth_build_info", "The idsauth command's build (value 1).", "gauge")
	pw.Sample("idsauth_build_info", []string{"version", "revision", "goversion"}, []string{s.version, s.revision, s.goVers}, "1")
	pw.Flush() //nolint:errcheck // the client went away
}

// nextChange returns the next instant after now at which the key
// schedule publishes, switches or retires a key; zero when none.
func nextChange(keys []issuer.ScheduledKey, now time.Time) time.Time {
	var next time.Time
	for _, k := range keys {
		for _, t := range []time.Time{k.PublishedFrom, k.PublishedUntil, k.SignsFrom, k.SignsUntil} {
			if t.After(now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
