// Package tokenstore keeps the grants of reference tokens: the opaque
// access tokens that an API checks at the issuer's introspection endpoint
// ([RFC 7662]) instead of verifying a signature, and that can be revoked
// ([RFC 7009]) with effect at the next check.
//
// The issuer keeps a grant under the SHA-256 of its token (Key), never the
// token itself: whoever reads the store cannot use what it holds. Memory
// is the store of one process, the issuer's default; the module
// github.com/idsauth/idsauth/redisstore keeps grants in Redis, so that
// every replica sees every token and every revocation.
//
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
// [RFC 7009]: https://www.rfc-editor.org/rfc/rfc7009
package tokenstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"
)

// Key is what a grant is stored under: the SHA-256 of its token.
type Key [32]byte

// KeyOf returns the key of token.
func KeyOf(token string) Key { return sha256.Sum256([]byte(token)) }

// Grant is what a reference token stands for.
type Grant struct {
	ClientID  string    // the client it was issued to
	Scopes    []string  // the scopes granted
	Audience  []string  // its "aud"
	IssuedAt  time.Time // "iat" and "nbf"
	ExpiresAt time.Time // "exp"
	ID        string    // "jti"
	JKT       string    // cnf.jkt: the key a DPoP-bound token is bound to (RFC 9449); "" for a bearer token
	X5T       string    // cnf["x5t#S256"]: the client certificate a token is bound to (RFC 8705); "" for none
	Epoch     uint64    // the registration of ClientID it was issued under (issuer.ClientConfig.Epoch); 0 for a grant stored without one
}

// Store keeps grants until they expire or are revoked. Its methods are
// safe for concurrent use.
type Store interface {
	// Put keeps g under k until g.ExpiresAt. It never forgets a live
	// grant to make room: when it has none, it fails with ErrFull.
	Put(ctx context.Context, k Key, g Grant) error
	// Get returns the grant under k, unless it has expired at now or has
	// been revoked.
	Get(ctx context.Context, k Key, now time.Time) (g Grant, ok bool, err error)
	// Revoke forgets the grant under k if it was issued to clientID, and
	// reports whether it did. A grant of another client is left as it is.
	Revoke(ctx context.Context, k Key, clientID string) (revoked bool, err error)
}

// Epochs is a Store that also keeps the issuer's record of the epochs of
// its clients that no registry gives one (issuer.ClientConfig.Epoch): the
// registration of a client ID that its tokens were issued under. The
// issuer renews a client's epoch when the client is removed or loses
// every secret, so that its earlier tokens never answer active again;
// kept here, the record outlives a restart and reaches every replica that
// shares the store. The issuer's store need not be an Epochs: then each
// process keeps its own record, for its life.
type Epochs interface {
	// Epochs returns the epoch recorded for each of ids, in their order:
	// 0 for an ID never recorded.
	Epochs(ctx context.Context, ids []string) ([]uint64, error)
	// AdvanceEpoch records epoch to for id if the one recorded is from
	// (0: none), and leaves it otherwise: a replica late to end a client
	// cannot take its record back.
	AdvanceEpoch(ctx context.Context, id string, from, to uint64) error
}

// ErrFull is the error of a Put into a store that has no room left: the
// issuer refuses to issue the token rather than forget a live one.
var ErrFull = errors.New("tokenstore: the store is full")
