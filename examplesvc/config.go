package main

import (
	"crypto/x509"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
)

//go:embed default-config.json
var defaultConfig []byte

// fileConfig is the service's configuration file: the issuer's fields
// (package issuer documents them) and, beside them, the SCIM tenants, so
// that one reload updates both.
type fileConfig struct {
	issuer.Config
	SCIMTenants []middleware.TenantConfig // the file's scimTenants
}

// configSource is where the configuration comes from.
type configSource struct {
	// file is the configuration file; empty means the embedded demo
	// configuration.
	file string
	// issuer, when set, replaces the configuration's issuer URL: the
	// -issuer flag, or the listen address for the demo configuration.
	// Empty keeps the file's issuer as it is.
	issuer string
	// mtlsAlias, when set, is the issuer URL on the mutual TLS listener
	// (-mtls-addr): the configuration's mtls.alias unless it names one.
	mtlsAlias string
}

// load reads and strictly decodes the configuration without checking its
// values or reading its key files: each section is checked once when it
// is applied, the issuer's by issuer.New or Reload (which read the key
// files then), the tenants by fileConfig.tenants.
func (s configSource) load() (*fileConfig, error) {
	data, dir := defaultConfig, ""
	if s.file != "" {
		var err error
		if data, err = os.ReadFile(s.file); err != nil {
			return nil, err
		}
		dir = filepath.Dir(s.file)
	}
	var tenants []middleware.TenantConfig
	cfg, err := issuer.ParseConfig(data, dir, map[string]any{"scimTenants": &tenants})
	if err != nil {
		return nil, err
	}
	c := &fileConfig{Config: *cfg, SCIMTenants: tenants}
	if s.issuer != "" {
		c.Issuer = s.issuer
	}
	if s.file == "" {
		// demo-mtls's CA: the demo configuration cannot name the
		// embedded file.
		c.MTLS.ClientCACerts = []*x509.Certificate{exampleCA()}
	}
	if s.mtlsAlias != "" && c.MTLS.Alias == "" {
		c.MTLS.Alias = s.mtlsAlias
	}
	return c, nil
}

// tenants checks the SCIM tenants and returns a store of them.
func (c *fileConfig) tenants() (*middleware.Tenants, error) {
	m, err := middleware.NewTenants(c.SCIMTenants)
	var te *middleware.TenantConfigError
	if errors.As(err, &te) {
		return nil, fmt.Errorf("configuration: scimTenants%s: %s", te.Field, te.Reason)
	}
	return m, err
}

// issuerWarnings says what looks wrong with a configured issuer URL for a
// service listening on listen. Each may be right behind a proxy, so they
// are warnings, and the URL is never rewritten.
func issuerWarnings(issuerURL string, listen net.Addr) []string {
	u, err := url.Parse(issuerURL)
	if err != nil {
		return nil // issuer.New has refused it already
	}
	var warns []string
	if u.Path != "/ids" {
		warns = append(warns, "the issuer URL's path is not /ids, where this service serves the identity service; tokens and discovery point elsewhere unless a proxy maps the path")
	}
	if !sameHost(u, listen) {
		warns = append(warns, "the issuer URL's host is not the listen address; right behind a proxy that serves that host, wrong otherwise (-issuer replaces it)")
	}
	return warns
}

// sameHost reports whether u names the listen address. A service
// listening on every interface matches any host with its port.
func sameHost(u *url.URL, listen net.Addr) bool {
	lhost, lport, err := net.SplitHostPort(listen.String())
	if err != nil {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if port != lport {
		return false
	}
	if ip := net.ParseIP(lhost); ip != nil && ip.IsUnspecified() {
		return true
	}
	return u.Hostname() == lhost
}
