// Package redisstore is a limit.Store on Redis (7.0 or later), so that the
// replicas of an issuer, or of a service behind middleware.SCIMAuth,
// enforce one failure budget per client (or tenant) and per address
// between them; and a limit.ReplayStore, so that the issuer's replicas
// accept each client assertion (its jti) once between them. Its
// TokenStore keeps the grants of reference tokens, so that any replica
// introspects or revokes a token another one issued:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
//	store := redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:token:"})
//	// The tokens' Redis is another instance: noeviction, where the limiter's is volatile-ttl.
//	tdb := redis.NewClient(&redis.Options{Addr: "redis-tokens:6379", ContextTimeoutEnabled: true})
//	tokens := redisstore.NewTokenStore(tdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
//	iss, err := issuer.New(cfg, issuer.WithLimiterStore(store), issuer.WithTokenStore(tokens))
//
// Each reservation is one Lua script, atomic in Redis and on Redis's
// clock (never going back), so replicas on skewed clocks share one budget
// with every rule of package limit. Keys are fixed in size (128 bits of
// SHA-256, no client ID or address as text) and expire; bound Redis with
// maxmemory and maxmemory-policy volatile-ttl.
//
// On a Redis Cluster, give New and NewTokenStore a *redis.ClusterClient:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"redis-0:6379", "redis-1:6379"}, ContextTimeoutEnabled: true})
//
// The Store then hash-tags each key by its subject or its address, so
// that one client's data is on one slot and the clients spread over the
// masters, and a reservation is two scripts (the address's slot, then the
// subject's); a grant is one key, on the slot of its token's hash.
//
// Every call waits at most Options.Timeout. While Redis cannot answer,
// Options.OnUnavailable decides: FailOpen (the default) falls back to
// per-replica limits, so N replicas allow N times the budgets, never
// unlimited tries; FailClosed refuses every attempt with 503. The default
// is open because a limiter that fails closed hands whoever can slow Redis
// an outage of the token endpoint.
//
// Keys and memory, the budgets' clock, assertion jtis and outages in
// detail: [the redisstore README].
//
// [the redisstore README]: https://github.com/idsauth/idsauth/blob/main/redisstore/README.md
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/limit"
)

// FailureMode is what a Store does while Redis cannot answer.
type FailureMode int

const (
	// FailOpen falls back to a limit.Memory per process: the rules hold
	// per replica. The default.
	FailOpen FailureMode = iota
	// FailClosed refuses every attempt with an error wrapping
	// limit.ErrUnavailable.
	FailClosed
)

// The defaults of Options.
const (
	DefaultTimeout       = 150 * time.Millisecond
	DefaultRetryInterval = time.Second
)

// Options are a Store's settings. Only Prefix is required.
type Options struct {
	// Prefix starts every key, e.g. "idsauth:token:". Required: give the
	// issuer and SCIMAuth each their own, since two uses of one prefix
	// share their budgets. On a Redis Cluster leave hash tags out of it:
	// the store tags each key itself, so that a client's keys share a
	// slot and the clients spread over the masters; a Prefix with a hash
	// tag ("{idsauth}:token:") puts every key on one slot, one master. A
	// Ring needs one: New refuses a Ring without (a Ring sends a script to
	// the node of its first key, so without a tag each node would keep a
	// budget of its own for each client).
	Prefix string
	// Timeout bounds how long each call to Redis holds its caller,
	// whatever the client's own timeouts. Zero means DefaultTimeout. A
	// call that is still making its connection or loading its script then
	// runs on, a second at most, without its caller, so that the
	// connection is kept for the next call. On a Cluster whose keys the
	// store spreads, a reservation makes two calls (the address's slot,
	// then the subject's), each so bounded.
	Timeout time.Duration
	// RetryInterval is how long Redis (on a Cluster, a master) is skipped
	// after it failed to answer, before one request tries it again. Zero
	// means DefaultRetryInterval.
	RetryInterval time.Duration
	// OnUnavailable is what happens while Redis cannot answer. The zero
	// value is FailOpen.
	OnUnavailable FailureMode
	// FallbackMaxBytes is the memory of FailOpen's limit.Memory. Zero
	// means 1 MiB. Its budgets are allocated at New,
	// so that a failure of Redis never waits for an allocation; its table
	// of jtis (a quarter more) at the first Remember that falls back.
	FallbackMaxBytes int
	// Logger gets a line when Redis stops answering and when it answers
	// again. Nil logs nothing.
	Logger *slog.Logger
}

// Store is a limit.Store on Redis. It is safe for concurrent use.
type Store struct {
	rdb      redis.Scripter
	prefix   string
	spread   bool // a Cluster's: keys tagged per subject and per address
	timeout  time.Duration
	calls    calls
	circuits circuits
	interval time.Duration
	mode     FailureMode
	fallback *limit.Memory // FailOpen only
	logger   *slog.Logger

	redisDecided, fallbackDecided, unavailable, errs atomic.Uint64
}

