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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/internal/promtext"
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
	// Address is host:port, of one Redis; or Cluster is the host:port of
	// some nodes of a Redis Cluster (at least one; the client finds the
	// others from them). One of the two.
	Address string   `json:"address,omitempty"`
	Cluster []string `json:"cluster,omitempty"`
	// Username, for Redis ACLs; empty for none.
	Username string `json:"username,omitempty"`
	// PasswordFile holds the password (a trailing newline is dropped), or
	// PasswordEnv names the environment variable that does; never the
	// password itself in this file.
	PasswordFile string `json:"passwordFile,omitempty"`
	PasswordEnv  string `json:"passwordEnv,omitempty"`
	// DB is the database number (a Cluster has only 0).
	DB int `json:"db,omitempty"`
	// TLS connects with TLS; CAFile (PEM) replaces the system's roots,
	// ServerName the name checked in Redis's certificate (default the
	// address's host; on a Cluster, each node's).
	TLS        bool   `json:"tls,omitempty"`
	CAFile     string `json:"caFile,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	// Prefix starts every key; default "idsauth:token:". No hash tag on
	// a Cluster: the stores tag their keys themselves (see the redisstore
	// README), and a tag here would put every key on one master.
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
	case r.Address == "" && len(r.Cluster) == 0:
		return errors.New(`redis.address: required (or "cluster": the host:port of some nodes of a Redis Cluster)`)
	case r.Address != "" && len(r.Cluster) > 0:
		return errors.New(`redis.cluster: give "address" (one Redis) or "cluster" (a Redis Cluster's nodes), not both`)
	case len(r.Cluster) > 0 && slices.Contains(r.Cluster, ""):
		return fmt.Errorf("redis.cluster[%d]: empty", slices.Index(r.Cluster, ""))
	case len(r.Cluster) > 0 && r.DB != 0:
		return errors.New("redis.db: a Redis Cluster has database 0 only")
	case len(r.Cluster) > 0 && hasHashTag(r.Prefix):
		return fmt.Errorf("redis.prefix: %q has a hash tag ({...}), which would put every key on one slot, one master of the cluster: leave it out, the store tags each key itself", r.Prefix)
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

// hasHashTag reports whether keys that start with prefix all hash to one
// slot of a Redis Cluster: it holds "{", at least one byte, then "}".
func hasHashTag(prefix string) bool {
	_, rest, ok := strings.Cut(prefix, "{")
	return ok && strings.IndexByte(rest, '}') > 0
}

// where says which Redis r is, for logs and check-config.
func (r *redisConfig) where() string {
	if len(r.Cluster) > 0 {
		return "Redis Cluster at " + strings.Join(r.Cluster, ", ")
	}
	return "Redis at " + r.Address
}

// nodes are the addresses r names.
func (r *redisConfig) nodes() []string {
	if len(r.Cluster) > 0 {
		return r.Cluster
	}
	return []string{r.Address}
}

// limiterStore is a store made from the configuration, and how to tell
// whether it answers.
type limiterStore struct {
	store *redisstore.Store
	rdb   redis.UniversalClient
}

// redisClient makes the client of the Redis that section (named by
// field, for errors) describes: a *redis.Client, or a
// *redis.ClusterClient for a cluster. It connects nothing yet: go-redis
// dials on first use.
func (c *serveConfig) redisClient(field string, r *redisConfig) (redis.UniversalClient, error) {
	return newRedisClient(c.path, field, r)
}

// newRedisClient is serveConfig.redisClient for any file: path resolves
// a file the section names.
func newRedisClient(path func(string) string, field string, r *redisConfig) (redis.UniversalClient, error) {
	opts := &redis.UniversalOptions{Addrs: r.nodes(), Username: r.Username, DB: r.DB, ContextTimeoutEnabled: true}
	switch {
	case r.PasswordFile != "":
		b, err := os.ReadFile(path(r.PasswordFile))
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
			p := path(r.CAFile)
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
	if len(r.Cluster) > 0 {
		return redis.NewClusterClient(opts.Cluster()), nil
	}
	return redis.NewClient(opts.Simple()), nil
}

// eachNode runs fn on rdb, or on each node of a cluster (masters and
// replicas: a replica becomes a master on a failover), one at a time.
func eachNode(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node *redis.Client) error) error {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, rdb.(*redis.Client))
	}
	var mu sync.Mutex
	return c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(ctx, node)
	})
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
func newTokenStore(ctx context.Context, c *serveConfig, logger *slog.Logger) (*redisstore.TokenStore, redis.UniversalClient, error) {
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
		if evicts := (*redisstore.EvictionError)(nil); errors.As(err, &evicts) {
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

// tokenStoreReadiness says what /readyz says of the token store, from
// what its Masters found: not ready when none of its masters answers
// within the store's bound (no reference token can then be issued or
// checked), or the masters are unknown; degraded while some do not (the
// reference tokens on their slots cannot be issued, checked or revoked,
// the rest can, and JWTs need no token store).
func tokenStoreReadiness(masters []redisstore.Master, err error) (notReady, degraded string) {
	var down []string
	for _, m := range masters {
		if !m.Answers {
			down = append(down, m.Addr)
		}
	}
	switch {
	case err != nil || len(down) == len(masters):
		return "the token store (Redis) does not answer within its bound: no reference token can be issued or checked", ""
	case len(down) > 0:
		return "", fmt.Sprintf("%d of the token store's %d masters do not answer within its bound (%s): the reference tokens on their slots cannot be issued, checked or revoked",
			len(down), len(masters), strings.Join(down, ", "))
	}
	return "", ""
}

// writeTokenStoreMetrics writes a gauge per master of the token store,
// as its Masters found them.
func writeTokenStoreMetrics(pw *promtext.Writer, masters []redisstore.Master) {
	pw.Header("idsauth_token_store_master_up", "Whether each master of the token store's Redis (the one Redis, or each master of a cluster) answered PING within the store's bound (1) or not (0), when scraped.", "gauge")
	for _, m := range masters {
		up := "0"
		if m.Answers {
			up = "1"
		}
		pw.Sample("idsauth_token_store_master_up", []string{"node"}, []string{m.Addr}, up)
	}
}

// checkPersistence refuses a Redis, or a cluster with a node, that keeps
// nothing across a restart (appendonly no and no save points): a restart
// of it would end every live reference token (on a cluster, those on its
// slots) without a word, introspection calling inactive the tokens
// clients still hold. It warns about snapshots only (a crash loses the
// grants since the last one), and when it cannot read the settings.
func checkPersistence(ctx context.Context, rdb redis.UniversalClient, logger *slog.Logger) error {
	var forgets []string
	err := eachNode(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		var settings [2]string
		for i, name := range []string{"appendonly", "save"} {
			m, err := node.ConfigGet(ctx, name).Result()
			v, ok := m[name]
			if err == nil && !ok {
				err = fmt.Errorf("CONFIG GET %s: no such setting", name)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", node.Options().Addr, err)
			}
			settings[i] = v
		}
		switch appendonly, save := settings[0], settings[1]; {
		case appendonly == "yes":
		case save != "":
			logger.Warn("tokenStore: the Redis keeps snapshots only (appendonly no): a crash or kill of it ends the reference tokens issued since its last snapshot; appendonly yes loses a second at most",
				slog.String("node", node.Options().Addr), slog.String("save", save))
		default:
			forgets = append(forgets, node.Options().Addr)
		}
		return nil
	})
	if len(forgets) > 0 {
		slices.Sort(forgets)
		return fmt.Errorf(`tokenStore: the Redis at %s keeps nothing across a restart (appendonly no, save ""): a restart of it would end every live reference token it holds, and introspection would call inactive the tokens clients still hold; set appendonly yes on it, or "allowNoPersistence": true in the tokenStore section to accept that`, strings.Join(forgets, ", "))
	}
	if err != nil {
		logger.Warn("tokenStore: cannot read whether the Redis keeps its data across a restart (appendonly, save): without persistence, a restart of it ends every live reference token; make sure it has appendonly yes",
			slog.String("error", err.Error()))
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

// ping reports whether Redis, or every master of a cluster, answers
// within a second.
func (l *limiterStore) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if c, ok := l.rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return node.Ping(ctx).Err()
		})
	}
	return l.rdb.Ping(ctx).Err()
}

// sameStore reports whether a reloaded file asks for the store in use: a
// store cannot be swapped by a reload.
func sameStore[T any](a, b *T) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
