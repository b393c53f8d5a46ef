package accesstoken

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/observe"
)

// jwksSource is the VersionedKeySource of a fetched JWKS. jwkset fetches
// the set and refreshes it into store, which indexes each new set once
// (keySet); a token's keys are read from that index by its kid, or for a
// token without kid by its alg, with one usability check (usable). A kid
// the index lacks fetches the set again, as the unknown-kid limit allows:
// a token that finds it spent fails at once, it never waits.
type jwksSource struct {
	store *versionedStorage
	// remote reads store through jwkset's HTTP client: reading a kid
	// store lacks from it fetches the set again (its own limit is off:
	// unknownKID is the limit).
	remote     jwkset.Storage
	unknownKID *rate.Limiter
	kf         keyfunc.Keyfunc // for golang-jwt's parser (keyfunc)
}

func newJWKSSource(ctx context.Context, client *http.Client, jwksURL string, cfg Config) (*jwksSource, error) {
	refresh := cfg.RefreshInterval
	if refresh <= 0 {
		refresh = 5 * time.Minute
	}
	s := &jwksSource{
		store:      &versionedStorage{Storage: jwkset.NewMemoryStorage(), observer: cfg.Observer},
		unknownKID: cfg.RefreshUnknownKID,
	}
	s.store.set.Store(newKeySet(0, nil)) // until the first fetch
	if s.unknownKID == nil {
		s.unknownKID = rate.NewLimiter(rate.Every(30*time.Second), 1)
	}
	logger := cfg.Logger
	fetched, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               cfg.fetchTimeout(), // the client's Timeout bounds it too
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           refresh,
		Storage:                   s.store,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			send(ctx, cfg.Observer, observe.Event{Kind: observe.KeysFetchFailed, Reason: fetchFailure(err)})
			if logger != nil {
				logger.LogAttrs(ctx, slog.LevelWarn, "idsauth: JWKS refresh failed",
					slog.String("url", jwksURL), slog.String("error", err.Error()))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	s.remote, err = jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs: map[string]jwkset.Storage{jwksURL: fetched},
		// Its wait bound also bounds the fetch that follows.
		RateLimitWaitMax:  cfg.fetchTimeout(),
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	s.kf, err = keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: limitedStorage{s.store, s}})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	return s, nil
}

// VerificationKeys returns the keys of the JWKS that may verify a token
// with this kid and alg: the JWK named by kid, or, without a kid, every
// JWK that fits (see usable). A kid the set lacks fetches it again, as
// the unknown-kid limit allows.
func (s *jwksSource) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	set := s.store.set.Load()
	if kid == "" {
		a := set.withoutKID[alg]
		return a.keys, a.err
	}
	k, ok := set.byKID[kid]
	if !ok && s.unknownKID.Allow() {
		_, _ = s.remote.KeyRead(ctx, kid) // fetches the set again into store
		set = s.store.set.Load()
		k, ok = set.byKID[kid]
	}
	switch {
	case !ok && set.empty():
		return nil, ErrKeysUnavailable
	case !ok:
		return nil, ErrUnknownKey
	}
	if err := k.usable(alg); err != nil {
		return nil, err
	}
	return []crypto.PublicKey{k.pub}, nil
}

// KeysVersion changes each time a fetch brings a key set unlike the last.
func (s *jwksSource) KeysVersion() uint64 { return s.store.set.Load().version }

// keyfunc returns keyfunc's jwt.Keyfunc over the same keys, for
// golang-jwt's parser: keyfunc's checks ("use", a JWK's "alg"), and an
// unknown kid fetching the set again as the same limit allows.
func (s *jwksSource) keyfunc() jwt.Keyfunc { return s.kf.Keyfunc }

// limitedStorage is the storage keyfunc reads: the stored JWKs, and
// the remote set for a kid they lack, as the unknown-kid limit allows.
type limitedStorage struct {
	*versionedStorage
	s *jwksSource
}

func (l limitedStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	j, err := l.versionedStorage.KeyRead(ctx, kid)
	if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) || !l.s.unknownKID.Allow() {
		return j, err
	}
	return l.s.remote.KeyRead(ctx, kid)
}

