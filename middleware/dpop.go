package middleware

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/replay"
	"github.com/idsauth/idsauth/limit"
)

// DPoP makes RequireBearer accept sender-constrained tokens (RFC 9449
// §7): "Authorization: DPoP <token>" with exactly one DPoP proof header,
// by the key the token is bound to (its cnf.jkt). Make one with NewDPoP
// and give it to every route's BearerConfig.DPoP: they share its replay
// memory and its nonces. It is safe for concurrent use.
type DPoP struct{ c *dpopChecker }

// NewDPoP returns a DPoP for cfg, or an error naming the setting that is
// wrong.
func NewDPoP(cfg DPoPConfig) (*DPoP, error) {
	c, err := newDPoPChecker(&cfg)
	if err != nil {
		return nil, err
	}
	return &DPoP{c: c}, nil
}

// checker is d's, or nil for a nil d.
func (d *DPoP) checker() *dpopChecker {
	if d == nil {
		return nil
	}
	return d.c
}

// DPoPConfig configures a DPoP (NewDPoP). PublicURL is required. The
// issuer's side, which binds tokens, is issuer.DPoPConfig.
type DPoPConfig struct {
	// Required accepts DPoP only: a bearer token is answered as no token
	// (a bare DPoP challenge). False accepts both schemes; a token bound
	// to a key is refused as Bearer whatever this says.
	Required bool
	// PublicURL is the scheme, host and port clients address this service
	// by: a proof's htu is it and the request line's path. Never the
	// request's Host; a listener's PublicOrigin takes its place there.
	PublicURL string
	// ProofMaxAge is how old a proof may be (by its iat), and so how long
	// its jti is remembered, and the nonce period. Zero means one minute;
	// less than a second is refused.
	ProofMaxAge time.Duration
	// ReplayBytes is the memory remembering accepted proofs' jtis, 16 bytes
	// each, a client's in an eighth of it (docs/RESOURCE-SERVER.md). Zero
	// means 4 MiB (262,144 proofs); ignored with Replays.
	ReplayBytes int
	// Replays, when set, remembers the jtis instead: a store shared by
	// the replicas (redisstore's), so that a proof is accepted once
	// between them.
	Replays limit.ReplayStore
	// RequireNonce makes every proof carry this service's current nonce
	// (RFC 9449 §9; else 401 use_dpop_nonce with DPoP-Nonce). A nonce lasts
	// ProofMaxAge, and the one before it is still accepted.
	RequireNonce bool
	// NonceKey makes the nonces: replicas given one key (32 random bytes)
	// give and accept the same. Nil means a random key of this process's
	// (without affinity, a client may need a nonce once per replica).
	NonceKey []byte
	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time
}

// dpopChecker is the DPoPConfig of a RequireBearer, prepared.
type dpopChecker struct {
	required  bool
	publicURL string
	window    time.Duration
	cache     *replay.Cache
	store     limit.ReplayStore
	nonces    *dpop.Nonces // nil when off
	keys      *dpop.Keys   // the proofs' keys, read once each
	now       func() time.Time
}

// dpopLeeway is how far ahead of this service's clock a proof's iat may
// be.
const dpopLeeway = 5 * time.Second

func newDPoPChecker(cfg *DPoPConfig) (*dpopChecker, error) {
	publicURL, err := parseOrigin(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("middleware: DPoPConfig.PublicURL %w", err)
	}
	if cfg.ReplayBytes < 0 {
		return nil, errors.New("middleware: DPoPConfig.ReplayBytes is negative")
	}
	if cfg.ProofMaxAge != 0 && cfg.ProofMaxAge < time.Second {
		return nil, fmt.Errorf("middleware: DPoPConfig.ProofMaxAge %v: at least a second (or zero: a minute)", cfg.ProofMaxAge)
	}
	d := &dpopChecker{
		required:  cfg.Required,
		publicURL: publicURL,
		window:    cmp.Or(cfg.ProofMaxAge, time.Minute),
		store:     cfg.Replays,
		keys:      dpop.NewKeys(),
		now:       cfg.Now,
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.store == nil {
		d.cache = replay.New(cmp.Or(cfg.ReplayBytes, 4<<20))
	}
	if cfg.RequireNonce {
		key := cfg.NonceKey
		if len(key) == 0 {
			key = make([]byte, 32)
			_, _ = rand.Read(key) // never fails (crypto/rand)
		}
		d.nonces = &dpop.Nonces{Key: key, Period: d.window}
	}
	return d, nil
}

// check checks the request's proof for token, whose claims c validated,
// and remembers its jti: the proof is checked only once the token is
// good, so that a request with a bad token costs no signature check, and
// only the holder of a good token's key can take a place in the replay
// memory. It returns the reason to refuse, and a nonce to send with it.
func (d *dpopChecker) check(ctx context.Context, r *http.Request, token string, c *accesstoken.Claims) (nonce string, reason error) {
	proofs := r.Header["Dpop"] // canonical: Values would allocate to canonicalize "DPoP"
	if len(proofs) != 1 {
		return "", proofFailure(fmt.Sprintf("%d DPoP headers, want one", len(proofs)), nil)
	}
	now := d.now()
	p, err := dpop.Verify(proofs[0], dpop.Check{Method: r.Method, URL: requestOrigin(r, d.publicURL) + requestPath(r), AccessToken: token, Nonces: d.nonces, Now: now, Window: d.window, Leeway: dpopLeeway, Keys: d.keys})
	switch {
	case errors.Is(err, dpop.ErrNonce):
		return d.nonces.At(now), errDPoPNonce
	case err != nil:
		var f *dpop.Failure
		if !errors.As(err, &f) {
			return "", proofFailure("unreadable", err) // Verify returns none other
		}
		return "", proofFailure(f.Check, err)
	case p.JKT != c.JKT:
		return "", errDPoPKey
	}
	return "", d.remember(ctx, c, p, now)
}

// remember records the proof's jti until it is too old to be accepted,
// under the token's client: a subject's IDs go to an eighth of the
// memory, so that a client that floods it, with as many bound tokens and
// keys as it holds, fills its own share and not the other clients'.
func (d *dpopChecker) remember(ctx context.Context, c *accesstoken.Claims, p *dpop.Proof, now time.Time) error {
	subject, id := "dpop:"+c.Issuer+" "+c.ClientID, p.JKT+" "+p.ID
	if d.store != nil {
		fresh, err := d.store.Remember(ctx, limit.Replay{Subject: subject, ID: id, Until: p.Expires, Now: now})
		switch {
		case err != nil:
			return proofFailure("its jti could not be remembered", err)
		case !fresh:
			return proofFailure("its jti was already used", nil)
		}
		return nil
	}
	fresh, full := d.cache.Add(subject, id, p.Expires, now)
	switch {
	case full > 0:
		return proofFailure("no room to remember its jti", nil)
	case !fresh:
		return proofFailure("its jti was already used", nil)
	}
	return nil
}
