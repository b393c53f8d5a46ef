package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/idsauth/idsauth/internal/serving"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/redisstore"
)

const gateAbout = `Answer the proxies in front of APIs (nginx auth_request, Traefik
ForwardAuth, Caddy forward_auth, HAProxy's Lua action, Envoy ext_authz over
HTTP and gRPC) whether a request may pass, as the contract says: 200 with
the claims the configuration names as headers (and a signed assertion),
or the contract's status, WWW-Authenticate and body, which the proxy sends
to its client. The configuration FILE names the issuers, the routes (host,
path prefix, methods, scopes, audience or resource), the trusted proxies,
DPoP, forwarded certificates and the assertion; docs/GATEWAY.md has each
proxy's recipe and what of the contract survives it.

A second listener, on loopback by default, serves /healthz, /readyz and
/metrics. SIGHUP reloads the configuration file and the TLS files; a bad
file changes nothing and is logged. SIGTERM and SIGINT make /readyz answer
503, stop accepting and let the requests in flight finish within
-drain-timeout. Every flag has an environment variable (IDSAUTH_ and the
flag's name), used when the flag is not given. No log line holds a token.`

// gateCommand is "idsauth gate".
func gateCommand(ctx context.Context, e env, args []string) error {
	fs := flags(e, "gate", "[flags] [-config] FILE", gateAbout)
	var f daemonFlags
	f.register(fs, "the gate", "127.0.0.1:8181", "127.0.0.1:9191")
	if err := f.parse(fs, args, e.getenv); err != nil {
		return err
	}
	logger, err := newLogger(e, f.logFormat, f.logLevel)
	if err != nil {
		return err
	}
	return signals(ctx, func(ctx context.Context, hangups <-chan os.Signal) error {
		return runGate(ctx, f, logger, hangups)
	})
}

// gate is the running gate: the daemon, the engine of the configuration
// in use, and what outlives a reload.
type gate struct {
	*daemon
	engine atomic.Pointer[gateEngine]
	shared *gateShared
	obs    *gateObserve
	grpc   *grpc.Server
	rdb    redis.UniversalClient // the Redis of the proofs' jtis, nil for none
	open   bool                  // Redis down: the replicas' own memories
}

func runGate(ctx context.Context, f daemonFlags, logger *slog.Logger, hangups <-chan os.Signal) error {
	g := &gate{daemon: newDaemon("gate", f.config, logger)}
	g.reloadFiles, g.readiness = g.reloadConfig, g.gateReadiness
	g.obs = &gateObserve{logger: logger, metrics: g.metrics}
	done := make(chan struct{})
	defer close(done)
	go g.onHangups(done, hangups)
	cfg, err := loadGateConfig(f.config)
	if err != nil {
		return err
	}
	if g.shared, g.rdb, g.open, err = newGateShared(cfg, logger); err != nil {
		return inFile(f.config, err)
	}
	if g.rdb != nil {
		defer g.rdb.Close()
	}
	e, err := buildGate(cfg, g.shared, g.obs)
	if err != nil {
		return inFile(f.config, err)
	}
	g.engine.Store(e)
	defer func() { g.engine.Load().stop() }()
	if err := g.loadCert(f); err != nil {
		return err
	}
	g.grpc = newGRPCServer(g)
	defer g.grpc.Stop()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	stopOps, err := g.startOps(f.opsAddr)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopOps()
	srv := serving.NewServer(g.instrument(g), logger)
	// gRPC (Envoy's ext_authz) beside HTTP/1.1 on one listener: HTTP/2
	// over TLS, and without TLS (h2c) as Envoy's gRPC client speaks it.
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	tlsConfig := g.tlsConfig()
	if tlsConfig != nil {
		tlsConfig.NextProtos = []string{"h2", "http/1.1"}
	}
	return g.serve(ctx, srv, ln, tlsConfig, f.drain, nil, slog.Int("routes", len(e.routes)))
}

