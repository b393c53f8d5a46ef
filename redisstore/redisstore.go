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
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// share their budgets. For Redis Cluster or a Ring, put a hash tag in
	// it ("{idsauth}:token:") so that a script's keys live on one node:
	// New refuses one without. (A Ring sends a script to the node of its
	// first key, the address's bucket, so without a tag each node would
	// keep a budget of its own for each client.)
	Prefix string
	// Timeout bounds how long each call to Redis holds its caller,
	// whatever the client's own timeouts. Zero means DefaultTimeout. A
	// call that is still making its connection or loading its script then
	// runs on, a second at most, without its caller, so that the
	// connection is kept for the next call.
	Timeout time.Duration
	// RetryInterval is how long Redis is skipped after it failed to
	// answer, before one request tries it again. Zero means
	// DefaultRetryInterval.
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
	clock    string // the key of the store's clock
	timeout  time.Duration
	calls    calls
	interval time.Duration
	mode     FailureMode
	fallback *limit.Memory // FailOpen only
	logger   *slog.Logger

	// retryAt is 0 while Redis answers; once it failed, the Unix
	// nanosecond before which it is skipped.
	retryAt atomic.Int64

	redisDecided, fallbackDecided, unavailable, errs atomic.Uint64
}

// New returns a Store on rdb (a *redis.Client, *redis.ClusterClient,
// *redis.Ring or any redis.UniversalClient). It panics when o.Prefix is
// empty, or has no hash tag with a Cluster or a Ring, or when
// o.OnUnavailable is unknown. Build rdb with ContextTimeoutEnabled,
// so that a connection to a hung Redis is given up at Timeout too.
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
	switch rdb.(type) {
	case *redis.ClusterClient, *redis.Ring:
		if !hasHashTag(o.Prefix) {
			panic(`redisstore: New: with a Cluster or a Ring, Options.Prefix needs a hash tag, such as "{idsauth}:token:"`)
		}
	}
	s := &Store{
		rdb:      rdb,
		prefix:   o.Prefix,
		timeout:  o.Timeout,
		interval: o.RetryInterval,
		mode:     o.OnUnavailable,
		logger:   o.Logger,
	}
	s.clock = s.key('c', "", "")
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.interval <= 0 {
		s.interval = DefaultRetryInterval
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.calls = newCalls(s.timeout)
	if s.mode == FailOpen {
		s.fallback = &limit.Memory{MaxBytes: max(0, o.FallbackMaxBytes)}
		s.fallback.Bytes() // its budgets, made now: a failure of Redis waits for no allocation
	}
	return s
}

