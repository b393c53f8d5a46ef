package pgregistry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idsauth/idsauth/internal/logevery"
	"github.com/idsauth/idsauth/issuer"
)

// channel is the LISTEN/NOTIFY channel of changes: each change's
// transaction notifies it with the new generation, at its commit.
const channel = "idsauth_registry"

// Config configures a Registry. Issuer and URL are required; zero values
// of the rest take the defaults.
type Config struct {
	// URL is the database's connection string (a postgres:// URL or
	// key=value settings), password included: it is never logged nor put
	// in an error.
	URL string
	// Issuer is the issuer that serves the registered clients (given with
	// Issuer.SetRegistered) and whose tokens, with the scope AdminScope
	// and the audience {issuer}/admin, the administration API admits.
	Issuer *issuer.Issuer
	// Logger gets the registry's lines: each change made through the
	// administration API (Info), the database going away and coming back
	// (Warn, Info), a registration left out (Warn). Nil: slog.Default().
	Logger *slog.Logger
	// Reconcile is how often the registry asks the database whether it
	// missed a change, beside LISTEN/NOTIFY, and so how soon it finds the
	// database gone while nothing changes. Zero means 10 seconds.
	Reconcile time.Duration
	// Timeout bounds each call to the database: a load, a change of the
	// administration API. Zero means 5 seconds.
	Timeout time.Duration
	// ClientAddress is the address an administration request came from,
	// for the audit trail. Nil: the host of the request's RemoteAddr.
	ClientAddress func(*http.Request) string
}

// Registry keeps the registered clients and API resources of an issuer in
// PostgreSQL. It loads them whole, in one transaction, into the issuer
// (Issuer.SetRegistered) at start, at every change any replica makes
// (LISTEN/NOTIFY) and when the periodic reconcile finds one missed; the
// issuer serves what it was last given, so that no token request waits on
// the database, and a database that goes away leaves every replica
// serving its last snapshot until it returns. It is also an http.Handler:
// the administration API (see ServeHTTP). Close stops it.
type Registry struct {
	iss     *issuer.Issuer
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig // the listener's
	secret  string          // the URL's password, scrubbed from every error
	logger  *slog.Logger
	every   time.Duration
	timeout time.Duration
	address func(*http.Request) string
	admin   http.Handler
	prefix  string // the administration API's path, "/ids/admin"
	replica string // this replica's name in idsauth_replicas

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	status     Status
	loaded     chan struct{}     // closed at the first load
	left       map[string]string // the registrations left out, by kind and ID: why, as logged
	next       chan struct{}     // closed at the next load
	downLogged bool              // the database's absence is logged
	failLogged logevery.Limiter  // the administration API's 503s
	loads      [2]atomic.Uint64
}

// Status is what a Registry knows of its database and snapshot.
type Status struct {
	// Loaded: a snapshot has been given to the issuer.
	Loaded bool
	// Up: the database answered the last time it was asked.
	Up bool
	// Clients and APIResources are the registrations of the snapshot
	// given to the issuer (enabled ones), Left those it left out.
	Clients, APIResources, Left int
	// Generation is the snapshot's: every change adds one.
	Generation int64
	// Changes counts the loads applied as a change, of the rows changed
	// since the replica's generation; the others were whole.
	Changes uint64
	// LoadedAt is when the snapshot was loaded, Since when Up last
	// changed.
	LoadedAt, Since time.Time
	// Err is why the database does not answer (no password in it); nil
	// when Up.
	Err error
}

// New returns a Registry of cfg and starts loading it in the background:
// a database down at start leaves the issuer with the file's clients only
// and Status().Loaded false until it answers (WaitLoaded waits for it).
// The URL is read, not dialled: an error is one of the configuration.
func New(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Issuer == nil {
		return nil, errors.New("pgregistry: Config.Issuer is nil")
	}
	conn, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	pc.ConnConfig = conn.Copy()
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, scrub(err, conn.Password)
	}
	r := &Registry{iss: cfg.Issuer, pool: pool, conn: conn, secret: conn.Password, logger: cfg.Logger, replica: replicaName(),
		every: cfg.Reconcile, timeout: cfg.Timeout, address: cfg.ClientAddress, done: make(chan struct{}), loaded: make(chan struct{}), next: make(chan struct{})}
	if r.logger == nil {
		r.logger = slog.Default()
	}
	if r.every <= 0 {
		r.every = 10 * time.Second
	}
	if r.timeout <= 0 {
		r.timeout = 5 * time.Second
	}
	if r.address == nil {
		r.address = remoteHost
	}
	if r.admin, r.prefix, err = r.adminHandler(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	r.status.Since = time.Now()
	run, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.run(run)
	return r, nil
}

