package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/idsauth/idsauth/internal/serving"
	"github.com/idsauth/idsauth/issuer"
)

// Mutual TLS (RFC 8705) in serve: the TLS server asks clients for a
// certificate, on the main listener or on a listener of its own (the
// issuer's mtls.alias, so that the main listener asks nobody), and the
// issuer checks what it gets (issuer.MTLSConfig).

// mtlsFlags are serve's mutual TLS settings.
type mtlsFlags struct {
	clientCA, clientAuth, addr string
}

// check refuses settings that cannot work, f.tls saying whether serve
// serves TLS at all.
func (m mtlsFlags) check(withTLS bool) error {
	switch m.clientAuth {
	case "", "none", "request", "require":
	default:
		return usagef("-client-auth %q: want none, request or require", m.clientAuth)
	}
	if (m.clientCA != "" || m.addr != "" || (m.clientAuth != "" && m.clientAuth != "none")) && !withTLS {
		return usagef("-client-auth, -client-ca and -mtls-addr need TLS: give -tls-cert and -tls-key")
	}
	if m.addr != "" && m.clientAuth == "none" {
		return usagef("-mtls-addr asks for client certificates: -client-auth none makes no sense with it")
	}
	return nil
}

// tlsConfig returns base asking for client certificates as mode says
// ("request" or "require"), checked at the handshake against the CAs of
// m.clientCA when given (then a self-signed client certificate must be
// among them), else taken as they come, for the issuer to check: the
// handshake proves the client holds the certificate's key either way.
func (m mtlsFlags) tlsConfig(base *tls.Config, mode string) (*tls.Config, error) {
	c := base.Clone()
	var pool *x509.CertPool
	if m.clientCA != "" {
		data, err := os.ReadFile(m.clientCA)
		if err != nil {
			return nil, err
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("-client-ca %s: no PEM certificate in it", m.clientCA)
		}
	}
	c.ClientCAs = pool
	switch {
	case mode == "require" && pool != nil:
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case mode == "require":
		c.ClientAuth = tls.RequireAnyClientCert
	case pool != nil:
		c.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		c.ClientAuth = tls.RequestClientCert
	}
	return c, nil
}

// serveAlias serves h on the mutual TLS listener m.addr until ctx ends,
// stopping the main listener (stop) if it fails; wait returns its end.
func (m mtlsFlags) serveAlias(ctx context.Context, stop func(), h http.Handler, base *tls.Config, drain time.Duration, logger *slog.Logger) (wait func() error, err error) {
	mode := m.clientAuth
	if mode == "" {
		mode = "request"
	}
	cfg, err := m.tlsConfig(base, mode)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := serving.Serve(ctx, serving.NewServer(h, logger), ln, cfg, drain, logger)
		stop()
		done <- err
	}()
	logger.Info("mutual TLS listener", slog.String("addr", "https://"+ln.Addr().String()), slog.String("client_certificates", mode))
	return func() error { return <-done }, nil
}

// warnings are what serve says at start of its mutual TLS flags against
// the configuration's mtls section: settings that serve, never refused,
// since another process may serve the alias. What discovery lists of a
// handshake that verifies certificates (-client-ca) is the issuer's to
// say (issuer.WithHandshakeVerification).
func (m mtlsFlags) warnings(c issuer.MTLSConfig) []string {
	var w []string
	asks := m.addr != "" || m.clientAuth == "request" || m.clientAuth == "require"
	switch {
	case m.addr != "" && c.Alias == "":
		w = append(w, "-mtls-addr is served, but the configuration names no mtls.alias: discovery does not tell clients to use it (set mtls.alias to the issuer URL on this listener, as clients reach it)")
	case m.addr == "" && c.Alias != "":
		w = append(w, fmt.Sprintf("mtls.alias is %s, but this process serves no -mtls-addr: discovery sends the clients that present a certificate there (mtls_endpoint_aliases), where nothing listens unless another process serves it", c.Alias))
	}
	if m.clientCA != "" && !asks {
		w = append(w, "-client-ca is given, but no listener asks for client certificates (-mtls-addr, or -client-auth request or require): it is not used")
	}
	return w
}

// printMTLS prints, for check-config, how the configuration uses mutual
// TLS: the CAs, alias and proxy, and each client's certificate.
func printMTLS(w io.Writer, cfg *issuer.Config) {
	m := cfg.MTLS
	if len(m.ClientCAs) == 0 && m.Alias == "" && m.CertificateHeader == "" {
		return
	}
	fmt.Fprintf(w, "mtls    %d CA file(s)", len(m.ClientCAs))
	if m.Alias != "" {
		fmt.Fprintf(w, "; alias %s", m.Alias)
	}
	if m.CertificateHeader != "" {
		fmt.Fprintf(w, "; certificates forwarded in %s by %v", m.CertificateHeader, m.TrustedProxies)
	}
	fmt.Fprintln(w)
}

// printClientMTLS prints, for check-config, how a client authenticates by
// certificate and whether its tokens are bound to one.
func printClientMTLS(w io.Writer, c issuer.ClientConfig) {
	a := c.TLSClientAuth
	for _, name := range []struct{ what, v string }{{"subject", a.SubjectDN}, {"DNS name", a.SANDNS}, {"URI", a.SANURI}, {"IP address", a.SANIP}, {"email", a.SANEmail}} {
		if name.v != "" {
			fmt.Fprintf(w, "    mtls      tls_client_auth: a certificate of the CAs with %s %s\n", name.what, name.v)
		}
	}
	if len(c.CertificateThumbprints) > 0 {
		fmt.Fprintf(w, "    mtls      self_signed_tls_client_auth: %d certificate thumbprint(s)\n", len(c.CertificateThumbprints))
	}
	if c.CertificateBoundTokens {
		fmt.Fprintln(w, "    bound     tokens bound to the certificate of each token request (required)")
	}
}
