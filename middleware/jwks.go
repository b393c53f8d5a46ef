package middleware

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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

// jwksSource is the VersionedKeySource of a Validator that fetches a
// JWKS. keyfunc selects the keys: it reads the token's kid and alg (the
// header the validator has already checked), finds the JWK named by kid
// through the storage (which fetches the set again on an unknown kid, as
// the limit allows), or every JWK without a kid, checks the JWK's "alg"
// and "use", and hands back the public key. The storage keeps to keyfunc
// only the JWKs that may verify a token of that alg (usable).
type jwksSource struct {
	kf    keyfunc.Keyfunc
	store *versionedStorage

	// kidless holds, for the key set of one version, what a token without
	// kid gets for each alg, so that such a token, which anyone can
	// forge, costs no walk through the set: only the first lookup per alg
	// after each change walks it.
	kidless   atomic.Pointer[kidlessKeys]
	kidlessMu sync.Mutex // serializes the walks
}

// kidlessKeys is what a token without kid gets, by alg, from the key set
// of one version: at most MaxKeysPerToken+1 keys (enough to tell that
// there are too many), or the error.
type kidlessKeys struct {
	version uint64
	byAlg   map[string]kidlessAnswer
}

type kidlessAnswer struct {
	keys []crypto.PublicKey
	err  error
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
	kf, err := keyfunc.New(keyfunc.Options{
		Ctx:          ctx,
		Storage:      verifyingKeys{&unknownKIDStorage{Storage: remotes, local: store, limit: unknownKID}},
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		return nil, fmt.Errorf("middleware: JWKS %s: %w", jwksURL, err)
	}
	return &jwksSource{kf: kf, store: store}, nil
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
// token's, "EdDSA" and "Ed25519" being one. A kid not in the local copy
// fetches the JWKS again, as the unknown-kid limit allows.
func (s *jwksSource) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	if kid == "" {
		return s.withoutKID(ctx, alg)
	}
	return s.lookup(ctx, kid, alg)
}

// withoutKID is lookup for a token without kid, answered from kidless
// while the key set has not changed.
func (s *jwksSource) withoutKID(ctx context.Context, alg string) ([]crypto.PublicKey, error) {
	version := s.store.version.Load() // before the keys: a change after it makes the answer stale
	if m := s.kidless.Load(); m != nil && m.version == version {
		if a, ok := m.byAlg[alg]; ok {
			return a.keys, a.err
		}
	}
	s.kidlessMu.Lock()
	defer s.kidlessMu.Unlock()
	m := s.kidless.Load()
	if m == nil || m.version != version {
		m = &kidlessKeys{version: version}
	} else if a, ok := m.byAlg[alg]; ok {
		return a.keys, a.err
	}
	ks, err := s.lookup(ctx, "", alg)
	ks = ks[:min(len(ks), MaxKeysPerToken+1)]
	next := &kidlessKeys{version: version, byAlg: maps.Clone(m.byAlg)}
	if next.byAlg == nil {
		next.byAlg = make(map[string]kidlessAnswer)
	}
	next.byAlg[alg] = kidlessAnswer{ks, err} // algs on the validator's allow-list only: a few
	s.kidless.Store(next)
	return ks, err
}

func (s *jwksSource) lookup(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	ks, err := s.keys(ctx, kid, alg)
	var other otherEdDSAName
	if errors.As(err, &other) {
		// The JWK names the same algorithm otherwise: keyfunc, which
		// compares the names, is asked again under the JWK's. The key is
		// in the local copy now, so this costs no fetch.
		ks, err = s.keys(ctx, kid, string(other))
	}
	if err != nil && s.empty(ctx) {
		return nil, ErrKeysUnavailable
	}
	return ks, err
}

func (s *jwksSource) keys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	header := map[string]any{"alg": alg}
	if kid != "" {
		header["kid"] = kid
	}
	key, err := s.kf.KeyfuncCtx(context.WithValue(ctx, algKey{}, alg))(&jwt.Token{Header: header})
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case jwt.VerificationKeySet:
		if len(k.Keys) == 0 {
			return nil, ErrUnknownKey
		}
		set := make([]crypto.PublicKey, len(k.Keys))
		for i, pub := range k.Keys {
			set[i] = pub
		}
		return set, nil
	default:
		return []crypto.PublicKey{k}, nil
	}
}

// algKey is the context key under which verifyingKeys finds the token's
// alg.
type algKey struct{}

// verifyingKeys is the storage keyfunc reads: it holds back every JWK
// that may not verify a token of the alg in the context, so that keyfunc
// finds only those that may. keyfunc checks "use" and a named JWK's
// "alg" itself; this adds "key_ops", the "alg" of the JWKs of a token
// without kid, and the two names of EdDSA.
type verifyingKeys struct{ jwkset.Storage }

func (s verifyingKeys) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	j, err := s.Storage.KeyRead(ctx, kid)
	if err != nil {
		return j, err
	}
	alg, _ := ctx.Value(algKey{}).(string)
	if err := usable(j, alg); err != nil {
		return jwkset.JWK{}, err
	}
	return j, nil
}

func (s verifyingKeys) KeyReadAll(ctx context.Context) ([]jwkset.JWK, error) {
	all, err := s.Storage.KeyReadAll(ctx)
	if err != nil {
		return nil, err
	}
	alg, _ := ctx.Value(algKey{}).(string)
	fit := make([]jwkset.JWK, 0, len(all))
	for _, j := range all {
		var other otherEdDSAName
		if err := usable(j, alg); err == nil || errors.As(err, &other) {
			fit = append(fit, j)
		}
	}
	return fit, nil
}

// errAlgorithm is the error of a JWK that is for another algorithm than
// the token's.
var errAlgorithm = fmt.Errorf("%w: the JWK is for another alg", ErrAlgorithm)

// errUnusable is the error of a JWK that may not verify anything.
var errUnusable = fmt.Errorf("%w: the JWK may not verify", ErrUnknownKey)

// otherEdDSAName is the error of a JWK whose "alg" is the other name of
// EdDSA over Ed25519 than the token's: the JWK's.
type otherEdDSAName string

func (n otherEdDSAName) Error() string { return "the JWK names EdDSA " + string(n) }

// usable returns nil when j may verify a token signed with alg.
func usable(j jwkset.JWK, alg string) error {
	m := j.Marshal()
	if m.USE != "" && m.USE != jwkset.UseSig {
		return errUnusable // an encryption key, or another use
	}
	if len(m.KEYOPS) > 0 && !slices.Contains(m.KEYOPS, jwkset.KeyOpsVerify) {
		return errUnusable
	}
	switch a := string(m.ALG); {
	case a == "" || a == alg:
		return nil
	case jws.SameAlgorithm(a, alg):
		return otherEdDSAName(a)
	}
	return errAlgorithm
}

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