// hasHashTag reports whether every key starting with prefix hashes to one
// slot: it holds "{", then at least one byte, then "}" (Redis Cluster's
// rule, which go-redis's Ring follows too).
func hasHashTag(prefix string) bool {
	_, rest, ok := strings.Cut(prefix, "{")
	end := strings.IndexByte(rest, '}')
	return ok && end > 0
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

// KeyBytes is the length of every key of a Store with a prefix of n
// bytes.
func KeyBytes(n int) int { return n + 2 + hex.EncodedLen(hashBytes) }

const hashBytes = 16

// Reserve implements limit.Store on Redis's clock; r.Now is used only by
// the fallback (zero means time.Now). A request that has ended is still
// charged.
func (s *Store) Reserve(ctx context.Context, r limit.Request) (limit.Reservation, error) {
	if err := r.Budget.Check(); err != nil {
		return nil, err
	}
	if s.useRedis() {
		res, err := s.reserve(ctx, r)
		if err == nil {
			s.answered()
			s.redisDecided.Add(1)
			return res, nil
		}
		var no *limit.Refusal
		if errors.As(err, &no) {
			s.answered()
			s.redisDecided.Add(1)
			return nil, err
		}
		s.failed(err)
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

// useRedis reports whether to ask Redis: while it answers, always; once
// it failed, one request per RetryInterval.
func (s *Store) useRedis() bool {
	at := s.retryAt.Load()
	if at == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= at && s.retryAt.CompareAndSwap(at, now+int64(s.interval))
}

func (s *Store) failed(err error) {
	s.errs.Add(1)
	if s.retryAt.Swap(time.Now().Add(s.interval).UnixNano()) == 0 {
		mode := "falling back to per-process limits"
		if s.mode == FailClosed {
			mode = "refusing every attempt"
		}
		s.logger.Warn("idsauth redisstore: Redis does not answer; "+mode+" until it does", slog.String("error", err.Error()))
	}
}

func (s *Store) answered() {
	if s.retryAt.Load() != 0 && s.retryAt.Swap(0) != 0 {
		s.logger.Info("idsauth redisstore: Redis answers again")
	}
}

// run runs script within the store's timeout, whatever rdb's own: a hung
// Redis holds the caller at most Timeout (see calls.do). A request that
// has ended is still run (its reservation is still charged or settled).
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	var v []int64
	err := s.calls.do(context.WithoutCancel(ctx), func(ctx context.Context) error {
		var err error
		v, err = script.Run(ctx, s.rdb, keys, args...).Int64Slice()
		return err
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (s *Store) reserve(ctx context.Context, r limit.Request) (limit.Reservation, error) {
	window := r.Budget.Window.Microseconds()
	res := &reservation{
		s:           s,
		keys:        s.keys(r.Subject, r.Address),
		window:      max(1, window),
		subjectStep: max(1, window/int64(r.Budget.PerSubject)),
		addressStep: max(1, window/int64(r.Budget.PerAddress)),
		trust:       max(1, r.Budget.Trust.Microseconds()),
	}
	keys := [4]string{res.keys[0], res.keys[1], res.keys[2], s.clock}
	v, err := s.run(ctx, reserve, keys[:], res.window, res.subjectStep, res.addressStep)
	if err != nil {
		return nil, err
	}
	if len(v) != 4 {
		return nil, fmt.Errorf("redisstore: the reserve script answered %d values", len(v))
	}
	if v[0] == 0 {
		// At most a window: more means the clock key was lost (evicted,
		// or a failover) after a step back, and the keys expire sooner.
		no := &limit.Refusal{Limit: limit.Address, RetryAfter: time.Duration(min(v[2], res.window)) * time.Microsecond}
		if v[1] == 2 {
			no.Limit = limit.SubjectAddress
		}
		return nil, no
	}
	res.good, res.tookSubject, res.now = v[1] == 1, v[2] == 1, v[3]
	return res, nil
}

// Remember implements limit.ReplayStore: one SET NX of a key of fixed
// size (the kind "r" and a hash of r.Subject and r.ID) that expires
// r.Until-r.Now from when Redis sets it, so that Redis's clock does not
// matter. Zero r.Now means time.Now. While Redis cannot answer, FailOpen
// remembers in the fallback limit.Memory (whose *limit.Refusal it may
// return when full), and FailClosed returns an error wrapping
// limit.ErrUnavailable.
func (s *Store) Remember(ctx context.Context, r limit.Replay) (bool, error) {
	if r.Now.IsZero() {
		r.Now = time.Now()
	}
	if s.useRedis() {
		ttl := max(1, (r.Until.Sub(r.Now)+time.Millisecond-1)/time.Millisecond)
		v, err := s.run(ctx, remember, []string{s.key('r', r.Subject, r.ID)}, int64(ttl))
		if err == nil && len(v) != 1 {
			err = fmt.Errorf("redisstore: the remember script answered %d values", len(v))
		}
		if err == nil {
			s.answered()
			s.redisDecided.Add(1)
			return v[0] == 1, nil
		}
		s.failed(err)
	}
	if s.mode == FailClosed {
		s.unavailable.Add(1)
		return false, fmt.Errorf("%w: Redis does not answer", limit.ErrUnavailable)
	}
	s.fallbackDecided.Add(1)
	return s.fallback.Remember(ctx, r)
}

var _ limit.ReplayStore = (*Store)(nil)

// keys returns the keys of an address's bucket, a subject's bucket and
// their pair mark: fixed in size, and the text of neither.
func (s *Store) keys(subject, addr string) [3]string {
	return [3]string{
		s.key('a', "", addr),
		s.key('s', subject, ""),
		s.key('p', subject, addr),
	}
}

func (s *Store) key(kind byte, subject, addr string) string {
	h := sha256.New()
	var n [1 + binary.MaxVarintLen64]byte
	n[0] = kind
	h.Write(binary.AppendUvarint(n[:1], uint64(len(subject))))
	h.Write([]byte(subject))
	h.Write([]byte(addr))
	var sum [sha256.Size]byte
	b := make([]byte, 0, KeyBytes(len(s.prefix)))
	b = append(b, s.prefix...)
	b = append(b, kind, ':')
	return string(hex.AppendEncode(b, h.Sum(sum[:0])[:hashBytes]))
}

// reservation is a budget taken in Redis.
type reservation struct {
	s                         *Store
	keys                      [3]string
	now                       int64 // the store's clock at Reserve, in microseconds
	window                    int64 // in microseconds, as the steps
	subjectStep, addressStep  int64
	trust                     int64 // in microseconds
	good, tookSubject, closed bool
}

func (r *reservation) Succeeded() {
	sstep := int64(0)
	if r.tookSubject {
		sstep = r.subjectStep
	}
	r.settle(succeeded, r.now, r.addressStep, sstep, r.trust)
}

func (r *reservation) Failed() {
	if r.good {
		r.settle(failed, r.now, r.window)
	}
}

// settle runs script once. When Redis cannot answer, the reservation
// stays as Reserve left it: a failure charged, the address marked failing
// for the window (a trusted one stays trusted).
func (r *reservation) settle(script *redis.Script, args ...any) {
	if r.closed {
		return
	}
	r.closed = true
	if _, err := r.s.run(context.Background(), script, r.keys[:], args...); err != nil {
		r.s.failed(err)
	}
}