// Close stops the listener and closes the connections. The issuer keeps
// the last snapshot.
func (r *Registry) Close() {
	r.cancel()
	<-r.done
	r.pool.Close()
}

// Status returns what the registry knows now.
func (r *Registry) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// WaitLoaded waits until the first snapshot is given to the issuer, or
// ctx ends: then it returns why the database has not answered.
func (r *Registry) WaitLoaded(ctx context.Context) error {
	select {
	case <-r.loaded:
		return nil
	case <-ctx.Done():
		if err := r.Status().Err; err != nil {
			return err
		}
		return ctx.Err()
	}
}

// waitGeneration waits until the issuer serves generation gen (or a
// later one), or ctx ends: a change answered is then in force on this
// replica.
func (r *Registry) waitGeneration(ctx context.Context, gen int64) bool {
	for {
		r.mu.Lock()
		have, next := r.status.Generation, r.next
		r.mu.Unlock()
		if have >= gen {
			return true
		}
		select {
		case <-next:
		case <-ctx.Done():
			return false
		}
	}
}

// Loads returns how many loads succeeded and failed.
func (r *Registry) Loads() (ok, failed uint64) { return r.loads[0].Load(), r.loads[1].Load() }

// run keeps a connection that listens for changes, loading the snapshot
// at each (re)connection, at each notification of a generation it does
// not have, and at each reconcile that finds one; it reconnects, after a
// pause that grows to five seconds, while the database is gone.
func (r *Registry) run(ctx context.Context) {
	defer close(r.done)
	pause := 250 * time.Millisecond
	for ctx.Err() == nil {
		err := r.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		r.down(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
		if r.Status().Up {
			pause = 250 * time.Millisecond
		}
	}
}

// listen connects, listens and loads, and then waits for notifications
// until the connection fails.
func (r *Registry) listen(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	conn, err := pgx.ConnectConfig(cctx, r.conn)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := r.call(ctx, func(ctx context.Context) error {
		_, err := conn.Exec(ctx, "LISTEN "+channel)
		return err
	}); err != nil {
		return err
	}
	if err := r.load(ctx, conn); err != nil {
		return err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, r.every)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			gen, _ := strconv.ParseInt(n.Payload, 10, 64)
			if gen > r.Status().Generation {
				err = r.load(ctx, conn)
			}
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			err = r.reconcile(ctx, conn)
		}
		if err != nil {
			return err
		}
	}
}

// up records that the database answered, logging its return.
func (r *Registry) up() {
	r.mu.Lock()
	was, logged := r.status.Up, r.downLogged
	if !was {
		r.status.Up, r.status.Err, r.status.Since = true, nil, time.Now()
		r.downLogged = false
	}
	gen := r.status.Generation
	r.mu.Unlock()
	if !was && logged {
		r.logger.Info("idsauth registry: the database answers again", slog.Int64("generation", gen))
	}
}

// down records that the database does not answer, logging it once until
// it answers again.
func (r *Registry) down(err error) {
	err = scrub(err, r.secret)
	r.mu.Lock()
	if r.status.Up {
		r.status.Since = time.Now()
	}
	r.status.Up, r.status.Err = false, err
	logged := r.downLogged
	r.downLogged = true
	r.mu.Unlock()
	if logged {
		return
	}
	if errors.Is(err, ErrSchema) {
		r.logger.Error("idsauth registry: the database's schema is not this release's: the issuer serves the file's clients and its last snapshot", slog.String("error", err.Error()))
		return
	}
	r.logger.Warn("idsauth registry: the database does not answer: the issuer serves its last snapshot of the registered clients", slog.String("error", err.Error()))
}

// call runs f within the registry's bound on a call.
func (r *Registry) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return f(ctx)
}

// parseURL reads a connection string without ever putting it in an
// error: pgx's own error quotes it, with its password masked at best.
func parseURL(url string) (*pgx.ConnConfig, error) {
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("pgregistry: no database URL")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, errors.New("pgregistry: the database URL cannot be read as a PostgreSQL connection string (postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=verify-full)")
	}
	return cfg, nil
}

// scrub returns err, its text without password: a server's or driver's
// message may quote what it was given.
func scrub(err error, password string) error {
	if err == nil || password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return &scrubbed{text: strings.ReplaceAll(err.Error(), password, "xxxxx"), err: err}
}

type scrubbed struct {
	text string
	err  error
}

func (s *scrubbed) Error() string { return s.text }
func (s *scrubbed) Unwrap() error { return s.err }

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// replicaName names this replica in idsauth_replicas: its host, its
// process and a random part, since several may share a host and a PID
// may come again.
func replicaName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
}
