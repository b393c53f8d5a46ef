package redisstore

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/tokenstore"
)

// TokenStore is a tokenstore.Store on Redis: the grants of reference
// tokens, shared by the replicas of an issuer, so that any of them
// introspects or revokes a token another one issued, at its next check.
//
//	tokens := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
//	iss, err := issuer.New(cfg, issuer.WithTokenStore(tokens))
//
// A grant is one Redis hash under Prefix and the hex SHA-256 of its token
// (never the token), expiring at the grant's exp (PEXPIREAT): Redis drops
// it then, with nothing to scan. It holds the client ID and the grant as
// JSON, about 300 bytes of Redis memory with the key.
//
// A grant is never to be forgotten before it expires, so give the tokens
// a Redis instance of their own with maxmemory-policy noeviction (check
// it with CheckEviction at start): a full Redis then refuses the write,
// which Put reports as tokenstore.ErrFull (the issuer issues no token,
// and says why), where an evicting policy would silently revoke live
// tokens. Not the failure limiter's Redis: that one needs volatile-ttl,
// and under it a client asking for long-lived tokens would evict the
// others' grants, and the budgets, first. Unlike tokenstore.Memory, a
// TokenStore gives no client a share: size its Redis for the most live
// tokens your clients may hold. Unlike the failure limits, there is no
// fallback: while Redis cannot answer, no reference token is issued,
// introspected or revoked (the issuer answers 503), since a replica's own
// memory would hold tokens the others cannot see; on a Cluster, only those
// whose grants are on a master that cannot answer (Masters says which). A
// call that did not answer within the Timeout may still be applied (see
// TokenOptions.Timeout): the issuer's 503 to a revocation says its outcome
// is unknown, and to a token request that no token was issued.
type TokenStore struct {
	rdb     redis.Scripter
	prefix  string
	timeout time.Duration
	calls   calls
}

// TokenOptions are a TokenStore's settings. Only Prefix is required.
type TokenOptions struct {
	// Prefix starts every key, e.g. "idsauth:ref:"; give the tokens their
	// own. On a Redis Cluster or a Ring leave hash tags out of it: each
	// grant is one key, which no script shares with another, on the slot
	// of its token's hash, so the grants spread over the masters; a tag
	// would put them all on one.
	Prefix string
	// Timeout bounds how long each call to Redis holds its caller. Zero
	// means DefaultTimeout. A call that is still making its connection or
	// loading its script then runs on, a second at most, without its
	// caller, so that the connection is kept for the next call; and a
	// command Redis has received is run whether its caller still waits.
	// So a Put whose caller gave up may still store its grant (of a token
	// never handed out), a Revoke still revoke.
	Timeout time.Duration
}

