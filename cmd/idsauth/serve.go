package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/term"

	"github.com/idsauth/idsauth/internal/serving"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/redisstore"
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
on the main listener. With -client-ca, discovery does not list
self_signed_tls_client_auth: such certificates stop at the handshake.
What may not work (an alias without -mtls-addr, say) is warned of at
start, never refused.
Logs go to standard error: JSON unless it is a terminal. No line ever holds
a secret or a token.`

// serveFlags are serve's settings, each a flag with an environment
// variable.
type serveFlags struct {
	daemonFlags
	mtls mtlsFlags
}

func serve(ctx context.Context, e env, args []string) error {
	fs := flags(e, "serve", "[flags] [-config] FILE", serveAbout)
	var f serveFlags
	f.register(fs, "the identity service", "127.0.0.1:8080", "127.0.0.1:9090")
	fs.StringVar(&f.mtls.clientAuth, "client-auth", "", "ask TLS clients for a certificate (mutual TLS, RFC 8705): none, request or require; on -mtls-addr when given (default request there), else on -addr (default none) (IDSAUTH_CLIENT_AUTH)")
	fs.StringVar(&f.mtls.clientCA, "client-ca", "", "PEM CAs that client certificates must chain to at the handshake; without it any certificate is taken and the issuer checks it (IDSAUTH_CLIENT_CA)")
	fs.StringVar(&f.mtls.addr, "mtls-addr", "", "listen address of a second TLS listener that asks for client certificates, host:port: the issuer's mtls.alias (IDSAUTH_MTLS_ADDR)")
	if err := f.daemonFlags.parse(fs, args, e.getenv); err != nil {
		return err
	}
	if err := f.mtls.check(f.tlsCert != ""); err != nil {
		return err
	}
	logger, err := newLogger(e, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	return signals(ctx, func(ctx context.Context, hangups <-chan os.Signal) error {
		return runServe(ctx, f, logger, e, hangups)
	})
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

// server is the identity service of serve: the issuer, and what a reload
// changes, on the daemon that serve and gate share.
type server struct {
	*daemon
	iss *issuer.Issuer

	store             *limiterStore // nil without a limiterStore section
	storeConfig       *storeConfig
	tokenStoreConfig  *tokenStoreConfig
	tokens            *redisstore.TokenStore // nil without a tokenStore section
	clientStoreConfig *clientStoreConfig
	registry          *pgregistry.Registry // nil without a clientStore section
	jwksServed        atomic.Uint64
}

func runServe(ctx context.Context, f serveFlags, logger *slog.Logger, e env, hangups <-chan os.Signal) error {
	s := &server{daemon: newDaemon("identity service", f.config, logger)}
	s.reloadFiles, s.readiness, s.writeMetrics = s.reloadConfig, s.issuerReadiness, s.writeIssuerMetrics
	done := make(chan struct{})
	defer close(done)
	go s.onHangups(done, hangups)
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
	if f.mtls.clientCA != "" {
		// Every listener that asks for a certificate verifies it against
		// -client-ca: a self-signed one stops at the handshake.
		opts = append(opts, issuer.WithHandshakeVerification())
	}
	for _, w := range f.mtls.warnings(cfg.MTLS) {
		logger.Warn(w)
	}
	if s.iss, err = issuer.New(&cfg.Config, opts...); err != nil {
		return inFile(f.config, err)
	}
	if err := s.loadCert(f.daemonFlags); err != nil {
		return err
	}
	mount, err := mountPath(s.iss.URL())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(mount, s.instrumentIssuer(s.iss))
	if cfg.ClientStore != nil {
		if s.registry, err = newRegistry(ctx, cfg, s.iss, logger, e.getenv); err != nil {
			return inFile(f.config, err)
		}
		defer s.registry.Close()
		s.clientStoreConfig = cfg.ClientStore
		// Not waited for: the listeners open at once, not ready until
		// the first load (registryReadiness), serving the file's clients.
		mux.Handle(adminMount(mount), s.instrumentIssuer(s.registry))
	}
	// RFC 8414 metadata at the host root, with the issuer's path inserted.
	mux.Handle("/.well-known/oauth-authorization-server/", s.iss.MetadataHandler())

	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	stopOps, err := s.startOps(f.opsAddr)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopOps()
	srv := serving.NewServer(mux, logger)
	tlsConfig := s.tlsConfig()
	if mode := f.mtls.clientAuth; tlsConfig != nil && f.mtls.addr == "" && (mode == "request" || mode == "require") {
		if tlsConfig, err = f.mtls.tlsConfig(tlsConfig, mode); err != nil {
			ln.Close()
			return err
		}
	}
	beside := func(serveCtx context.Context, stopServing func()) (func() error, error) {
		var waits []func() error
		if s.registry != nil {
			logged := make(chan struct{})
			go func() {
				defer close(logged)
				logRegistryLoad(serveCtx, s.registry, logger, adminMount(mount))
			}()
			waits = append(waits, func() error { <-logged; return nil })
		}
		if f.mtls.addr != "" {
			wait, err := f.mtls.serveAlias(serveCtx, stopServing, mux, s.cert.TLSConfig(), f.drain, logger)
			if err != nil {
				return nil, err
			}
			waits = append(waits, wait)
		}
		return func() error {
			var errs []error
			for i := len(waits) - 1; i >= 0; i-- {
				errs = append(errs, waits[i]())
			}
			return errors.Join(errs...)
		}, nil
	}
	return s.serve(ctx, srv, ln, tlsConfig, f.drain, beside, slog.String("issuer", s.iss.URL()), slog.String("mount", mount))
}

// mountPath is the pattern that mounts the issuer at its URL's path.
func mountPath(issuerURL string) (string, error) {
	u, err := url.Parse(issuerURL)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u.Path, "/") + "/", nil
}
