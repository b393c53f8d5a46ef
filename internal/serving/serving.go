// Package serving runs an HTTP listener the way idsauth's programs do
// (the idsauth command's serve and the example service): bounded headers
// and timeouts, TLS from files that a reload reads again, a reload on
// SIGHUP, and a shutdown that lets the requests in flight finish within a
// bound.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// MaxHeaderBytes bounds a request's headers. Go's default is 1 MiB; 32
// KiB holds a bearer token of up to 16 KiB (the middleware's default
// MaxTokenSize) with room for ordinary headers, and the token endpoint's
// Basic credentials (100 characters each at most) need far less.
const MaxHeaderBytes = 32 << 10

// DefaultDrainTimeout is how long a shutdown waits for the requests in
// flight by default: under the 30 s a container runtime or systemd waits
// before it kills the process.
const DefaultDrainTimeout = 25 * time.Second

// NewServer returns an http.Server for h with every bound set: headers,
// read, write and idle timeouts, and its own errors logged at Warn.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Certificate is a TLS certificate read from two PEM files, read again by
// Load: a reload after the files were renewed serves the new certificate
// to the next handshake, with no restart.
type Certificate struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the certificate and key files.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Load(); err != nil {
		return nil, err
	}
	return c, nil
}

// Load reads the files again and serves what they hold; on error the
// certificate in use stays.
func (c *Certificate) Load() error {
	use, err := c.Read()
	if err != nil {
		return err
	}
	use()
	return nil
}

// Read reads the files again without serving them yet: use serves what it
// read, from the next handshake. A reload that checks other files too
// reads them all, then calls use only if every one was good.
func (c *Certificate) Read() (use func(), err error) {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s, key %s: %w", c.certFile, c.keyFile, err)
	}
	return func() { c.cert.Store(&cert) }, nil
}

// TLSConfig returns a TLS configuration (TLS 1.2 at least) that serves the
// certificate loaded last.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
}

// Serve serves srv on ln (with TLS when tlsConfig is not nil) until ctx
// ends, then shuts it down: it stops accepting, lets the requests in
// flight finish for at most drain (DefaultDrainTimeout when zero), then
// closes what is left. It returns nil after a clean shutdown, and the
// error of a listener that failed or of a drain that ran out.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, tlsConfig *tls.Config, drain time.Duration, logger *slog.Logger) error {
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		ln = tls.NewListener(ln, tlsConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing the requests in flight", slog.String("within", drain.String()))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("requests still in flight after %v were cut off: %w", drain, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