// NewTokenStore returns a TokenStore on rdb. It panics when o.Prefix is
// empty. Build rdb with ContextTimeoutEnabled, so that a connection to a
// hung Redis is given up at Timeout too.
func NewTokenStore(rdb redis.Scripter, o TokenOptions) *TokenStore {
	if rdb == nil {
		panic("redisstore: NewTokenStore: nil client")
	}
	if o.Prefix == "" {
		panic("redisstore: NewTokenStore: TokenOptions.Prefix is required")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &TokenStore{rdb: rdb, prefix: o.Prefix, timeout: o.Timeout, calls: newCalls(rdb, o.Timeout)}
}

// CheckEviction reads the maxmemory-policy of the Redis, or of every node
// of a Cluster or a Ring (masters and replicas: a replica becomes a master
// on a failover), and fails unless each is noeviction: under any other,
// Redis may drop live grants when it is full, revoking working tokens
// without a word. The error is an *EvictionError naming the first node
// whose policy may evict, or else says that a node could not be read. It
// needs a client that can send
// CONFIG GET (a *redis.Client, *redis.ClusterClient or *redis.Ring; a
// managed Redis may refuse CONFIG, and then say its policy in its own
// console).
func (s *TokenStore) CheckEviction(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var mu sync.Mutex // eachNode runs fn on the nodes at once
	var evicts, unread error
	err := eachNode(ctx, s.rdb, func(ctx context.Context, node *redis.Client) error {
		m, err := node.ConfigGet(ctx, "maxmemory-policy").Result()
		mu.Lock()
		defer mu.Unlock()
		switch p, ok := m["maxmemory-policy"]; {
		case err != nil || !ok:
			if err == nil {
				err = errors.New("no such setting")
			}
			unread = cmp.Or(unread, fmt.Errorf("redisstore: CheckEviction: %s: %w", node.Options().Addr, err))
		case p != "noeviction":
			evicts = cmp.Or[error](evicts, &EvictionError{Addr: node.Options().Addr, Policy: p})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: CheckEviction: %w", err)
	}
	return cmp.Or(evicts, unread)
}

// Master is one master of a TokenStore's Redis, as Masters found it.
type Master struct {
	Addr    string // host:port, as the client dials it
	Answers bool   // it answered PING within the store's Timeout
}

// Masters asks each master of the store's Redis for a PING, all at once,
// each within the store's Timeout, and says which answered, by address:
// the one Redis of a *redis.Client; each master of a *redis.ClusterClient,
// by the cluster's map of its slots, read anew; each shard of a
// *redis.Ring that the Ring holds up. On a Cluster, while some masters
// answer and others do not, only the grants on those that do not cannot
// be issued, introspected or revoked: a readiness check that takes a
// replica of the issuer out of rotation for one master takes out every
// replica sharing the cluster (idsauth serve answers "ready, degraded").
// A master that does not answer has a Cluster's client read the map
// again, as a failed call does, so that the next Masters, and the next
// call, find a replica promoted in its place. The error says the masters
// are unknown: a Cluster none of whose nodes gives its map, and whose
// client never had one, or a client that is none of the three.
func (s *TokenStore) Masters(ctx context.Context) ([]Master, error) {
	var mu sync.Mutex
	var masters []Master
	ping := func(_ context.Context, node *redis.Client) error {
		err := s.calls.do(ctx, func(ctx context.Context) error { return node.Ping(ctx).Err() })
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, Master{Addr: node.Options().Addr, Answers: err == nil})
		return nil
	}
	var err error
	switch c := s.rdb.(type) {
	case *redis.Client:
		err = ping(ctx, c)
	case *redis.ClusterClient:
		mapped, cancel := context.WithTimeout(ctx, s.timeout) // for the map; each PING has its own bound
		defer cancel()
		err = c.ForEachMaster(mapped, ping)
	case *redis.Ring:
		err = c.ForEachShard(ctx, ping)
	default:
		err = fmt.Errorf("a %T: want a *redis.Client, *redis.ClusterClient or *redis.Ring", s.rdb)
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: Masters: %w", err)
	}
	slices.SortFunc(masters, func(a, b Master) int { return strings.Compare(a.Addr, b.Addr) })
	return masters, nil
}

// EvictionError is CheckEviction's refusal of a Redis whose
// maxmemory-policy may evict live grants.
type EvictionError struct {
	Addr   string // the node, as the client names it
	Policy string // its maxmemory-policy
}

func (e *EvictionError) Error() string {
	return fmt.Sprintf("redisstore: the token store's Redis at %s has maxmemory-policy %q: it may evict live grants when full; set noeviction, on a Redis of the tokens' own", e.Addr, e.Policy)
}

// The scripts of a TokenStore: each one round trip, atomic in Redis.
var (
	putGrant = redis.NewScript(`
redis.call('HSET', KEYS[1], 'c', ARGV[1], 'g', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1`)
	getGrant    = redis.NewScript(`return redis.call('HGET', KEYS[1], 'g')`)
	revokeGrant = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'c') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
)

// storedGrant is a grant as Redis holds it.
type storedGrant struct {
	ClientID  string   `json:"c"`
	Scopes    []string `json:"s"`
	Audience  []string `json:"a,omitempty"`
	IssuedAt  int64    `json:"i"` // Unix milliseconds
	ExpiresAt int64    `json:"e"`
	ID        string   `json:"j"`
	JKT       string   `json:"k,omitempty"`
	X5T       string   `json:"x,omitempty"`
	Epoch     uint64   `json:"p,omitempty"`
}

func (s *TokenStore) key(k tokenstore.Key) string { return s.prefix + hex.EncodeToString(k[:]) }

// Put implements tokenstore.Store. A Redis out of memory (maxmemory with
// noeviction) is tokenstore.ErrFull.
func (s *TokenStore) Put(ctx context.Context, k tokenstore.Key, g tokenstore.Grant) error {
	b, err := json.Marshal(storedGrant{g.ClientID, g.Scopes, g.Audience, g.IssuedAt.UnixMilli(), g.ExpiresAt.UnixMilli(), g.ID, g.JKT, g.X5T, g.Epoch})
	if err != nil {
		return err
	}
	err = s.calls.do(ctx, func(ctx context.Context) error {
		return putGrant.Run(ctx, s.rdb, []string{s.key(k)}, g.ClientID, b, g.ExpiresAt.UnixMilli()).Err()
	})
	if redis.IsOOMError(err) {
		return fmt.Errorf("%w: %v", tokenstore.ErrFull, err)
	}
	if err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	return nil
}

// Get implements tokenstore.Store.
func (s *TokenStore) Get(ctx context.Context, k tokenstore.Key, now time.Time) (tokenstore.Grant, bool, error) {
	var raw string
	err := s.calls.do(ctx, func(ctx context.Context) error {
		var err error
		raw, err = getGrant.Run(ctx, s.rdb, []string{s.key(k)}).Text()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return tokenstore.Grant{}, false, nil
	case err != nil:
		return tokenstore.Grant{}, false, fmt.Errorf("redisstore: %w", err)
	}
	var sg storedGrant
	if err := json.Unmarshal([]byte(raw), &sg); err != nil {
		return tokenstore.Grant{}, false, fmt.Errorf("redisstore: a grant that is not ours under %s: %w", s.key(k), err)
	}
	g := tokenstore.Grant{
		ClientID:  sg.ClientID,
		Scopes:    sg.Scopes,
		Audience:  sg.Audience,
		IssuedAt:  time.UnixMilli(sg.IssuedAt),
		ExpiresAt: time.UnixMilli(sg.ExpiresAt),
		ID:        sg.ID,
		JKT:       sg.JKT,
		X5T:       sg.X5T,
		Epoch:     sg.Epoch,
	}
	if !now.Before(g.ExpiresAt) {
		return tokenstore.Grant{}, false, nil
	}
	return g, true, nil
}

// Revoke implements tokenstore.Store.
func (s *TokenStore) Revoke(ctx context.Context, k tokenstore.Key, clientID string) (bool, error) {
	var n int64
	err := s.calls.do(ctx, func(ctx context.Context) error {
		var err error
		n, err = revokeGrant.Run(ctx, s.rdb, []string{s.key(k)}, clientID).Int64()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("redisstore: %w", err)
	}
	return n == 1, nil
}

// eachNode runs fn on rdb, a *redis.Client, or on every node of rdb, a
// *redis.ClusterClient or *redis.Ring (masters and replicas), at once.
func eachNode(ctx context.Context, rdb redis.Scripter, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachShard(ctx, fn)
	case *redis.Ring:
		return c.ForEachShard(ctx, fn)
	}
	return fmt.Errorf("a %T: want a *redis.Client, *redis.ClusterClient or *redis.Ring", rdb)
}
