package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/promtext"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
)

// clientStoreConfig is the clientStore section: where the registered
// clients live, beside the file's.
type clientStoreConfig struct {
	Postgres *postgresConfig `json:"postgres"`
}

// postgresConfig is the client registry's PostgreSQL.
type postgresConfig struct {
	// URLEnv names the environment variable holding the database's URL,
	// password included: never the URL itself in this file.
	URLEnv string `json:"urlEnv"`
	// URL is refused: a password does not belong in the file.
	URL string `json:"url,omitempty"`
	// ReconcileSeconds is how often each replica asks whether it missed a
	// change; default 10.
	ReconcileSeconds int `json:"reconcileSeconds,omitempty"`
	// TimeoutMillis bounds each call to the database; default 5000.
	TimeoutMillis int `json:"timeoutMillis,omitempty"`
}

func (c *clientStoreConfig) check(scopes []string) error {
	p := c.Postgres
	switch {
	case p == nil:
		return errors.New("postgres: required (the one client store serve knows)")
	case p.URL != "":
		return errors.New("postgres.url: the URL holds the password: put it in an environment variable and name that in urlEnv")
	case p.URLEnv == "":
		return errors.New("postgres.urlEnv: required: the environment variable that holds the database's URL")
	case p.ReconcileSeconds < 0:
		return errors.New("postgres.reconcileSeconds: negative")
	case p.TimeoutMillis < 0:
		return errors.New("postgres.timeoutMillis: negative")
	case !slices.Contains(scopes, pgregistry.AdminScope):
		return fmt.Errorf("postgres: the administration API admits tokens with the scope %q: add it to the issuer's scopes (and give it to an administrator client of this file)", pgregistry.AdminScope)
	}
	return nil
}

// databaseURL reads the URL from the environment variable the section
// names.
func (c *clientStoreConfig) databaseURL(getenv func(string) string) (string, error) {
	u := getenv(c.Postgres.URLEnv)
	if u == "" {
		return "", fmt.Errorf("clientStore.postgres.urlEnv: %s is empty or unset", c.Postgres.URLEnv)
	}
	return u, nil
}

// newRegistry makes the client registry of the clientStore section, for
// iss; nothing is dialled yet.
func newRegistry(ctx context.Context, c *serveConfig, iss *issuer.Issuer, logger *slog.Logger, getenv func(string) string) (*pgregistry.Registry, error) {
	p := c.ClientStore.Postgres
	u, err := c.ClientStore.databaseURL(getenv)
	if err != nil {
		return nil, err
	}
	addrs := clientip.Resolver{Header: c.Limits.TrustedProxyHeader, Trusted: c.Limits.TrustedProxies, NAT64: c.Limits.NAT64Prefixes}
	reg, err := pgregistry.New(ctx, pgregistry.Config{URL: u, Issuer: iss, Logger: logger,
		Reconcile: time.Duration(p.ReconcileSeconds) * time.Second, Timeout: time.Duration(p.TimeoutMillis) * time.Millisecond,
		ClientAddress: addrs.Addr})
	if err != nil {
		return nil, fmt.Errorf("clientStore.postgres: %w", err)
	}
	return reg, nil
}

// waitRegistry waits, within the start's bound, for the registry's first
// load: check-config's, and serve's before it warns that it has none.
func waitRegistry(ctx context.Context, reg *pgregistry.Registry) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return reg.WaitLoaded(ctx)
}

// logRegistryLoad logs the registry's first load when it comes, while
// serve listens (not ready until then, serving the file's clients), and
// a warning first when it has not come within the start's bound; it
// returns when ctx ends.
func logRegistryLoad(ctx context.Context, reg *pgregistry.Registry, logger *slog.Logger, admin string) {
	if err := waitRegistry(ctx, reg); err != nil {
		if ctx.Err() != nil {
			return
		}
		logger.Warn("the client registry is not loaded yet: not ready until it is, serving the file's clients meanwhile", slog.String("error", err.Error()))
		if reg.WaitLoaded(ctx) != nil {
			return
		}
	}
	st := reg.Status()
	logger.Info("registered clients in PostgreSQL", slog.Bool("loaded", st.Loaded), slog.Int("clients", st.Clients), slog.Int("api_resources", st.APIResources),
		slog.String("admin", admin))
}

