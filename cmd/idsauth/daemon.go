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
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/internal/serving"
	"github.com/idsauth/idsauth/metrics"
)

// daemonFlags are the settings every long-running command (serve, gate)
// takes alike, each a flag with an environment variable.
type daemonFlags struct {
	config, addr, opsAddr, tlsCert, tlsKey, logFormat, logLevel string
	drain                                                       time.Duration
}

// register defines the flags on fs; what names the main listener's
// service in the help ("the identity service", "the gate").
func (f *daemonFlags) register(fs *flag.FlagSet, what, defaultAddr, defaultOps string) {
	fs.StringVar(&f.config, "config", "", "configuration file (IDSAUTH_CONFIG)")
	fs.StringVar(&f.addr, "addr", defaultAddr, "listen address of "+what+", host:port (IDSAUTH_ADDR)")
	fs.StringVar(&f.opsAddr, "ops-addr", defaultOps, "listen address of /healthz, /readyz and /metrics; \"off\" serves none (IDSAUTH_OPS_ADDR)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (IDSAUTH_TLS_CERT)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key file of -tls-cert (IDSAUTH_TLS_KEY)")
	fs.StringVar(&f.logFormat, "log-format", "", "json or text; default json, text on a terminal (IDSAUTH_LOG_FORMAT)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error (IDSAUTH_LOG_LEVEL)")
	fs.DurationVar(&f.drain, "drain-timeout", serving.DefaultDrainTimeout, "how long a shutdown waits for the requests in flight (IDSAUTH_DRAIN_TIMEOUT)")
}

// parse parses args into the flags of fs, then the environment, takes
// the configuration file as -config or the one argument, and checks what
// the flags say together.
func (f *daemonFlags) parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := fromEnv(fs, getenv); err != nil {
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
	return nil
}

// signals runs fn with a context that ends at SIGTERM or SIGINT, and the
// SIGHUPs received meanwhile. SIGHUP is caught for the command's whole
// life, not only while it serves: Go's default for it ends the process,
// and a configuration push that meets a start or a stop must not cut
// requests off.
func signals(ctx context.Context, fn func(ctx context.Context, hangups <-chan os.Signal) error) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	return fn(ctx, hangups)
}

// daemon is what a long-running command (serve, gate) shares: its
// readiness, its reloads on SIGHUP, the requests in flight, its TLS
// certificate, and the operations endpoints that report them. The command
// gives what is its own as the functions below.
type daemon struct {
	what    string // the main listener's service, for logs and help: "identity service", "gate"
	file    string // the configuration file
	logger  *slog.Logger
	metrics *metrics.Metrics     // the events of the command's parts
	cert    *serving.Certificate // nil without TLS

	// reloadFiles reads the configuration (and the certificate, with
	// readCert) again and applies it, or nothing: see reload.
	reloadFiles func() error
	// readiness says, once the daemon serves, why the command should not
	// get traffic ("" when it should) and what it serves without. Nil:
	// ready whenever it serves.
	readiness func(ctx context.Context) (notReady string, degraded []string)
	// writeMetrics writes the command's own metrics, after the daemon's.
	// Nil writes none.
	writeMetrics func(pw *promtext.Writer, r *http.Request)

	reloadMu                  sync.Mutex
	reloadsOK, reloadsFailed  atomic.Uint64
	lastOK, lastFailed        atomic.Int64 // Unix seconds; 0 never
	inFlight                  atomic.Int64
	ready                     atomic.Bool
	version, revision, goVers string
}

func newDaemon(what, file string, logger *slog.Logger) *daemon {
	d := &daemon{what: what, file: file, logger: logger, metrics: metrics.New()}
	d.version, d.revision, d.goVers = buildInfo()
	return d
}

// loadCert reads the TLS certificate of the flags, if any.
func (d *daemon) loadCert(f daemonFlags) error {
	if f.tlsCert == "" {
		return nil
	}
	var err error
	d.cert, err = serving.LoadCertificate(f.tlsCert, f.tlsKey)
	return err
}

// readCert reads the certificate files again, without serving them yet
// (see serving.Certificate.Read); use does nothing without TLS.
func (d *daemon) readCert() (use func(), err error) {
	if d.cert == nil {
		return func() {}, nil
	}
	return d.cert.Read()
}

// onHangups takes every SIGHUP until done closes: a reload while the
// command is ready, a log line while it starts or stops.
func (d *daemon) onHangups(done <-chan struct{}, hangups <-chan os.Signal) {
	for {
		select {
		case <-done:
			return
		case <-hangups:
			if !d.ready.Load() {
				d.logger.Warn("SIGHUP ignored: the " + d.what + " is starting or stopping; nothing is reloaded")
				continue
			}
			d.reload()
		}
	}
}

