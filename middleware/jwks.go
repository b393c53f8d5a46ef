package middleware

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
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/observe"
)

// jwksSource is the VersionedKeySource of a Validator that fetches a
// JWKS.
type jwksSource struct {
	storage jwkset.Storage // reads the local copy, refetches on an unknown kid
	store   *versionedStorage
}

func newJWKSSource(ctx context.Context, client *http.Client, jwksURL string, cfg ValidatorConfig) (*jwksSource, error) {
	refresh := cfg.RefreshInterval
	if refresh <= 0 {
		refresh = 5 * time.Minute
	}
	unknownKID := cfg.RefreshUnknownKID
	if unknownKID == nil {
		unknownKID = rate.NewLimiter(rate.Every(30*time.Second), 1)
	}
	logger := cfg.Logger
	store := &versionedStorage{Storage: jwkset.NewMemoryStorage(), observer: cfg.Observer}
	remote, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               cfg.fetchTimeout(), // the client's Timeout bounds it too
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           refresh,
		Storage:                   store,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			send(ctx, cfg.Observer, observe.Event{Kind: observe.KeysFetchFailed, Reason: fetchFailure(err)})
			if logger != nil {
				logger.LogAttrs(ctx, slog.LevelWarn, "idsauth: JWKS refresh failed",
					slog.String("url", jwksURL), slog.String("error", err.Error()))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("middleware: JWKS %s: %w", jwksURL, err)
	}
	remotes, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs: map[string]jwkset.Storage{jwksURL: remote},
		// The limit is ours (unknownKIDStorage); jwkset's own waits,
		// and its wait bound also bounds the fetch that follows.
		RateLimitWaitMax:  cfg.fetchTimeout(),
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("middleware: JWKS %s: %w", jwksURL, err)
	}
	storage := &unknownKIDStorage{Storage: remotes, local: store, limit: unknownKID}
	return &jwksSource{storage: storage, store: store}, nil
}

// unknownKIDStorage reads keys from the local copy of the JWKS, and asks
// the remote one (which fetches it again) only while the unknown-kid
// limit allows. A token that finds the limit spent fails at once instead
// of waiting for it.
type unknownKIDStorage struct {
	jwkset.Storage
	local *versionedStorage
	limit *rate.Limiter
}

func (s *unknownKIDStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	jwk, err := s.local.KeyRead(ctx, kid)
	if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) || !s.limit.Allow() {
		return jwk, err
	}
	return s.Storage.KeyRead(ctx, kid)
}

// VerificationKeys returns the keys of the JWKS that may verify a token
// with this kid and alg: the JWK named by kid, or, without a kid, every
// JWK that fits. A JWK fits when its "use" is absent or "sig", its
// "key_ops" (if any) include "verify", and its "alg" (if any) is the
// token's. jwkset checks none of these, so they are checked here. A kid
// not in the local copy fetches the JWKS again, as the unknown-kid limit
// allows.
func (s *jwksSource) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	ks, err := s.keys(ctx, kid, alg)
	if err != nil && s.empty(ctx) {
		return nil, ErrKeysUnavailable
	}
	return ks, err
}

func (s *jwksSource) keys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	if kid == "" {
		all, err := s.store.KeyReadAll(ctx)
		if err != nil {
			return nil, err
		}
		var set []crypto.PublicKey
		for _, j := range all {
			if k, err := verificationKey(j, alg); err == nil {
				set = append(set, k)
			}
		}
		if len(set) == 0 {
			return nil, ErrUnknownKey
		}
		return set, nil
	}
	j, err := s.storage.KeyRead(ctx, kid)
	if err != nil {
		return nil, err
	}
	k, err := verificationKey(j, alg)
	if err != nil {
		return nil, err
	}
	return []crypto.PublicKey{k}, nil
}

// verificationKey returns j's public key if j may verify a token signed
// with alg.
func verificationKey(j jwkset.JWK, alg string) (crypto.PublicKey, error) {
	m := j.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return nil, ErrUnknownKey // an encryption key, or another use
	}
	if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
		return nil, ErrUnknownKey
	}
	if a := string(m.ALG); a != "" && a != alg && !(isEd25519(a) && isEd25519(alg)) {
		return nil, ErrAlgorithm
	}
	key := j.Key()
	if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		key = pk.Public()
	}
	return key, nil
}

// isEd25519 reports the two names of EdDSA over Ed25519: the polymorphic
// "EdDSA" of RFC 8037 and the fully-specified "Ed25519" of RFC 9864.
func isEd25519(alg string) bool { return alg == "EdDSA" || alg == "Ed25519" }

// KeysVersion changes each time a fetch brings a key set unlike the last.
func (s *jwksSource) KeysVersion() uint64 { return s.store.version.Load() }

func (s *jwksSource) empty(ctx context.Context) bool {
	all, err := s.store.KeyReadAll(ctx)
	return err != nil || len(all) == 0
}

// versionedStorage counts the changes of a key set, so that cached
// validations can tell the keys have changed. A fetch that brings the
// same keys again changes nothing: otherwise every token with an unknown
// kid, signed by anyone, would empty the cache.
type versionedStorage struct {
	jwkset.Storage
	mu      sync.Mutex // serializes replacements
	current string     // fingerprint of the stored set
	version atomic.Uint64

	observer observe.Observer // told of every fetch, which ends here
}

func (s *versionedStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	send(ctx, s.observer, observe.Event{Kind: observe.KeysFetched, Keys: len(given)})
	fp, fpErr := fingerprint(given)
	s.mu.Lock()
	defer s.mu.Unlock()
	if fpErr == nil && fp == s.current && s.version.Load() > 0 {
		return nil
	}
	err := s.Storage.KeyReplaceAll(ctx, given)
	s.current = fp
	if err != nil || fpErr != nil {
		s.current = "" // unknown content: the next fetch counts as a change
	}
	// Swap first, then bump: a validation that reads the new version
	// reads the new keys.
	s.version.Add(1)
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
