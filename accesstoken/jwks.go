package accesstoken

import (
	"cmp"
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

// JWKSConfig configures a JWKS fetched over HTTP (NewJWKS). URL or
// Issuer is required; every other zero value is a safe default.
type JWKSConfig struct {
	// URL is where the key set is published, such as
	// "https://host/ids/.well-known/openid-configuration/jwks". A URL
	// with userinfo ("user:password@") is refused, here, in Issuer and in
	// the discovery document: a proxy's credentials go in HTTPClient's
	// Transport.
	URL string

	// Issuer, when URL is empty, is the issuer whose discovery document,
	// {Issuer}/.well-known/openid-configuration (or, where that is not
	// found, its RFC 8414 metadata, the well-known path inserted before
	// the issuer's path), names the URL ("jwks_uri"); the document's
	// "issuer" must be Issuer exactly.
	Issuer string

	// HTTPClient fetches the discovery document and the key set: its
	// Transport (proxy, TLS, connection pool) is the one used. Nil means
	// http.DefaultTransport. Whatever it is, every fetch ends after
	// Timeout, even with a client that has no Timeout of its own (a
	// shorter Timeout of its own applies too), provided its Transport
	// honours the request's context, as http.Transport does; and answers
	// larger than 1 MiB are refused.
	HTTPClient *http.Client

	// Timeout bounds each fetch of the discovery document or the key set,
	// from the request to the last byte of the answer, redirects
	// included: at start, in the background and on an unknown kid. Zero
	// means 10 seconds; NewJWKS refuses a negative value.
	Timeout time.Duration

	// RefreshInterval is how often the key set is fetched again in the
	// background. Zero means 5 minutes.
	RefreshInterval time.Duration

	// RefreshUnknownKID limits how often a token with an unknown "kid"
	// fetches the key set again. Nil means at most once every 30 seconds.
	// A token that arrives while the limit is spent is refused at once
	// (ErrUnknownKey); it never waits. A fetch that brings back the same
	// key set leaves the version, and so the validator's cache, as they
	// were. Give the key sets of several issuers one limiter to share it.
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
	// remote reads store through jwkset's HTTP client: reading a kid
	// store lacks from it fetches the set again (its own limit is off:
	// unknownKID is the limit). Nil for a set given (ParseJWKS).
	remote     jwkset.Storage
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
	client := limitedClient(cfg.HTTPClient, timeout)
	jwksURL := cfg.URL
	if jwksURL == "" {
		u, err := discover(ctx, client, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		jwksURL = u
	}
	s := &JWKS{store: newVersionedStorage(cfg.Observer), unknownKID: cfg.RefreshUnknownKID}
	if s.unknownKID == nil {
		s.unknownKID = rate.NewLimiter(rate.Every(30*time.Second), 1)
	}
	logger := cfg.Logger
	fetched, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               timeout, // the client's Timeout bounds it too
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           cmp.Or(max(0, cfg.RefreshInterval), 5*time.Minute),
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
		RateLimitWaitMax:  timeout,
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	if s.kf, err = keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: limitedStorage{s.store, s}}); err != nil {
		return nil, fmt.Errorf("accesstoken: JWKS %s: %w", jwksURL, err)
	}
	return s, nil
}

// ParseJWKS returns the key set data holds, the JSON of a JWKS
// ({"keys": [...]}): keys given rather than fetched, which never change.
// Keys of a type this module does not read are left out, as from a
// fetched set.
func ParseJWKS(data []byte) (*JWKS, error) {
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("accesstoken: a JWKS: %w", err)
	}
	given := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		j, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		switch {
		case errors.Is(err, jwkset.ErrUnsupportedKey):
			continue
		case err != nil:
			return nil, fmt.Errorf("accesstoken: a JWKS: %w", err)
		}
		given = append(given, j)
	}
	s := &JWKS{store: newVersionedStorage(nil)}
	if err := s.store.KeyReplaceAll(context.Background(), given); err != nil {
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
	if kid == "" {
		a := set.withoutKID[alg]
		return a.keys, a.err
	}
	k, ok := set.byKID[kid]
	if !ok && s.remote != nil && s.unknownKID.Allow() {
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
func (s *JWKS) KeysVersion() uint64 { return s.store.set.Load().version }

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

// errJWKAlgorithm is the error of a JWK that is for another algorithm
// than the token's.
var errJWKAlgorithm = fmt.Errorf("%w: the JWK is for another alg", errAlgorithm)

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
		return errJWKAlgorithm
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
			// Only a key of the alg's type counts (kty, crv): a JWK
			// without "alg" fits every alg by its members, and would
			// otherwise make a genuine token ambiguous among keys that
			// cannot verify it.
			if k.usable(alg) == nil && jws.KeyFits(alg, k.pub) && len(a.keys) <= MaxKeysPerToken {
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

func newVersionedStorage(o observe.Observer) *versionedStorage {
	s := &versionedStorage{Storage: jwkset.NewMemoryStorage(), observer: o}
	s.set.Store(newKeySet(0, nil)) // until the first fetch
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