// reload reads the configuration and TLS files again and applies them, or
// nothing: a bad file is logged with its error, which names the field.
func (d *daemon) reload() {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	err := d.reloadFiles()
	now := time.Now().Unix()
	if err != nil {
		d.reloadsFailed.Add(1)
		d.lastFailed.Store(now)
		d.logger.Error("reload failed: the previous configuration stays", slog.String("file", d.file), slog.String("error", explainPermission(err).Error()))
		return
	}
	d.reloadsOK.Add(1)
	d.lastOK.Store(now)
	d.logger.Info("reloaded", slog.String("file", d.file))
}

// instrument counts the requests in flight through h.
func (d *daemon) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.inFlight.Add(1)
		defer d.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// startOps serves the operations endpoints on addr, unless it is "off";
// stop closes them.
func (d *daemon) startOps(addr string) (stop func(), err error) {
	if addr == "off" {
		return func() {}, nil
	}
	oln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ops := serving.NewServer(d.opsRoutes(), d.logger)
	go func() { _ = ops.Serve(oln) }()
	d.logger.Info("operations endpoints", slog.String("addr", oln.Addr().String()),
		slog.String("paths", "/healthz /readyz /metrics"))
	return func() { ops.Close() }, nil
}

// tlsConfig is the main listener's TLS configuration, nil without TLS.
func (d *daemon) tlsConfig() *tls.Config {
	if d.cert == nil {
		return nil
	}
	return d.cert.TLSConfig()
}

// serve serves srv on ln (over TLS with tlsConfig, unless nil) until ctx
// ends, ready from its start: it is not ready from the instant a stop
// begins, before the drain, so that a load balancer that asks sends
// nothing more while the requests in flight finish within drain. beside,
// when not nil, starts what serves beside the listener with serveCtx,
// which ends when the stop begins (stopServing ends it too), and returns
// how to wait for it; attrs are logged with the line that says the
// listener is up.
func (d *daemon) serve(ctx context.Context, srv *http.Server, ln net.Listener, tlsConfig *tls.Config, drain time.Duration,
	beside func(serveCtx context.Context, stopServing func()) (wait func() error, err error), attrs ...slog.Attr) error {
	// Ready before the line that says so: the listener accepts already,
	// and Serve takes what it queued.
	d.ready.Store(true)
	defer d.ready.Store(false)
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	go func() {
		select {
		case <-ctx.Done():
			d.ready.Store(false)
			stopServing()
		case <-serveCtx.Done():
		}
	}()
	wait := func() error { return nil }
	if beside != nil {
		var err error
		if wait, err = beside(serveCtx, stopServing); err != nil {
			ln.Close()
			return err
		}
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	attrs = append([]slog.Attr{slog.String("addr", scheme+"://"+ln.Addr().String())}, attrs...)
	d.logger.LogAttrs(context.Background(), slog.LevelInfo, d.what+" listening", append(attrs, slog.String("version", d.version))...)
	err := serving.Serve(serveCtx, srv, ln, tlsConfig, drain, d.logger)
	stopServing()
	if werr := wait(); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

func (d *daemon) opsRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		notReady, degraded := "not serving", []string(nil)
		if d.ready.Load() {
			notReady = ""
			if d.readiness != nil {
				notReady, degraded = d.readiness(r.Context())
			}
		}
		switch {
		case notReady != "":
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready:", notReady)
		case len(degraded) > 0:
			fmt.Fprintln(w, "ready, degraded:", strings.Join(degraded, "; "))
		default:
			fmt.Fprintln(w, "ready")
		}
	})
	mux.HandleFunc("GET /metrics", d.serveMetrics)
	return mux
}

// serveMetrics writes the parts' events, the daemon's own metrics, the
// command's, and the build.
func (d *daemon) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", promtext.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	if _, err := d.metrics.WriteTo(w); err != nil {
		return
	}
	pw := promtext.NewWriter(w)
	pw.Header("idsauth_reloads_total", "Configuration reloads, by result (ok, failed).", "counter")
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"ok"}, strconv.FormatUint(d.reloadsOK.Load(), 10))
	pw.Sample("idsauth_reloads_total", []string{"result"}, []string{"failed"}, strconv.FormatUint(d.reloadsFailed.Load(), 10))
	pw.Header("idsauth_last_reload_timestamp_seconds", "When the last reload of each result happened, in Unix seconds; 0 never.", "gauge")
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"ok"}, strconv.FormatInt(d.lastOK.Load(), 10))
	pw.Sample("idsauth_last_reload_timestamp_seconds", []string{"result"}, []string{"failed"}, strconv.FormatInt(d.lastFailed.Load(), 10))
	pw.Header("idsauth_http_requests_in_flight", "Requests to the "+d.what+" being handled now.", "gauge")
	pw.Sample("idsauth_http_requests_in_flight", nil, nil, strconv.FormatInt(d.inFlight.Load(), 10))
	if d.writeMetrics != nil {
		d.writeMetrics(pw, r)
	}
	pw.Header("idsauth_build_info", "The idsauth command's build (value 1).", "gauge")
	pw.Sample("idsauth_build_info", []string{"version", "revision", "goversion"}, []string{d.version, d.revision, d.goVers}, "1")
	pw.Flush() //nolint:errcheck // the client went away
}
