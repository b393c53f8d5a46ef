package accesstoken

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"
	"time"
)

// tokenCache remembers tokens that passed full validation, so a token seen
// again skips the signature check. It keys on the whole token string: a
// token that differs by one byte is a miss and is validated in full.
//
// Only validated tokens enter, so garbage cannot grow or flush it. An
// entry lives until the earlier of the token's exp (plus leeway) and the
// maximum age, and dies early when the key set of the issuer that
// accepted it changes (see VersionedKeySource): another issuer's new keys
// leave it be.
//
// The cache holds at most size entries, whatever their spread over the
// shards. When it is full, an insert evicts the oldest entry: a ring of
// keys in insertion order finds it in constant time. Since every entry
// gets the same maximum age, the oldest is also about the first to
// expire. Entries are not aged out otherwise; a dead one (expired, or of
// an old key set) is a miss and waits its turn in the ring.
//
// Memory: an entry costs about cacheEntryOverhead bytes plus the token,
// which the cache copies (so it pins no request's memory) and which is at
// most maxCachedToken bytes. TestCacheEntryMemory measures it.
//
// Reads take one shard's read lock and allocate nothing. Inserts, which
// follow a signature check, are serialized by one mutex.
type tokenCache struct {
	seed   maphash.Seed
	maxAge time.Duration
	shards [cacheShards]cacheShard

	mu   sync.Mutex // held by every insert; taken before a shard's lock
	size int        // capacity, at least 1
	ring []string   // the keys in insertion order; circular once full
	next int        // once full, the slot of the oldest key
}

const (
	cacheShards    = 16
	maxCachedToken = 4 << 10

	// cacheEntryOverhead is what an entry costs beside its token, in
	// bytes, measured after a GC with the claims IdentityServer and this
	// module's issuer put in a token: the *Claims and its strings, the
	// map slot and the ring slot. TestCacheEntryMemory keeps it honest.
	cacheEntryOverhead = 520
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]cacheEntry
}

type cacheEntry struct {
	claims  *Claims
	expires time.Time
	keys    VersionedKeySource // of the issuer that accepted it
	version uint64             // of those keys, when it was validated
}

func newTokenCache(size int, maxAge time.Duration) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), maxAge: maxAge, size: max(1, size)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
	}
	return c
}

func (c *tokenCache) shard(token string) *cacheShard {
	return &c.shards[maphash.String(c.seed, token)%cacheShards]
}

// get returns the claims of token if it has not expired at now and the
// keys of the issuer that accepted it are those it was validated under.
func (c *tokenCache) get(token string, now time.Time) (*Claims, bool) {
	s := c.shard(token)
	s.mu.RLock()
	e, ok := s.m[token]
	s.mu.RUnlock()
	if !ok || !now.Before(e.expires) || e.keys.KeysVersion() != e.version {
		return nil, false
	}
	return e.claims, true
}

// put remembers a token validated under version of keys, the keys of the
// issuer that accepted it, until expires, or maxAge from now if that is
// earlier. The cache keeps token itself: pass a copy that nothing else
// holds.
func (c *tokenCache) put(token string, claims *Claims, now, expires time.Time, keys VersionedKeySource, version uint64) {
	if len(token) > maxCachedToken {
		return
	}
	if limit := now.Add(c.maxAge); limit.Before(expires) {
		expires = limit
	}
	if !now.Before(expires) {
		return
	}
	e := cacheEntry{claims: claims, expires: expires, keys: keys, version: version}
	s := c.shard(token)
	c.mu.Lock()
	defer c.mu.Unlock()
	s.mu.Lock()
	if _, ok := s.m[token]; ok {
		s.m[token] = e // validated again, under a new key set: keep its slot
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if len(c.ring) < c.size {
		if len(c.ring) == cap(c.ring) {
			grown := make([]string, len(c.ring), min(c.size, max(64, 2*cap(c.ring))))
			copy(grown, c.ring)
			c.ring = grown
		}
		c.ring = append(c.ring, token)
	} else {
		old := c.ring[c.next]
		os := c.shard(old)
		os.mu.Lock()
		delete(os.m, old)
		os.mu.Unlock()
		c.ring[c.next] = token
		c.next = (c.next + 1) % c.size
	}
	s.mu.Lock()
	s.m[token] = e
	s.mu.Unlock()
}

// len counts the entries, for tests.
func (c *tokenCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// cacheKey is what token is cached under: itself when it is at most
// limit bytes long, else a NUL and its SHA-256, which no token is (a
// token has no NUL), so that an entry's size is bounded whatever the
// token's length.
func cacheKey(token string, limit int) string {
	if len(token) <= limit {
		return token
	}
	sum := sha256.Sum256([]byte(token))
	return "\x00" + string(sum[:])
}
