// Command examplesvc is the reference service of idsauth: an identity
// service and the four API families of the contract, in memory, behind
// the library's middleware.
//
//	go run ./examplesvc                      serve on 127.0.0.1:8080 with the demo configuration
//	go run ./examplesvc -config idsauth.json your own configuration (the issuer's format plus scimTenants), its issuer URL as it is
//	go run ./examplesvc -issuer URL ...      replace the configuration's issuer URL (behind a proxy)
//	go run ./examplesvc -debug-addr 127.0.0.1:6060   also serve the event counters at /metrics (Prometheus) and expvar at /debug/vars there
//	go run ./examplesvc -mtls-addr 127.0.0.1:8443    also serve everything over TLS, asking for client certificates (RFC 8705): demo-mtls's, in testdata/mtls
//
// SIGHUP reloads the configuration file; SIGINT and SIGTERM shut down
// gracefully.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idsauth/idsauth/middleware"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address, host:port")
	configFile := flag.String("config", "", "configuration file (the issuer's JSON format plus scimTenants); empty: the embedded demo configuration, with an ephemeral signing key")
	issuerURL := flag.String("issuer", "", "public issuer URL, replacing the configuration's; empty: the file's issuer, or http://<addr>/ids for the demo configuration")
	debugAddr := flag.String("debug-addr", "", "listen address of /metrics (the idsauth event counters, Prometheus text format) and /debug/vars (expvar), host:port; keep it on loopback, it names clients and tenants; empty: not served")
	mtlsAddr := flag.String("mtls-addr", "", "listen address of a TLS listener (the certificates of testdata/mtls) serving the identity service and the APIs, asking clients for a certificate (mutual TLS, RFC 8705), host:port; the issuer names it as its mtls.alias; empty: not served")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "examplesvc: unexpected argument %q (hash-secret is now \"idsauth hash-secret\": go install github.com/idsauth/idsauth/cmd/idsauth@latest)\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, listeners{addr: *addr, debug: *debugAddr, mtls: *mtlsAddr}, *configFile, *issuerURL, logger, os.Stdout); err != nil {
		logger.Error("examplesvc stopped", "error", err)
		os.Exit(1)
	}
}

// listeners are the service's listen addresses: its own, and, when not
// empty, the debug endpoints' and the mutual TLS listener's.
type listeners struct{ addr, debug, mtls string }

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, at listeners, configFile, issuerURL string, logger *slog.Logger, banner io.Writer) error {
	ln, err := net.Listen("tcp", at.addr)
	if err != nil {
		return err
	}
	// Only -issuer replaces a file's issuer; the demo configuration's
	// follows the listen address, so that it works on any port.
	src := configSource{file: configFile, issuer: issuerURL}
	if configFile == "" && issuerURL == "" {
		src.issuer = "http://" + ln.Addr().String() + "/ids"
	}
	var mln net.Listener
	if at.mtls != "" {
		if mln, err = net.Listen("tcp", at.mtls); err != nil {
			ln.Close()
			return err
		}
		defer mln.Close()
		src.mtlsAlias = mtlsBase(mln.Addr()) + "/ids"
	}
	svc, err := newService(ctx, src, logger)
	if err != nil {
		ln.Close()
		return err
	}
	if src.issuer == "" {
		for _, w := range issuerWarnings(svc.iss.URL(), ln.Addr()) {
			logger.Warn(w, "issuer", svc.iss.URL(), "listen", ln.Addr().String())
		}
	}
	routes := svc.routes()
	srv := &http.Server{
		Handler:           routes,
		MaxHeaderBytes:    32 << 10, // a 16 KiB bearer token and ordinary headers; Go's default is 1 MiB
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	onHangup(ctx, svc.reload)

	debugAddr := at.debug
	if debugAddr != "" {
		dln, err := net.Listen("tcp", debugAddr)
		if err != nil {
			ln.Close()
			return err
		}
		debug := http.NewServeMux()
		debug.Handle("GET /metrics", svc.metrics)
		debug.Handle("GET /debug/vars", expvar.Handler())
		dsrv := &http.Server{Handler: debug, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = dsrv.Serve(dln) }()
		defer dsrv.Close()
		debugAddr = dln.Addr().String()
	}

	printBanner(banner, "http://"+ln.Addr().String(), svc.iss.URL(), configFile == "")
	var mdone chan struct{} // closed once the mutual TLS listener has drained
	if mln != nil {
		tlsConfig, err := mtlsTLSConfig()
		if err != nil {
			ln.Close()
			return err
		}
		// The APIs' documents and challenges, and DPoP proofs, name this
		// listener's origin on it (RFC 9728 §3.3).
		msrv := &http.Server{Handler: middleware.PublicOrigin(mtlsBase(mln.Addr()))(routes), MaxHeaderBytes: srv.MaxHeaderBytes, ReadHeaderTimeout: srv.ReadHeaderTimeout, ReadTimeout: srv.ReadTimeout,
			WriteTimeout: srv.WriteTimeout, IdleTimeout: srv.IdleTimeout, ErrorLog: srv.ErrorLog, TLSConfig: tlsConfig}
		go func() { _ = msrv.ServeTLS(mln, "", "") }()
		defer msrv.Close()
		// Drained as the main listener is, at the same time.
		mdone = make(chan struct{})
		go func() {
			defer close(mdone)
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 25*time.Second)
			defer cancel()
			_ = msrv.Shutdown(shutdown)
		}()
		printMTLSBanner(banner, mtlsBase(mln.Addr()), configFile == "")
	}
	if debugAddr != "" {
		fmt.Fprintf(banner, "\nEvent counters (Prometheus): http://%s/metrics\n", debugAddr)
	}
	err = serve(ctx, srv, ln, logger)
	if mdone != nil && ctx.Err() != nil {
		<-mdone
	}
	return err
}

