package redisstore_test

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/redisstore"
)

// Every replica of the issuer builds the same store on the same Redis:
// they then enforce one failure budget per client and per address.
// SCIMAuth gets a store of its own prefix.
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "redis.internal:6379", ContextTimeoutEnabled: true})
	logger := slog.Default()

	cfg, err := issuer.LoadConfig("/etc/idsauth/idsauth.json")
	if err != nil {
		logger.Error("config", "error", err)
		return
	}
	iss, err := issuer.New(cfg, issuer.WithLogger(logger),
		issuer.WithLimiterStore(redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:token:", Logger: logger})))
	if err != nil {
		logger.Error("issuer", "error", err)
		return
	}

	tenants, err := middleware.NewTenants(nil) // from the service's file: []middleware.TenantConfig
	if err != nil {
		logger.Error("tenants", "error", err)
		return
	}
	scim := middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{
		Store: redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:scim:", Logger: logger}),
	})

	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	mux.Handle("/webapi/scim-api/v1/{tenant}/scim/", scim(http.NotFoundHandler()))
}

// jtisApart keeps the failure budgets in one store and the assertion jtis
// in another.
type jtisApart struct {
	limit.Store
	jtis limit.ReplayStore
}

func (s jtisApart) Remember(ctx context.Context, r limit.Replay) (bool, error) {
	return s.jtis.Remember(ctx, r)
}

// The store remembers the jti of each client assertion too, so that the
// replicas accept it once between them. Where the budgets' Redis evicts
// keys under memory pressure, give the jtis a Redis of their own that
// does not (maxmemory-policy noeviction), and fail closed there: a full
// or dead Redis then refuses assertions rather than letting one in twice.
func ExampleStore_Remember() {
	budgets := redis.NewClient(&redis.Options{Addr: "redis.internal:6379", ContextTimeoutEnabled: true})
	jtis := redis.NewClient(&redis.Options{Addr: "redis-jti.internal:6379", ContextTimeoutEnabled: true})
	store := jtisApart{
		Store: redisstore.New(budgets, redisstore.Options{Prefix: "idsauth:token:"}),
		jtis:  redisstore.New(jtis, redisstore.Options{Prefix: "idsauth:jti:", OnUnavailable: redisstore.FailClosed}),
	}
	cfg, err := issuer.LoadConfig("/etc/idsauth/idsauth.json")
	if err != nil {
		return
	}
	iss, err := issuer.New(cfg, issuer.WithLimiterStore(store))
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
}

// Reference tokens shared by the issuer's replicas live in a Redis of
// their own, which must not evict: CheckEviction says so at start.
func ExampleNewTokenStore() {
	tdb := redis.NewClient(&redis.Options{Addr: "redis-tokens.internal:6379", ContextTimeoutEnabled: true})
	tokens := redisstore.NewTokenStore(tdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	if err := tokens.CheckEviction(context.Background()); err != nil {
		slog.Warn("the token store's Redis", "error", err) // noeviction, or live tokens may vanish
	}
	_, _ = issuer.New(&issuer.Config{ /* ... */ }, issuer.WithTokenStore(tokens))
}

// On a Redis Cluster, the stores take a *redis.ClusterClient, told some
// of the nodes, and a Prefix without a hash tag: each key is tagged by its
// client or its address, so that a client's data is on one slot and the
// clients spread over the masters. The tokens get a cluster of their own
// (noeviction, appendonly yes on every node).
func ExampleNew_cluster() {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"redis-0.internal:6379", "redis-1.internal:6379"},
		ContextTimeoutEnabled: true,
	})
	tdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"tokens-0.internal:6379", "tokens-1.internal:6379"},
		ContextTimeoutEnabled: true,
	})
	tokens := redisstore.NewTokenStore(tdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	if err := tokens.CheckEviction(context.Background()); err != nil { // every node's policy
		slog.Error("token store", "error", err)
		return
	}
	cfg, err := issuer.LoadConfig("/etc/idsauth/idsauth.json")
	if err != nil {
		slog.Error("config", "error", err)
		return
	}
	iss, err := issuer.New(cfg,
		issuer.WithLimiterStore(redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:token:"})),
		issuer.WithTokenStore(tokens))
	if err != nil {
		slog.Error("issuer", "error", err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
}