// newGateShared makes what outlives a reload of cfg: the DPoP checker
// (its replay memory in the Redis dpop.replays names, when it names one:
// rdb, and open when the configuration fails open), and the memories of
// answers.
func newGateShared(cfg *gateConfig, logger *slog.Logger) (shared *gateShared, rdb redis.UniversalClient, open bool, err error) {
	shared = &gateShared{answers: newAnswerMemory(), dpopCfg: sectionJSON(cfg.DPoP)}
	var replays limit.ReplayStore
	if cfg.DPoP != nil && cfg.DPoP.Replays != nil {
		r := cfg.DPoP.Replays.Redis
		if rdb, err = newRedisClient(cfg.path, "dpop.replays", r); err != nil {
			return nil, nil, false, err
		}
		prefix := r.Prefix
		if prefix == "" {
			prefix = "idsauth:dpop:"
		}
		mode := redisstore.FailOpen
		if r.OnUnavailable == "closed" {
			mode = redisstore.FailClosed
		}
		open = mode == redisstore.FailOpen
		replays = redisstore.New(rdb, redisstore.Options{Prefix: prefix, Timeout: time.Duration(r.TimeoutMillis) * time.Millisecond, OnUnavailable: mode, Logger: logger})
		logger.Info("DPoP proofs' jtis in Redis", slog.String("address", strings.Join(r.nodes(), ",")))
	}
	if shared.dpop, err = newDPoP(cfg, replays); err != nil {
		if rdb != nil {
			rdb.Close()
		}
		return nil, nil, false, err
	}
	return shared, rdb, open, nil
}

// sectionJSON is a section as JSON, to compare the one in use with a
// reloaded one's.
func sectionJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ServeHTTP is the gate's listener: gRPC's Check, and the HTTP endpoints
// (see pathAuth).
func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		g.grpc.ServeHTTP(w, r)
		return
	}
	e := g.engine.Load()
	switch p := r.URL.Path; {
	case p == pathAuth || p == pathNginx:
		g.decide(w, r, e, p)
	case p == pathNginxAnswer:
		g.answer(w, r, e)
	case p == pathEnvoy || strings.HasPrefix(p, pathEnvoy+"/"):
		g.decide(w, r, e, pathEnvoy)
	case strings.HasPrefix(p, pathMetadata+"/") || p == pathMetadata:
		g.metadata(w, r, e)
	case p == pathGateJWKS && e.gateKeys != nil:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(e.gateKeys)
	default:
		http.NotFound(w, r)
	}
}

// reloadConfig reads the configuration and the TLS files again, compiles
// them, and then, only if all is good, puts them in use: the old
// engine's key sets stop refreshing. The dpop section cannot change: its
// replay memory would start empty and take proofs again.
func (g *gate) reloadConfig() error {
	cfg, err := loadGateConfig(g.file)
	if err != nil {
		return err
	}
	if sectionJSON(cfg.DPoP) != g.shared.dpopCfg {
		return errors.New("dpop: differs from the section in use: restart to change it (a new replay memory would take proofs again)")
	}
	useCert, err := g.readCert()
	if err != nil {
		return err
	}
	e, err := buildGate(cfg, g.shared, g.obs)
	if err != nil {
		return inFile(g.file, err)
	}
	old := g.engine.Swap(e)
	old.stop()
	useCert()
	return nil
}

// gateReadiness says why the gate should not get traffic: an issuer
// whose keys were never fetched (every token of it would be refused), or
// a Redis of the proofs that does not answer when the configuration
// says to fail closed (degraded when it fails open).
func (g *gate) gateReadiness(ctx context.Context) (notReady string, degraded []string) {
	e := g.engine.Load()
	for _, k := range e.jwks {
		if k.KeysVersion() == 0 {
			return "an issuer's keys are not fetched yet", nil
		}
	}
	if g.rdb != nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := g.rdb.Ping(pctx).Err(); err != nil {
			if !g.open {
				return "the Redis of the DPoP proofs does not answer", nil
			}
			degraded = append(degraded, "the Redis of the DPoP proofs does not answer: each gate remembers its own proofs")
		}
	}
	return "", degraded
}