// keySet is one version of a JWKS, indexed for the validator when it was
// stored: its JWKs by kid, and what a token without kid gets for each
// algorithm of the table, so that such a token, which anyone can forge,
// costs no walk through the set.
type keySet struct {
	version    uint64
	count      int // JWKs, with a kid or not
	byKID      map[string]jwk
	withoutKID map[string]kidlessKeys // by alg
}

func (k *keySet) empty() bool { return k.count == 0 }

// kidlessKeys is what a token without kid gets: at most
// MaxKeysPerToken+1 keys (enough to tell that there are too many), or
// the error.
type kidlessKeys struct {
	keys []crypto.PublicKey
	err  error
}

// jwk is what the validator reads of one JWK.
type jwk struct {
	pub    crypto.PublicKey
	verify bool   // "use" absent or "sig", and "key_ops", if any, hold "verify"
	alg    string // its "alg", "" for none
}

// errAlgorithm is the error of a JWK that is for another algorithm than
// the token's.
var errAlgorithm = fmt.Errorf("%w: the JWK is for another alg", ErrAlgorithm)

// errUnusable is the error of a JWK that may not verify anything.
var errUnusable = fmt.Errorf("%w: the JWK may not verify", ErrUnknownKey)

// usable is the one check of a JWK for a token signed with alg: it may
// verify ("use", "key_ops"), and its "alg", if any, names the token's
// algorithm ("EdDSA" and "Ed25519" being one: jws.SameAlgorithm).
func (k jwk) usable(alg string) error {
	switch {
	case !k.verify:
		return errUnusable // an encryption key, or another use
	case k.alg != "" && !jws.SameAlgorithm(k.alg, alg):
		return errAlgorithm
	}
	return nil
}

// newKeySet indexes set as the version-th.
func newKeySet(version uint64, set []jwkset.JWK) *keySet {
	ks := &keySet{version: version, byKID: make(map[string]jwk, len(set)), withoutKID: make(map[string]kidlessKeys, len(jws.Algorithms))}
	all := make([]jwk, 0, len(set))
	for _, j := range set {
		m := j.Marshal()
		k := jwk{
			pub:    j.Key(),
			verify: (m.USE == "" || m.USE == jwkset.UseSig) && (len(m.KEYOPS) == 0 || slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify)),
			alg:    string(m.ALG),
		}
		if m.KID != "" {
			ks.byKID[m.KID] = k
		}
		all = append(all, k)
	}
	ks.count = len(all)
	for _, alg := range jws.Algorithms {
		var a kidlessKeys
		for _, k := range all {
			if k.usable(alg) == nil && len(a.keys) <= MaxKeysPerToken {
				a.keys = append(a.keys, k.pub)
			}
		}
		if len(a.keys) == 0 {
			a.err = ErrUnknownKey
			if len(all) == 0 {
				a.err = ErrKeysUnavailable
			}
		}
		ks.withoutKID[alg] = a
	}
	return ks
}

// versionedStorage is the storage jwkset fetches the set into. It indexes
// each set unlike the last (newKeySet) under a new version, so that cached
// validations can tell the keys have changed. A fetch that brings the
// same keys again changes nothing: otherwise every token with an unknown
// kid, signed by anyone, would empty the cache.
type versionedStorage struct {
	jwkset.Storage
	mu      sync.Mutex // serializes replacements
	current string     // fingerprint of the stored set
	set     atomic.Pointer[keySet]

	observer observe.Observer // told of every fetch, which ends here
}

func (s *versionedStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	send(ctx, s.observer, observe.Event{Kind: observe.KeysFetched, Keys: len(given)})
	fp, fpErr := fingerprint(given)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.set.Load()
	if fpErr == nil && fp == s.current && old.version > 0 {
		return nil
	}
	err := s.Storage.KeyReplaceAll(ctx, given)
	s.current = fp
	if err != nil || fpErr != nil {
		s.current = "" // unknown content: the next fetch counts as a change
	}
	// The new set is indexed under a new version at once: a validation
	// that reads the new version reads the new keys.
	s.set.Store(newKeySet(old.version+1, given))
	return err
}

// fingerprint is the JSON of a key set's members, in an order of their
// own, so that a reordered set is the same set.
func fingerprint(set []jwkset.JWK) (string, error) {
	parts := make([]string, 0, len(set))
	for _, j := range set {
		b, err := json.Marshal(j.Marshal())
		if err != nil {
			return "", err
		}
		parts = append(parts, string(b))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n"), nil
}
