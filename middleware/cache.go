package middleware

import (
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
// maximum age, and dies early when the key set changes (see KeySource).
// Memory is bounded by the entry count: an entry costs about 250 bytes
// plus the token itself, which is capped at maxCachedToken bytes.
//
// Reads take a shard's read lock only; shards keep writers apart.
type tokenCache struct {
	seed   maphash.Seed
	maxAge time.Duration
	shards [cacheShards]cacheShard
}

const (
	cacheShards    = 16
	maxCachedToken = 4 << 10
)

type cacheShard struct {
	mu  sync.RWMutex
	m   map[string]cacheEntry
	max int
}

type cacheEntry struct {
	claims  *Claims
	expires time.Time
	keys    uint64 // the key set version it was validated under
}

func newTokenCache(size int, maxAge time.Duration) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), maxAge: maxAge}
	per := max(1, (size+cacheShards-1)/cacheShards)
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry)
		c.shards[i].max = per
	}
	return c
}

func (c *tokenCache) shard(token string) *cacheShard {
	return &c.shards[maphash.String(c.seed, token)%cacheShards]
}

// get returns the claims of token if it was validated under key set
// version keys and has not expired at now.
func (c *tokenCache) get(token string, now time.Time, keys uint64) (*Claims, bool) {
	s := c.shard(token)
	s.mu.RLock()
	e, ok := s.m[token]
	s.mu.RUnlock()
	if !ok || e.keys != keys || !now.Before(e.expires) {
		return nil, false
	}
	return e.claims, true
}

// put remembers a validated token until expires, or maxAge from now if
// that is earlier.
func (c *tokenCache) put(token string, claims *Claims, now, expires time.Time, keys uint64) {
	if len(token) > maxCachedToken {
		return
	}
	if limit := now.Add(c.maxAge); limit.Before(expires) {
		expires = limit
	}
	if !now.Before(expires) {
		return
	}
	s := c.shard(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[token]; !ok && len(s.m) >= s.max {
		s.evict(now)
	}
	s.m[token] = cacheEntry{claims: claims, expires: expires, keys: keys}
}

// evict drops the expired entries, or, when none has expired, one entry
// (map order picks it at random, so no pattern of tokens can aim at a
// particular one).
func (s *cacheShard) evict(now time.Time) {
	dropped := false
	for k, e := range s.m {
		if !now.Before(e.expires) {
			delete(s.m, k)
			dropped = true
		}
	}
	if dropped {
		return
	}
	for k := range s.m {
		delete(s.m, k)
		return
	}
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
