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
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/redisstore"
)

// storeConfig is the limiterStore section.
type storeConfig struct {
	Redis *redisConfig `json:"redis"`
}

// tokenStoreConfig is the tokenStore section.
type tokenStoreConfig struct {
	storeConfig
	// AllowNoPersistence starts serve on a Redis that keeps nothing
	// across a restart (appendonly no, no save points), which it refuses
	// otherwise: a restart of that Redis ends every live reference token.
	AllowNoPersistence bool `json:"allowNoPersistence,omitempty"`
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

// startTimeout bounds what a start (or check-config) waits for the token
// store's Redis: a connection and the checks below. A start may wait for
// a connection; a call to the store may not.
const startTimeout = 5 * time.Second

// newTokenStore makes the shared token store of the tokenStore section,
// and checks its Redis: it refuses one whose policy may evict live grants,
// or that keeps nothing across a restart (unless allowNoPersistence), and
// logs a warning when it cannot tell (Redis down, or CONFIG refused by a
// managed one) or when Redis keeps snapshots only.
func newTokenStore(ctx context.Context, c *serveConfig, logger *slog.Logger) (*redisstore.TokenStore, *redis.Client, error) {
	tc := c.TokenStore
	rdb, err := c.redisClient("tokenStore", tc.Redis)
	if err != nil {
		return nil, nil, err
	}
	prefix := tc.Redis.Prefix
	if prefix == "" {
		prefix = "idsauth:ref:"
	}
	ts := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: prefix, Timeout: time.Duration(tc.Redis.TimeoutMillis) * time.Millisecond})
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// One connection made within the start's bound, for the checks below
	// and the first calls: a call's own bound is too short to make one
	// where Redis is far.
	_ = rdb.Ping(ctx).Err() // a Redis down is told by the checks
	if err := ts.CheckEviction(ctx); err != nil {
		if strings.Contains(err.Error(), "maxmemory-policy") && !strings.Contains(err.Error(), "CheckEviction") {
			rdb.Close()
			return nil, nil, fmt.Errorf("tokenStore: %w", err)
		}
		logger.Warn("tokenStore: cannot read the Redis's maxmemory-policy: make sure it is noeviction", slog.String("error", err.Error()))
	}
	if !tc.AllowNoPersistence {
		if err := checkPersistence(ctx, rdb, logger); err != nil {
			rdb.Close()
			return nil, nil, err
		}
	}
	return ts, rdb, nil
}

// checkPersistence refuses a Redis that keeps nothing across a restart
// (appendonly no and no save points): a restart of it would end every
// live reference token without a word, introspection calling inactive
// the tokens clients still hold. It warns about snapshots only (a crash
// loses the grants since the last one), and when it cannot read the
// settings.
func checkPersistence(ctx context.Context, rdb *redis.Client, logger *slog.Logger) error {
	var settings [2]string
	for i, name := range []string{"appendonly", "save"} {
		m, err := rdb.ConfigGet(ctx, name).Result()
		v, ok := m[name]
		if err == nil && !ok {
			err = fmt.Errorf("CONFIG GET %s: no such setting", name)
		}
		if err != nil {
			logger.Warn("tokenStore: cannot read whether the Redis keeps its data across a restart (appendonly, save): without persistence, a restart of it ends every live reference token; make sure it has appendonly yes",
				slog.String("error", err.Error()))
			return nil
		}
		settings[i] = v
	}
	switch appendonly, save := settings[0], settings[1]; {
	case appendonly == "yes":
	case save != "":
		logger.Warn("tokenStore: the Redis keeps snapshots only (appendonly no): a crash or kill of it ends the reference tokens issued since its last snapshot; appendonly yes loses a second at most",
			slog.String("save", save))
	default:
		return fmt.Errorf(`tokenStore: the Redis keeps nothing across a restart (appendonly no, save ""): a restart of it would end every live reference token, and introspection would call inactive the tokens clients still hold; set appendonly yes on it, or "allowNoPersistence": true in the tokenStore section to accept that`)
	}
	return nil
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
func sameStore[T any](a, b *T) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