// onHangup calls reload for every SIGHUP until ctx ends, one at a time.
func onHangup(ctx context.Context, reload func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	}()
}

// serve serves srv on ln until ctx ends, then stops accepting and lets the
// requests in flight finish, for 25 seconds at most: under the 30 a
// container runtime or systemd waits before it kills the process.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing the requests in flight")
	shutdown, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
		return fmt.Errorf("requests still in flight were cut off: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func printBanner(w io.Writer, base, issuerURL string, demo bool) {
	fmt.Fprintf(w, `idsauth example service listening on %[1]s

  Identity service   %[2]s/connect/token
                     %[2]s/.well-known/openid-configuration
                     %[2]s/connect/introspect, %[2]s/connect/revocation
  Admin API          %[1]s/webapi/api/v3/demo/Admin/Users      (pd_AdminWebApi)
  Connect API        %[1]s/webapi/api/v3/demo/Connect/Documents (pd_ConnectWebApi)
  Connect Session    %[1]s/webapi/api/v3/demo/Connect/Session   (pd_ConnectWebApi)
  SCIM 2.0           %[1]s/webapi/scim-api/v1/demo/scim/Users    (tenant token)
  Health             %[1]s/healthz
`, base, issuerURL)
	if demo {
		fmt.Fprintf(w, `
Try it (demo configuration):

  TOKEN=$(curl -s -u demo-admin:demo-admin-secret -d grant_type=client_credentials -d scope=pd_AdminWebApi %[2]s/connect/token | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  curl -s -H "Authorization: Bearer $TOKEN" '%[1]s/webapi/api/v3/demo/Admin/Users?page=1&pageSize=10'
  curl -s -H "Authorization: Bearer demo-scim-token" %[1]s/webapi/scim-api/v1/demo/scim/Users

  Reference tokens: demo-reference:demo-reference-secret gets one (pd_AdminWebApi);
  the API resource demo-api:demo-api-secret may introspect it.
  Mutual TLS: demo-mtls authenticates with its certificate (testdata/mtls) on
  the listener of -mtls-addr, which prints its curl lines.
  DPoP: demo-dpop:demo-dpop-secret must send a proof (idsauth token -dpop-key);
  the APIs' metadata (RFC 9728), one document per URL, which a 401 names:
    %[1]s/.well-known/oauth-protected-resource/webapi/api/v3/demo/Admin/Users
`, base, issuerURL)
	}
}
