package accesstoken

import (
	"cmp"
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jwks"
	"github.com/idsauth/idsauth/observe"
)

// JWKSConfig configures a JWKS fetched over HTTP (NewJWKS). URL or
// Issuer is required; every other zero value is a safe default.
type JWKSConfig struct {
	// URL is where the key set is published. A URL with userinfo is
	// refused, here, in Issuer and in the discovery document: a proxy's
	// credentials go in HTTPClient's Transport.
	URL string

	// Issuer, when URL is empty, is the issuer whose discovery document
	// (or RFC 8414 metadata) names the URL; the document's "issuer" must
	// be Issuer exactly. See docs/RESOURCE-SERVER.md.
	Issuer string

	// HTTPClient's Transport fetches the discovery document and the key
	// set. Nil means http.DefaultTransport. Whatever it is, every fetch
	// ends after Timeout, and answers over 1 MiB are refused.
	HTTPClient *http.Client

	// Timeout bounds each fetch, to the answer's last byte, redirects
	// included. Zero means 10 seconds; NewJWKS refuses a negative value.
	Timeout time.Duration

	// RefreshInterval is how often the key set is fetched again in the
	// background. Zero means 5 minutes.
	RefreshInterval time.Duration

	// RefreshUnknownKID limits how often a token with an unknown "kid"
	// fetches the key set again; a token that finds it spent is refused at
	// once (ErrUnknownKey). Nil means once every 30 seconds.
	RefreshUnknownKID *rate.Limiter

	// Logger receives the failures of the background refresh. Nil logs
	// nothing.
	Logger *slog.Logger

	// Observer gets an observe.KeysFetched or KeysFetchFailed event for
	// every fetch. Nil sends none.
	Observer observe.Observer
}

// defaultTimeout bounds a fetch or a call when no Timeout is given.
const defaultTimeout = 10 * time.Second

// JWKS is a JSON Web Key Set ([RFC 7517]) as a KeySource: an issuer's
// published keys, fetched and kept fresh (NewJWKS), or given (ParseJWKS).
// It is safe for concurrent use.
//
// jwkset, by the author of keyfunc, fetches the set and refreshes it; each
// new set is indexed once, so that a token's keys are read by its kid,
// or for a token without kid by its alg, with one check of each key: its
// "use" absent or "sig", its "key_ops", if any, holding "verify", and its
// "alg", if any, the token's ("EdDSA" and "Ed25519" being one). A token
// without kid gets only the keys of its alg's type too (an EC key on
// P-256 for ES256, RSA for RS256 and PS256, Ed25519 for EdDSA), so that a
// JWK without "alg" of another type does not count toward
// MaxKeysPerToken. A kid the set lacks fetches it again, as
// RefreshUnknownKID allows. For golang-jwt's own parser, Keyfunc gives
// keyfunc's view of the same keys.
//
// [RFC 7517]: https://www.rfc-editor.org/rfc/rfc7517
type JWKS struct {
	store *versionedStorage
	// refresh fetches the set into store, bounded by ctx and the
	// client's Timeout, and reports a failure. Nil for a set given
	// (ParseJWKS).
	refresh    func(ctx context.Context)
	unknownKID *rate.Limiter
	kf         keyfunc.Keyfunc
}

// NewJWKS returns the key set that cfg names, fetched once before it
// returns and then every RefreshInterval, until ctx ends. A failed first
// fetch is no error: the set is empty (a token is refused with
// ErrKeysUnavailable) until a fetch succeeds. A failed discovery is an
// error, since without it there is no URL to fetch.
func NewJWKS(ctx context.Context, cfg JWKSConfig) (*JWKS, error) {
	switch {
	case cfg.URL == "" && cfg.Issuer == "":
		return nil, errors.New("accesstoken: JWKSConfig needs a URL or an Issuer")
	case cfg.Timeout < 0:
		return nil, errors.New("accesstoken: JWKSConfig.Timeout is negative")
	case cfg.URL != "":
		if err := checkURL("JWKSConfig.URL", cfg.URL); err != nil {
			return nil, err
		}
	default:
		if err := checkURL("JWKSConfig.Issuer", cfg.Issuer); err != nil {
			return nil, err
		}
	}
	timeout := cmp.Or(cfg.Timeout, defaultTimeout)
	client := jwks.Client(cfg.HTTPClient, timeout, 0)
	jwksURL := cfg.URL
	if jwksURL == "" {
		u, err := discover(ctx, client, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		jwksURL = u
	}
	if _, err := url.ParseRequestURI(jwksURL); err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	s := &JWKS{store: newVersionedStorage(cfg.Observer), unknownKID: cfg.RefreshUnknownKID}
	if s.unknownKID == nil {
		s.unknownKID = rate.NewLimiter(rate.Every(30*time.Second), 1)
	}
	logger := cfg.Logger
	s.refresh = func(ctx context.Context) {
		keys, err := jwks.Fetch(ctx, client, jwksURL, nil, jwks.Rules{})
		if err == nil {
			err = s.store.replace(ctx, keys)
		}
		if err == nil {
			return
		}
		send(ctx, cfg.Observer, observe.Event{Kind: observe.KeysFetchFailed, Reason: jwks.Failure(err)})
		if logger != nil {
			logger.LogAttrs(ctx, slog.LevelWarn, "idsauth: JWKS refresh failed",
				slog.String("url", jwksURL), slog.String("error", err.Error()))
		}
	}
	first, cancel := context.WithTimeout(ctx, timeout)
	s.refresh(first)
	cancel()
	go s.refreshEvery(ctx, cmp.Or(max(0, cfg.RefreshInterval), 5*time.Minute), timeout)
	var err error
	if s.kf, err = keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: limitedStorage{s.store, s}}); err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	return s, nil
}