// registryReadiness says what /readyz says of the registry: not ready
// before its first load, ready but degraded while the database does not
// answer (every replica serves its snapshot: taking them all out of
// rotation would refuse every client, the file's too), else nothing.
func registryReadiness(reg *pgregistry.Registry) (notReady, degraded string) {
	st := reg.Status()
	switch {
	case !st.Loaded:
		return "the client registry (PostgreSQL) has not been loaded yet", ""
	case !st.Up:
		return "", fmt.Sprintf("the client registry (PostgreSQL) does not answer since %s: serving its snapshot of %d clients and %d API resources loaded at %s; its administration API answers 503",
			st.Since.UTC().Format(time.RFC3339), st.Clients, st.APIResources, st.LoadedAt.UTC().Format(time.RFC3339))
	}
	return "", ""
}

// writeRegistryMetrics writes the registry's gauges and counters.
func writeRegistryMetrics(pw *promtext.Writer, reg *pgregistry.Registry) {
	st := reg.Status()
	up := "0"
	if st.Up {
		up = "1"
	}
	pw.Header("idsauth_registry_up", "Whether the client registry's database answered the last time it was asked (1) or not (0).", "gauge")
	pw.Sample("idsauth_registry_up", nil, nil, up)
	pw.Header("idsauth_registry_registrations", "The registrations served from the registry's snapshot, by kind (client, api), and those left out (left).", "gauge")
	pw.Sample("idsauth_registry_registrations", []string{"kind"}, []string{"client"}, strconv.Itoa(st.Clients))
	pw.Sample("idsauth_registry_registrations", []string{"kind"}, []string{"api"}, strconv.Itoa(st.APIResources))
	pw.Sample("idsauth_registry_registrations", []string{"kind"}, []string{"left"}, strconv.Itoa(st.Left))
	pw.Header("idsauth_registry_generation", "The generation of the registry's snapshot: every change adds one.", "gauge")
	pw.Sample("idsauth_registry_generation", nil, nil, strconv.FormatInt(st.Generation, 10))
	var at int64
	if st.Loaded {
		at = st.LoadedAt.Unix()
	}
	pw.Header("idsauth_registry_last_load_timestamp_seconds", "When the registry's snapshot was last loaded, in Unix seconds; 0 never.", "gauge")
	pw.Sample("idsauth_registry_last_load_timestamp_seconds", nil, nil, strconv.FormatInt(at, 10))
	ok, failed := reg.Loads()
	pw.Header("idsauth_registry_loads_total", "Loads of the registry's snapshot, by result (ok, failed).", "counter")
	pw.Sample("idsauth_registry_loads_total", []string{"result"}, []string{"ok"}, strconv.FormatUint(ok, 10))
	pw.Sample("idsauth_registry_loads_total", []string{"result"}, []string{"failed"}, strconv.FormatUint(failed, 10))
}

const migrateAbout = `Bring the client registry's PostgreSQL schema to this release's version:
the database of the configuration file's clientStore section, its URL read
from the environment variable that section names (urlEnv). The migrations
are built in, versioned and applied in one transaction; running it again
changes nothing. Run it before the first serve with a clientStore, and
before starting a release whose CHANGELOG says its schema changed.`

func migrateCommand(ctx context.Context, e env, args []string) error {
	fs := flags(e, "migrate", "[-config] FILE", migrateAbout)
	config := fs.String("config", "", "the configuration file (IDSAUTH_CONFIG)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *config == "" {
		*config = e.getenv("IDSAUTH_CONFIG")
	}
	switch {
	case fs.NArg() == 1 && *config == "":
		*config = fs.Arg(0)
	case fs.NArg() > 0:
		return usagef("give the configuration file once, as -config or an argument")
	case *config == "":
		return usagef("no configuration file: give -config FILE or IDSAUTH_CONFIG")
	}
	cfg, err := loadServeConfig(*config)
	if err != nil {
		return err
	}
	if cfg.ClientStore == nil {
		return fmt.Errorf("%s: no clientStore section: nothing to migrate", *config)
	}
	u, err := cfg.ClientStore.databaseURL(e.getenv)
	if err != nil {
		return inFile(*config, err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	from, to, err := pgregistry.Migrate(ctx, u)
	if err != nil {
		return fmt.Errorf("clientStore.postgres: %w", err)
	}
	if from == to {
		fmt.Fprintf(e.stdout, "schema at version %d: nothing to do\n", to)
	} else {
		fmt.Fprintf(e.stdout, "schema migrated from version %d to %d\n", from, to)
	}
	return nil
}

// adminMount is the mux pattern of the administration API under the
// issuer's mount ("/ids/" gives "/ids/admin/").
func adminMount(mount string) string { return mount + "admin/" }

var _ http.Handler = (*pgregistry.Registry)(nil)
