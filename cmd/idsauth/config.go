package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
)

// serveConfig is the file serve, check-config and migrate read: the
// issuer's configuration and, beside it, where the failure budgets, the
// reference tokens and the registered clients live, and the SCIM tenants of a service that shares
// the file (checked, not served by serve).
type serveConfig struct {
	issuer.Config
	// LimiterStore (the file's limiterStore), when set, keeps the failure
	// budgets (and the used assertions' jtis) in a store that every
	// replica shares.
	LimiterStore *storeConfig
	// TokenStore (tokenStore), when set, keeps the grants of reference
	// tokens in a Redis that every replica shares: another instance than
	// the limiter's, with maxmemory-policy noeviction and persistence
	// (checked at start).
	TokenStore *tokenStoreConfig
	// ClientStore (clientStore), when set, keeps registered clients and
	// API resources in a PostgreSQL every replica shares, beside the
	// file's, managed through the administration API.
	ClientStore *clientStoreConfig
	// SCIMTenants (scimTenants) are the example service's (or a service's
	// of its own) beside the issuer's fields in one file: checked, not
	// served.
	SCIMTenants []middleware.TenantConfig
}

// loadServeConfig reads the file as serve reads it, at start and at each
// reload, and as check-config reads it: strictly, relative paths from the
// file's folder, each section checked but the issuer's, which issuer.New
// or Reload checks (see inFile). Every error names the file.
func loadServeConfig(path string) (*serveConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c serveConfig
	cfg, err := issuer.ParseConfig(data, filepath.Dir(path), map[string]any{
		"limiterStore": &c.LimiterStore,
		"tokenStore":   &c.TokenStore,
		"clientStore":  &c.ClientStore,
		"scimTenants":  &c.SCIMTenants,
	})
	if err != nil {
		return nil, inFile(path, err)
	}
	c.Config = *cfg
	if err := c.checkKeyFiles(); err != nil {
		return nil, inFile(path, err)
	}
	if _, err := middleware.NewTenants(c.SCIMTenants); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err) // "SCIM tenants: [1].tenant: ..."
	}
	if c.LimiterStore != nil {
		if err := c.LimiterStore.check(); err != nil {
			return nil, fmt.Errorf("%s: limiterStore.%w", path, err)
		}
	}
	if c.ClientStore != nil {
		if err := c.ClientStore.check(c.Scopes); err != nil {
			return nil, fmt.Errorf("%s: clientStore.%w", path, err)
		}
	}
	if c.TokenStore != nil {
		if err := c.TokenStore.check(); err != nil {
			return nil, fmt.Errorf("%s: tokenStore.%w", path, err)
		}
		if c.TokenStore.Redis.OnUnavailable != "" {
			return nil, fmt.Errorf("%s: tokenStore.redis.onUnavailable: the token store has no fallback: while Redis cannot answer, no reference token is issued", path)
		}
		if l := c.LimiterStore; l != nil {
			field := "address"
			if len(c.TokenStore.Redis.Cluster) > 0 {
				field = "cluster"
			}
			for _, a := range c.TokenStore.Redis.nodes() {
				if slices.Contains(l.Redis.nodes(), a) {
					return nil, fmt.Errorf("%s: tokenStore.redis.%s: the limiter's Redis (%s): the tokens need one of their own, with noeviction, where the limiter's evicts", path, field, a)
				}
			}
		}
	}
	return &c, nil
}

// inFile names the file in a *issuer.ConfigError that does not name one
// yet (issuer.New's, say), so that serve, a reload and check-config say
// which file is wrong alike.
func inFile(path string, err error) error {
	var ce *issuer.ConfigError
	if errors.As(err, &ce) {
		if ce.File == "" {
			ce.File = path
		}
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// checkKeyFiles opens each signing key file the issuer will read, so that
// one it may not read is an error that keeps its cause (fs.ErrPermission:
// see explainPermission), where the issuer's own error says only why.
func (c *serveConfig) checkKeyFiles() error {
	for i, k := range c.Keys {
		if k.File == "" {
			continue
		}
		f, err := os.Open(c.path(k.File))
		if errors.Is(err, fs.ErrPermission) {
			return &issuer.ConfigError{Field: fmt.Sprintf("keys[%d].file", i), Reason: err.Error(), Err: err}
		}
		if err == nil {
			f.Close()
		}
	}
	return nil
}

// path is p, relative to the configuration file's folder unless absolute.
func (c *serveConfig) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

// explainPermission adds to an error that a file may not be read (or
// written) who is asking, and what to do: in the container image, the
// mounted files must be readable by its user, 65532.
func explainPermission(err error) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w (idsauth runs as uid %d, gid %d: give that user access, such as chown %d FILE and chmod 0400 FILE for a key file; the container image runs as uid 65532)",
		err, os.Getuid(), os.Getgid(), os.Getuid())
}
