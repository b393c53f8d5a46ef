package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/idsauth/idsauth/issuer"
)

//go:embed default-config.json
var defaultConfig []byte

// configSource is where the configuration comes from.
type configSource struct {
	// file is the configuration file; empty means the embedded demo
	// configuration.
	file string
	// issuer, when set, replaces the configuration's issuer URL: the
	// -issuer flag, or the listen address for the demo configuration.
	// Empty keeps the file's issuer as it is.
	issuer string
}

// load reads the configuration without checking it: issuer.New or
// Reload checks it, once, and reads the key files then. (issuer.LoadConfig
// would check it and read the keys first, only for New to do it again.)
func (s configSource) load() (*issuer.Config, error) {
	data, dir := defaultConfig, "."
	if s.file != "" {
		var err error
		if data, err = os.ReadFile(s.file); err != nil {
			return nil, err
		}
		dir = filepath.Dir(s.file)
	}
	cfg, err := decodeConfig(data, dir)
	if err != nil {
		return nil, err
	}
	if s.issuer != "" {
		cfg.Issuer = s.issuer
	}
	return cfg, nil
}

// decodeConfig decodes the issuer's file format (which holds the SCIM
// tenants too). Relative key file paths are read from dir, as
// issuer.ParseConfig reads them.
func decodeConfig(data []byte, dir string) (*issuer.Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c issuer.Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("configuration: more than one JSON value")
	}
	for i, k := range c.Keys {
		if k.File != "" && !filepath.IsAbs(k.File) {
			c.Keys[i].File = filepath.Join(dir, k.File)
		}
	}
	return &c, nil
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