// New returns a Store on rdb: a *redis.Client, a *redis.ClusterClient
// (what redis.NewUniversalClient returns for several addresses), a
// *redis.Ring, or any redis.Scripter that sends every call to one Redis.
// It panics when o.Prefix is empty, or has no hash tag with a Ring, or
// when o.OnUnavailable is unknown. Build rdb with ContextTimeoutEnabled,
// so that a connection to a hung Redis is given up at Timeout too.
//
// On a *redis.ClusterClient, unless o.Prefix has a hash tag, the store
// spreads its keys: every key is hash-tagged by the subject (the
// subject's bucket, its pair marks and its jtis) or by the address (the
// address's bucket), and each script touches the keys of one tag, so one
// client's data is on one slot and the clients spread over the masters.
// A master that fails then costs only the clients and addresses whose
// slots it serves (see Options.OnUnavailable).
func New(rdb redis.Scripter, o Options) *Store {
	if rdb == nil {
		panic("redisstore: New: nil client")
	}
	if o.Prefix == "" {
		panic("redisstore: New: Options.Prefix is required")
	}
	if o.OnUnavailable != FailOpen && o.OnUnavailable != FailClosed {
		panic("redisstore: New: unknown Options.OnUnavailable")
	}
	s := &Store{
		rdb:      rdb,
		prefix:   o.Prefix,
		timeout:  o.Timeout,
		interval: o.RetryInterval,
		mode:     o.OnUnavailable,
		logger:   o.Logger,
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		if !hasHashTag(o.Prefix) {
			s.spread, s.circuits.cluster = true, c
		}
	case *redis.Ring:
		if !hasHashTag(o.Prefix) {
			panic(`redisstore: New: with a Ring, Options.Prefix needs a hash tag, such as "{idsauth}:token:"`)
		}
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.interval <= 0 {
		s.interval = DefaultRetryInterval
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.calls = newCalls(rdb, s.timeout)
	if s.mode == FailOpen {
		s.fallback = &limit.Memory{MaxBytes: max(0, o.FallbackMaxBytes)}
		s.fallback.Bytes() // its budgets, made now: a failure of Redis waits for no allocation
	}
	return s
}

// Stats counts a Store's decisions since New: reservations and
// remembered IDs together.
type Stats struct {
	Redis       uint64 // granted or refused by Redis
	Fallback    uint64 // decided by the local limit.Memory while Redis could not answer (FailOpen)
	Unavailable uint64 // refused because Redis could not answer (FailClosed)
	Errors      uint64 // calls to Redis that failed or timed out
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	return Stats{Redis: s.redisDecided.Load(), Fallback: s.fallbackDecided.Load(), Unavailable: s.unavailable.Load(), Errors: s.errs.Load()}
}

// Reserve implements limit.Store on Redis's clock; r.Now is used only by
// the fallback (zero means time.Now). A request that has ended is still
// charged.
func (s *Store) Reserve(ctx context.Context, r limit.Request) (limit.Reservation, error) {
	if err := r.Budget.Check(); err != nil {
		return nil, err
	}
	res := s.newReservation(r)
	if s.use(res.addrCircuit) && (res.subjectCircuit == res.addrCircuit || s.use(res.subjectCircuit)) {
		err := s.reserve(ctx, res)
		var no *limit.Refusal
		if err == nil || errors.As(err, &no) {
			s.redisDecided.Add(1)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}
	if s.mode == FailClosed {
		s.unavailable.Add(1)
		return nil, fmt.Errorf("%w: Redis does not answer", limit.ErrUnavailable)
	}
	s.fallbackDecided.Add(1)
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	return s.fallback.Reserve(ctx, r)
}

// run runs script on the Redis of circuit c within the store's timeout,
// whatever rdb's own: a hung Redis holds the caller at most Timeout (see
// calls.do). A request that has ended is still run (its reservation is
// still charged or settled). It wants n integers back; anything else, or
// no answer, is a failure of c's Redis.
func (s *Store) run(ctx context.Context, c *circuit, n int, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	var v []int64
	err := s.calls.do(context.WithoutCancel(ctx), func(ctx context.Context) error {
		var err error
		v, err = script.Run(ctx, s.rdb, keys, args...).Int64Slice()
		return err
	})
	if err == nil && len(v) != n {
		err = fmt.Errorf("redisstore: a script answered %d values, not %d", len(v), n)
	}
	if err != nil {
		s.failed(c, err)
		return nil, err
	}
	s.answered(c)
	return v, nil
}

func (s *Store) newReservation(r limit.Request) *reservation {
	window := r.Budget.Window.Microseconds()
	res := &reservation{
		s:           s,
		keys:        s.keysOf(r.Subject, r.Address),
		window:      max(1, window),
		subjectStep: max(1, window/int64(r.Budget.PerSubject)),
		addressStep: max(1, window/int64(r.Budget.PerAddress)),
		trust:       max(1, r.Budget.Trust.Microseconds()),
	}
	res.addrCircuit, res.subjectCircuit = s.circuits.of(res.addr), s.circuits.of(res.subject)
	return res
}

// reserve takes res in Redis: in one script on one slot; on a Cluster
// whose keys the store spreads, the address's failure on its slot first,
// then the subject's rules on the subject's, and the address's failure
// given back when the subject refuses. That keeps every rule of package
// limit: each budget is taken or refused atomically on its own slot, and
// no rule reads the address's bucket and the subject's keys together. In
// between, the address holds one failure more than it will keep: a
// concurrent request from it may be refused a little early, never let
// through. When the subject's call fails, the address's failure is given
// back too, since the fallback decides the request: so the one request
// per RetryInterval that tries a failed master does not charge its
// address in Redis.
func (s *Store) reserve(ctx context.Context, res *reservation) error {
	var v []int64
	var err error
	if !s.spread {
		k := [4]string{res.addr, res.subject, res.pair, res.addrClock}
		v, err = s.run(ctx, res.addrCircuit, 4, reserve, k[:], res.window, res.subjectStep, res.addressStep)
	} else {
		v, err = s.run(ctx, res.addrCircuit, 4, reserveAddress, []string{res.addr, res.addrClock}, res.window, res.addressStep)
		if err == nil && v[0] == 1 {
			v, err = s.run(ctx, res.subjectCircuit, 4, reserveSubject, []string{res.subject, res.pair, res.subjectClock}, res.window, res.subjectStep)
			if err != nil || v[0] == 0 {
				_, _ = s.run(ctx, res.addrCircuit, 1, giveBack, []string{res.addr}, res.addressStep)
			}
		}
	}
	if err != nil {
		return err
	}
	if v[0] == 0 {
		// At most a window: more means the clock key was lost (evicted,
		// or a failover) after a step back, and the keys expire sooner.
		no := &limit.Refusal{Limit: limit.Address, RetryAfter: time.Duration(min(v[2], res.window)) * time.Microsecond}
		if v[1] == 2 {
			no.Limit = limit.SubjectAddress
		}
		return no
	}
	res.good, res.tookSubject, res.now = v[1] == 1, v[2] == 1, v[3]
	return nil
}

// Remember implements limit.ReplayStore: one SET NX of a key of fixed
// size (the kind "r" and a hash of r.Subject and r.ID; on a Cluster,
// tagged by the subject) that expires r.Until-r.Now from when Redis sets
// it, so that Redis's clock does not matter. Zero r.Now means time.Now.
// While Redis cannot answer, FailOpen remembers in the fallback
// limit.Memory (whose *limit.Refusal it may return when full), and
// FailClosed returns an error wrapping limit.ErrUnavailable.
func (s *Store) Remember(ctx context.Context, r limit.Replay) (bool, error) {
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	key := s.replayKey(r.Subject, r.ID)
	if c := s.circuits.of(key); s.use(c) {
		ttl := max(1, (r.Until.Sub(r.Now)+time.Millisecond-1)/time.Millisecond)
		v, err := s.run(ctx, c, 1, remember, []string{key}, int64(ttl))
		if err == nil {
			s.redisDecided.Add(1)
			return v[0] == 1, nil
		}
	}
	if s.mode == FailClosed {
		s.unavailable.Add(1)
		return false, fmt.Errorf("%w: Redis does not answer", limit.ErrUnavailable)
	}
	s.fallbackDecided.Add(1)
	return s.fallback.Remember(ctx, r)
}

var _ limit.ReplayStore = (*Store)(nil)

// reservation is a budget taken in Redis.
type reservation struct {
	s *Store
	keys
	addrCircuit, subjectCircuit *circuit
	now                         int64 // the subject's clock at Reserve, in microseconds
	window                      int64 // in microseconds, as the steps
	subjectStep, addressStep    int64
	trust                       int64 // the budget's Trust, in microseconds
	good, tookSubject, closed   bool
}

func (r *reservation) Succeeded() {
	if r.closed {
		return
	}
	r.closed = true
	sstep := int64(0)
	if r.tookSubject {
		sstep = r.subjectStep
	}
	ctx, good := context.Background(), r.trust
	if !r.s.spread {
		_, _ = r.s.run(ctx, r.addrCircuit, 1, succeeded, []string{r.addr, r.subject, r.pair}, r.now, good, r.addressStep, sstep)
		return
	}
	_, _ = r.s.run(ctx, r.addrCircuit, 1, giveBack, []string{r.addr}, r.addressStep)
	_, _ = r.s.run(ctx, r.subjectCircuit, 1, succeeded, []string{r.subject, r.pair}, r.now, good, sstep)
}

// Failed keeps the reservation. When Redis cannot answer, the reservation
// stays as Reserve left it: a failure charged, the address marked failing
// for the window (a trusted one stays trusted).
func (r *reservation) Failed() {
	if r.closed {
		return
	}
	r.closed = true
	if r.good {
		_, _ = r.s.run(context.Background(), r.subjectCircuit, 1, failed, []string{r.pair}, r.now, r.window)
	}
}