// refreshEvery fetches the set every interval, each fetch bounded by
// timeout, until ctx ends.
func (s *JWKS) refreshEvery(ctx context.Context, interval, timeout time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			fctx, cancel := context.WithTimeout(ctx, timeout)
			s.refresh(fctx)
			cancel()
		}
	}
}

// ParseJWKS returns the key set data holds, the JSON of a JWKS
// ({"keys": [...]}): keys given rather than fetched, which never change.
// Keys of a type this module does not read are left out, as from a
// fetched set.
func ParseJWKS(data []byte) (*JWKS, error) {
	given, err := jwks.Parse(data, jwks.Rules{})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: a JWKS: %w", err)
	}
	s := &JWKS{store: newVersionedStorage(nil)}
	if err := s.store.replace(context.Background(), given); err != nil {
		return nil, fmt.Errorf("accesstoken: a JWKS: %w", err)
	}
	kf, err := keyfunc.New(keyfunc.Options{Storage: s.store})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: a JWKS: %w", err)
	}
	s.kf = kf
	return s, nil
}

// VerificationKeys returns the keys of the JWKS that may verify a token
// with this kid and alg: the JWK named by kid, or, without a kid, every
// JWK that fits (see usable) and is of alg's key type. A kid the set
// lacks fetches it again, as the unknown-kid limit allows.
func (s *JWKS) VerificationKeys(ctx context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	set := s.store.set.Load()
	if kid != "" && !set.Has(kid) && s.refresh != nil && s.unknownKID.Allow() {
		s.refresh(ctx) // fetches the set again into store
		set = s.store.set.Load()
	}
	return set.Keys(kid, alg)
}

// KeysVersion changes each time a fetch brings a key set unlike the last.
func (s *JWKS) KeysVersion() uint64 { return s.store.set.Load().Version }

// Keyfunc is keyfunc's jwt.Keyfunc over the same keys, for golang-jwt's
// own parser (jwt.Parse(token, jwks.Keyfunc)): the JWK the token's kid
// names, with keyfunc's checks ("use", the JWK's "alg"), and a kid the
// set lacks fetching it again as RefreshUnknownKID allows. Validate does
// more than a parser: see Validator.
func (s *JWKS) Keyfunc(token *jwt.Token) (any, error) { return s.kf.Keyfunc(token) }

// limitedStorage is the storage keyfunc reads: the stored JWKs, and
// the remote set for a kid they lack, as the unknown-kid limit allows.
type limitedStorage struct {
	*versionedStorage
	s *JWKS
}

func (l limitedStorage) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	j, err := l.versionedStorage.KeyRead(ctx, kid)
	if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) || l.s.refresh == nil || !l.s.unknownKID.Allow() {
		return j, err
	}
	l.s.refresh(ctx)
	return l.versionedStorage.KeyRead(ctx, kid)
}

func newVersionedStorage(o observe.Observer) *versionedStorage {
	s := &versionedStorage{Storage: jwkset.NewMemoryStorage(), observer: o}
	s.set.Store(jwks.Index(0, nil, "")) // until the first fetch
	return s
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
	set     atomic.Pointer[jwks.Set]

	observer observe.Observer // told of every fetch, which ends here
}

// replace makes given the stored set: indexed for the validator, and
// as jwkset's JWKs for keyfunc (each JWK jwkset reads, as it reads it).
func (s *versionedStorage) replace(ctx context.Context, given []jwks.Key) error {
	readable := 0
	for _, k := range given {
		if k.Pub != nil {
			readable++
		}
	}
	send(ctx, s.observer, observe.Event{Kind: observe.KeysFetched, Keys: readable})
	fp := jwks.Fingerprint(given)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.set.Load()
	if fp == s.current && old.Version > 0 {
		return nil
	}
	forKeyfunc := make([]jwkset.JWK, 0, len(given))
	for _, k := range given {
		j, err := jwkset.NewJWKFromRawJSON(k.Raw, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		if err == nil {
			forKeyfunc = append(forKeyfunc, j)
		}
	}
	err := s.Storage.KeyReplaceAll(ctx, forKeyfunc)
	s.current = fp
	if err != nil {
		s.current = "" // unknown content: the next fetch counts as a change
	}
	// The new set is indexed under a new version at once: a validation
	// that reads the new version reads the new keys.
	s.set.Store(jwks.Index(old.Version+1, given, ""))
	return err
}
