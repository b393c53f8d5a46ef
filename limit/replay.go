package limit

import (
	"context"
	"time"
)

// ReplayStore is a Store that also remembers the IDs of one-time
// credentials: the jti of each client assertion the issuer accepts
// (RFC 7523 §3, item 7). The issuer uses the Remember of the store given
// to issuer.WithLimiterStore when it has one, so that replicas sharing
// the store accept an assertion once between them; otherwise each issuer
// remembers in memory of its own. Memory and the Redis store of
// github.com/idsauth/idsauth/redisstore are ReplayStores. A Store that
// wraps another hides its Remember unless it has one too.
type ReplayStore interface {
	Store
	// Remember records r.ID for r.Subject until r.Until, in one atomic
	// step. It returns fresh true when the ID was not remembered (and now
	// is), false when it is: a replay. It returns a *Refusal (Limit
	// Replays) when it has no room to remember the ID without forgetting
	// one that has not expired, and an error wrapping ErrUnavailable when
	// it cannot decide; the caller then accepts nothing. The caller calls
	// it only for a credential it has verified, so that nobody without a
	// key can fill it.
	Remember(ctx context.Context, r Replay) (fresh bool, err error)
}

// Replay is one use of a one-time credential.
type Replay struct {
	// Subject is whose credential it is: a client ID.
	Subject string
	// ID is the credential's ID, the requester's text (bounded in length
	// by the caller, and chosen by whoever holds the key), so a store must
	// not keep it verbatim: hash it with Subject, in a key of fixed size.
	ID string
	// Until is when the credential can no longer be used, on the caller's
	// clock: the ID is remembered until then. A store shared by several
	// processes should count from Now (keep it for Until-Now), so that its
	// own clock does not matter.
	Until time.Time
	// Now is the caller's clock.
	Now time.Time
}

// Replays is the Limit of Remember's *Refusal: the store's memory of IDs
// has no room for another until one expires (RetryAfter).
const Replays Limit = "replays"
