package redisstore_test

import (
	"log/slog"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/issuer"
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

	tenants := middleware.NewTenants(nil)
	scim := middleware.SCIMAuthWithConfig(tenants, middleware.SCIMConfig{Limits: middleware.SCIMLimits{
		Store: redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:scim:", Logger: logger}),
	}})

	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	mux.Handle("/webapi/scim-api/v1/{tenant}/scim/", scim(http.NotFoundHandler()))
}
