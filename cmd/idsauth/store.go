package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/redisstore"
)

// serveConfig is the file idsauth serve reads: the issuer's configuration
// and, beside it, where the failure budgets live.
type serveConfig struct {
	issuer.Config
	// LimiterStore, when set, keeps the failure budgets (and the used
	// assertions' jtis) in a store that every replica shares.
	LimiterStore *storeConfig `json:"limiterStore,omitempty"`
	// TokenStore, when set, keeps the grants of reference tokens in a
	// Redis that every replica shares: another instance than the
	// limiter's, with maxmemory-policy noeviction (checked at start).
	TokenStore *storeConfig `json:"tokenStore,omitempty"`
}

// storeConfig is the limiterStore section.
type storeConfig struct {
	Redis *redisConfig `json:"redis"`
}

// redisConfig is a Redis shared by the replicas (see the redisstore
// module's README for what it keeps and how much memory it takes).
type redisConfig struct {
	// Address is host:port.
	Address string `json:"address"`
	// Username, for Redis ACLs; empty for none.
	Username string `json:"username,omitempty"`
	// PasswordFile holds the password (a trailing newline is dropped), or
	// PasswordEnv names the environment variable that does; never the
	// password itself in this file.
	PasswordFile string `json:"passwordFile,omitempty"`
	PasswordEnv  string `json:"passwordEnv,omitempty"`
	// DB is the database number.
	DB int `json:"db,omitempty"`
	// TLS connects with TLS; CAFile (PEM) replaces the system's roots,
	// ServerName the name checked in Redis's certificate (default the
	// address's host).
	TLS        bool   `json:"tls,omitempty"`
	CAFile     string `json:"caFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	// Prefix starts every key; default "idsauth:token:". Put a hash tag
	// in it for a Redis Cluster.
	Prefix string `json:"prefix,omitempty"`
	// OnUnavailable: "open" (the default: per-replica budgets while Redis
	// cannot answer) or "closed" (503 for every token request until it
	// answers).
	OnUnavailable string `json:"onUnavailable,omitempty"`
	// TimeoutMillis bounds each call to Redis; default 150.
	TimeoutMillis int `json:"timeoutMillis,omitempty"`
}

// loadServeConfig reads the file as the issuer's configuration plus the
// limiterStore section: strictly, relative paths from the file's folder.
func loadServeConfig(path string) (*serveConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c serveConfig
	if err := issuer.DecodeConfig(data, &c); err != nil {
		var ce *issuer.ConfigError
		if errors.As(err, &ce) {
			ce.File = path
			return nil, ce
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Dir = filepath.Dir(path)
	if c.LimiterStore != nil {
		if err := c.LimiterStore.check(); err != nil {
			return nil, fmt.Errorf("%s: limiterStore.%w", path, err)
		}
	}
	if c.TokenStore != nil {
		if err := c.TokenStore.check(); err != nil {
			return nil, fmt.Errorf("%s: tokenStore.%w", path, err)
		}
		if c.TokenStore.Redis.OnUnavailable != "" {
			return nil, fmt.Errorf("%s: tokenStore.redis.onUnavailable: the token store has no fallback: while Redis cannot answer, no reference token is issued", path)
		}
		if l := c.LimiterStore; l != nil && l.Redis.Address == c.TokenStore.Redis.Address {
			return nil, fmt.Errorf("%s: tokenStore.redis.address: the limiter's Redis (%s): the tokens need one of their own, with noeviction, where the limiter's evicts", path, l.Redis.Address)
		}
	}
	return &c, nil
}

// path is p, relative to the configuration file's folder unless absolute.
func (c *serveConfig) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

func (s *storeConfig) check() error {
	r := s.Redis
	if r == nil {
		return errors.New("redis: required (the one store serve knows)")
	}
	switch {
	case r.Address == "":
		return errors.New("redis.address: required")
	case r.PasswordFile != "" && r.PasswordEnv != "":
		return errors.New("redis: passwordFile and passwordEnv: give one")
	case r.OnUnavailable != "" && r.OnUnavailable != "open" && r.OnUnavailable != "closed":
		return fmt.Errorf("redis.onUnavailable: %q: want \"open\" or \"closed\"", r.OnUnavailable)
	case r.TimeoutMillis < 0:
		return errors.New("redis.timeoutMillis: negative")
	case !r.TLS && (r.CAFile != "" || r.ServerName != ""):
		return errors.New("redis: caFile and serverName need \"tls\": true")
	}
	return nil
}

// limiterStore is a store made from the configuration, and how to tell
// whether it answers.
type limiterStore struct {
	store *redisstore.Store
	rdb   *redis.Client
}

// redisClient makes the client of the Redis that section (named by
// field, for errors) describes. It connects nothing yet: go-redis dials
// on first use.
func (c *serveConfig) redisClient(field string, r *redisConfig) (*redis.Client, error) {
	opts := &redis.Options{Addr: r.Address, Username: r.Username, DB: r.DB, ContextTimeoutEnabled: true}
	switch {
	case r.PasswordFile != "":
		b, err := os.ReadFile(c.path(r.PasswordFile))
		if err != nil {
			return nil, fmt.Errorf("%s.redis.passwordFile: %w", field, err)
		}
		opts.Password = strings.TrimRight(string(b), "\r\n")
	case r.PasswordEnv != "":
		opts.Password = os.Getenv(r.PasswordEnv)
		if opts.Password == "" {
			return nil, fmt.Errorf("%s.redis.passwordEnv: %s is empty or unset", field, r.PasswordEnv)
		}
	}
	if r.TLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: r.ServerName}
		if r.CAFile != "" {
			p := c.path(r.CAFile)
			pem, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("%s.redis.caFile: %w", field, err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s.redis.caFile: %s holds no PEM certificate", field, p)
			}
		}
		opts.TLSConfig = tc
	}
	return redis.NewClient(opts), nil
}

// newTokenStore makes the shared token store of the tokenStore section,
// and checks that its Redis evicts nothing: it refuses to start on a
// Redis whose policy may evict live grants, and logs a warning when the
// policy cannot be read (Redis down, or CONFIG refused by a managed one).
func newTokenStore(ctx context.Context, c *serveConfig, logger *slog.Logger) (*redisstore.TokenStore, *redis.Client, error) {
	r := c.TokenStore.Redis
	rdb, err := c.redisClient("tokenStore", r)
	if err != nil {
		return nil, nil, err
	}
	prefix := r.Prefix
	if prefix == "" {
		prefix = "idsauth:ref:"
	}
	ts := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: prefix, Timeout: time.Duration(r.TimeoutMillis) * time.Millisecond})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := ts.CheckEviction(ctx); err != nil {
		if strings.Contains(err.Error(), "maxmemory-policy") && !strings.Contains(err.Error(), "CheckEviction") {
			rdb.Close()
			return nil, nil, fmt.Errorf("tokenStore: %w", err)
		}
		logger.Warn("tokenStore: cannot read the Redis's maxmemory-policy: make sure it is noeviction", slog.String("error", err.Error()))
	}
	return ts, rdb, nil
}

// newLimiterStore connects nothing yet: go-redis dials on first use, so a
// Redis that is down at start leaves the service up, on its fallback.
func newLimiterStore(c *serveConfig, logger *slog.Logger) (*limiterStore, error) {
	r := c.LimiterStore.Redis
	rdb, err := c.redisClient("limiterStore", r)
	if err != nil {
		return nil, err
	}
	prefix := r.Prefix
	if prefix == "" {
		prefix = "idsauth:token:"
	}
	mode := redisstore.FailOpen
	if r.OnUnavailable == "closed" {
		mode = redisstore.FailClosed
	}
	store := redisstore.New(rdb, redisstore.Options{
		Prefix: prefix, Timeout: time.Duration(r.TimeoutMillis) * time.Millisecond,
		OnUnavailable: mode, Logger: logger,
	})
	return &limiterStore{store: store, rdb: rdb}, nil
}

// ping reports whether Redis answers within a second.
func (l *limiterStore) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return l.rdb.Ping(ctx).Err()
}

// sameStore reports whether a reloaded file asks for the store in use: a
// store cannot be swapped by a reload.
func sameStore(a, b *storeConfig) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
