package jwks

import (
	"context"
	"crypto"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Remote is a key set fetched on demand, for an owner without a life of
// its own to run a refresh on (the issuer): no goroutine runs but a fetch,
// which ends within its Timeout. A caller that needs the keys fetches
// them when there are none, or when its kid is unknown, as UnknownKID
// allows, and waits for the fetch no longer than Wait nor its context; a
// caller that finds the set older than Refresh starts a fetch and goes on
// with the set it has. Concurrent callers share one fetch. Keys fetched
// last serve until Grace after the fetch that brought them, however many
// fetches fail since: then the set is dropped, and every caller is told
// ErrKeysUnavailable until a fetch succeeds. It is safe for concurrent
// use.
type Remote struct {
	cfg RemoteConfig

	set       atomic.Pointer[Set]
	fetchedAt atomic.Int64 // Unix nanoseconds of the last fetch that succeeded; 0: none
	stale     atomic.Bool  // the set outlived Grace and was dropped (told once to Expired)

	mu      sync.Mutex
	flight  chan struct{} // closed when the fetch under way ends; nil: none
	tried   time.Time     // when the last fetch started
	current string        // the fingerprint of the set
	version uint64
}

// RemoteConfig configures a Remote. Fetch is required.
type RemoteConfig struct {
	// Fetch brings the set: one GET (Fetch), a discovery then a GET, a
	// file read. Its context ends after Timeout.
	Fetch func(ctx context.Context) ([]Key, error)
	// SigUse is the "use" of a signature key (Index).
	SigUse string
	// Timeout bounds a fetch. Zero means 10 seconds.
	Timeout time.Duration
	// Wait bounds how long a caller waits for a fetch. Zero means Timeout.
	Wait time.Duration
	// Refresh is the age at which the set is fetched again, behind the
	// caller that finds it so. Zero means 5 minutes.
	Refresh time.Duration
	// Grace is how long the keys of a fetch serve while no later fetch
	// succeeds. Zero means an hour.
	Grace time.Duration
	// UnknownKID limits the fetches for a kid the set lacks. Nil means
	// one every 30 seconds. A caller refused by it is told at once.
	// Callers that find no keys at all fetch at most once a second, one
	// at a time.
	UnknownKID *rate.Limiter
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Fetched, when not nil, is told of every fetch that ends: the keys
	// it brought (and whether they differ from the last), or its error.
	Fetched func(ctx context.Context, keys int, changed bool, err error)
	// Expired, when not nil, is told once when the set outlives Grace
	// and is dropped, and once again for each later time after a fetch
	// succeeded.
	Expired func()
}

// NewRemote returns a Remote of cfg, with no keys until a caller needs
// them.
func NewRemote(cfg RemoteConfig) *Remote {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Wait <= 0 || cfg.Wait > cfg.Timeout {
		cfg.Wait = cfg.Timeout
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Minute
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	if cfg.UnknownKID == nil {
		cfg.UnknownKID = rate.NewLimiter(rate.Every(30*time.Second), 1)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Remote{cfg: cfg}
	r.set.Store(Index(0, nil, cfg.SigUse))
	return r
}

// Keys returns the keys that may verify a token with this kid and alg
// (Set.Keys), fetching the set first when it has none or lacks kid, as
// the limits allow, waiting no longer than Wait nor ctx. The errors are
// keyerr's: ErrKeysUnavailable while no fetch has brought keys within
// Grace.
func (r *Remote) Keys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	s := r.fresh()
	force := false
	switch {
	case s.Empty(): // none yet, or none within Grace: start's spacing bounds the fetches
	case kid == "" || s.Has(kid):
		return s.Keys(kid, alg)
	case !r.cfg.UnknownKID.Allow():
		return s.Keys(kid, alg)
	default:
		force = true
	}
	r.wait(ctx, r.start(force))
	return r.fresh().Keys(kid, alg)
}

// fresh returns the set, dropping it once it has outlived Grace, and
// starting a fetch behind the caller once it is older than Refresh.
func (r *Remote) fresh() *Set {
	s := r.set.Load()
	at := r.fetchedAt.Load()
	if at == 0 {
		return s
	}
	age := r.cfg.Now().Sub(time.Unix(0, at))
	switch {
	case age > r.cfg.Grace:
		if r.stale.CompareAndSwap(false, true) && r.cfg.Expired != nil {
			r.cfg.Expired()
		}
		r.start(false)
		return Index(s.Version, nil, r.cfg.SigUse)
	case age > r.cfg.Refresh:
		r.start(false)
	}
	return s
}

// start starts a fetch unless one is under way, or, unless force (an
// unknown kid that UnknownKID let through), one started less than a
// second ago, and returns what ends when the fetch under way ends (nil
// when none is).
func (r *Remote) start(force bool) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flight != nil {
		return r.flight
	}
	now := r.cfg.Now()
	if !force && now.Sub(r.tried) < time.Second && !r.tried.IsZero() {
		return nil
	}
	r.tried = now
	done := make(chan struct{})
	r.flight = done
	go r.fetch(done)
	return done
}

// wait waits for done no longer than Wait nor ctx.
func (r *Remote) wait(ctx context.Context, done <-chan struct{}) {
	if done == nil {
		return
	}
	t := time.NewTimer(r.cfg.Wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// fetch runs one fetch, apart from any caller's context: a caller that
// stops waiting leaves its result to the next.
func (r *Remote) fetch(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
	defer cancel()
	keys, err := r.cfg.Fetch(ctx)
	changed := false
	if err == nil {
		changed = r.store(keys)
	}
	// Fetched is told before the callers waiting are let go: the request
	// refused for want of these keys is answered after the line that says
	// why (TestJWKSURIClient saw it the other way round).
	if r.cfg.Fetched != nil {
		r.cfg.Fetched(ctx, len(keys), changed, err)
	}
	r.mu.Lock()
	r.flight = nil
	r.mu.Unlock()
	close(done)
}

// store makes keys the set, under a new version when they differ from
// the last, and reports whether they did.
func (r *Remote) store(keys []Key) bool {
	fp := Fingerprint(keys)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetchedAt.Store(r.cfg.Now().UnixNano())
	r.stale.Store(false)
	if fp == r.current && r.version > 0 {
		return false
	}
	r.current = fp
	r.version++
	r.set.Store(Index(r.version, keys, r.cfg.SigUse))
	return true
}

// FetchedAt is when a fetch last brought keys; zero: never.
func (r *Remote) FetchedAt() time.Time {
	if at := r.fetchedAt.Load(); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}
