package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// KeySource gives the key that verifies a token, the shape of keyfunc's
// Keyfunc method. Set ValidatorConfig.Keys to one to validate without
// fetching a JWKS: *issuer.Issuer is one, and so is any keyfunc.Keyfunc.
//
// A KeySource that also has a KeysVersion() uint64 method, whose value
// changes whenever keys are added or removed, lets the validator's cache
// drop tokens signed by a key that is gone.
type KeySource interface {
	Keyfunc(token *jwt.Token) (any, error)
}

// TokenValidator validates a raw access token and returns its claims.
// *Validator is the implementation; RequireBearer takes the interface so
// a service can put its own in front of it.
type TokenValidator interface {
	Validate(ctx context.Context, token string) (*Claims, error)
}

// DefaultAlgorithms are the signing algorithms a Validator accepts when
// ValidatorConfig.Algorithms is empty.
var DefaultAlgorithms = []string{"ES256", "RS256", "PS256", "EdDSA"}

// ValidatorConfig configures a Validator. Only Issuer is required; every
// zero value is a safe default.
type ValidatorConfig struct {
	// Issuer is the expected "iss" claim, e.g. "https://host/ids". When
	// neither JWKSURL nor Keys is set, the JWKS URL is read from
	// {Issuer}/.well-known/openid-configuration, whose "issuer" must equal
	// Issuer exactly.
	Issuer string

	// JWKSURL is where the signing keys are published. Empty means: found
	// by discovery (unless Keys is set).
	JWKSURL string

	// Audience, when not empty, requires the "aud" claim to hold at least
	// one of these values. Empty means "aud" is not checked.
	Audience []string

	// Keys, when set, is the only source of verification keys: nothing is
	// fetched over HTTP. Use it when the issuer runs in the same process.
	Keys KeySource

	// Algorithms are the accepted "alg" values. Empty means
	// DefaultAlgorithms. "none" and the HMAC algorithms are never accepted,
	// even if listed: NewValidator refuses them.
	Algorithms []string

	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means 30
	// seconds; a negative value means none.
	Leeway time.Duration

	// RequireType rejects tokens whose header has no "typ". By default a
	// missing typ is accepted, for issuers that omit it; a typ that is
	// present must always be "at+jwt", "application/at+jwt" or "JWT".
	RequireType bool

	// HTTPClient fetches the discovery document and the JWKS. Nil means a
	// client with a 10-second timeout. Either way, answers larger than
	// 1 MiB are refused.
	HTTPClient *http.Client

	// RefreshInterval is how often the JWKS is fetched again in the
	// background. Zero means 5 minutes.
	RefreshInterval time.Duration

	// RefreshUnknownKID limits how often a token with an unknown "kid"
	// triggers a JWKS fetch (keyfunc's Override.RefreshUnknownKID). Nil
	// means at most once every 30 seconds. A token that arrives while the
	// limit is exhausted fails at once with ErrUnknownKey; it never waits.
	RefreshUnknownKID *rate.Limiter

	// Logger receives JWKS refresh failures. Nil logs nothing.
	Logger *slog.Logger

	// CacheSize bounds how many validated tokens are remembered, so that
	// a token seen again skips the signature check (see below). Zero
	// means 10000; a negative value turns the cache off.
	//
	// A cached token is the same token to the byte; it is remembered until
	// the earlier of its exp (with leeway) and CacheMaxAge, and forgotten
	// as soon as the key set changes (a JWKS refresh, an issuer reload).
	// An entry costs about 250 bytes plus the token (at most 4 KiB; longer
	// tokens are not cached). With a Keys source that has no KeysVersion
	// method the cache stays off, since it could not follow key removals.
	CacheSize int

	// CacheMaxAge bounds how long a validated token is remembered. Zero
	// means 5 minutes.
	CacheMaxAge time.Duration

	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time
}

// Validator validates access tokens (RFC 9068) against the issuer's keys.
// It is safe for concurrent use. A Validator that fetches a JWKS owns a
// goroutine that refreshes it; the goroutine ends when the context given
// to NewValidator ends.
type Validator struct {
	parser      *jwt.Parser
	keys        KeySource
	keysCtx     func(ctx context.Context) jwt.Keyfunc // set for the JWKS source
	allowed     map[string]bool
	requireType bool
	leeway      time.Duration
	now         func() time.Time
	cache       *tokenCache   // nil when off
	keysVersion func() uint64 // nil when the source has no version
}

// maxDocument bounds what is read of a discovery document or a JWKS.
const maxDocument = 1 << 20

// NewValidator returns a Validator for cfg. With a JWKS URL (given or
// discovered) it fetches the key set once before it returns; if that
// fetch fails it still returns, validation fails with ErrKeysUnavailable,
// and the keys are fetched again on the refresh interval and, rate
// limited, when a token names a key it does not know. A failed discovery
// is an error, since without it there is no URL to fetch keys from.
func NewValidator(ctx context.Context, cfg ValidatorConfig) (*Validator, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("middleware: ValidatorConfig.Issuer is required")
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms
	}
	allowed := make(map[string]bool, len(algs))
	for _, a := range algs {
		if strings.EqualFold(a, "none") || strings.HasPrefix(strings.ToUpper(a), "HS") {
			return nil, fmt.Errorf("middleware: algorithm %q is never allowed", a)
		}
		if jwt.GetSigningMethod(a) == nil {
			return nil, fmt.Errorf("middleware: unknown algorithm %q", a)
		}
		allowed[a] = true
	}
	leeway := cfg.Leeway
	switch {
	case leeway == 0:
		leeway = 30 * time.Second
	case leeway < 0:
		leeway = 0
	}
	opts := []jwt.ParserOption{
		jwt.WithLeeway(leeway),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithIssuedAt(),
		jwt.WithExpirationRequired(),
	}
	if len(cfg.Audience) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.Audience...))
	}
	if cfg.Now != nil {
		opts = append(opts, jwt.WithTimeFunc(cfg.Now))
	}
	v := &Validator{
		parser:      jwt.NewParser(opts...),
		allowed:     allowed,
		requireType: cfg.RequireType,
		leeway:      leeway,
		now:         cfg.Now,
	}
	if v.now == nil {
		v.now = time.Now
	}
	if cfg.CacheSize >= 0 {
		size, age := cfg.CacheSize, cfg.CacheMaxAge
		if size == 0 {
			size = 10000
		}
		if age <= 0 {
			age = 5 * time.Minute
		}
		v.cache = newTokenCache(size, age)
	}
	if cfg.Keys != nil {
		v.keys = cfg.Keys
		v.setKeysVersion()
		return v, nil
	}

	client := limitedClient(cfg.HTTPClient)
	jwksURL := cfg.JWKSURL
	if jwksURL == "" {
		u, err := discover(ctx, client, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		jwksURL = u
	}
	src, err := newJWKSSource(ctx, client, jwksURL, cfg)
	if err != nil {
		return nil, err
	}
	v.keys = src
	v.keysCtx = src.keyfunc.KeyfuncCtx
	v.setKeysVersion()
	return v, nil
}

// setKeysVersion finds the key source's version, if it has one. Without
// one, cached tokens cannot follow key removals, so the cache is off.
func (v *Validator) setKeysVersion() {
	if kv, ok := v.keys.(interface{ KeysVersion() uint64 }); ok {
		v.keysVersion = kv.KeysVersion
	} else {
		v.cache = nil
	}
}

// Validate checks a raw access token: its form, header (alg on the
// allow-list, typ, no crit), signature, exp/nbf/iat with leeway, iss, aud
// when configured, and the scope claim. On failure it returns one of the
// Err* values of this package.
func (v *Validator) Validate(ctx context.Context, token string) (*Claims, error) {
	var now time.Time
	var keys uint64
	if v.cache != nil {
		now, keys = v.now(), v.keysVersion()
		if c, ok := v.cache.get(token, now, keys); ok {
			return c, nil
		}
	}
	var jc jwtClaims
	_, err := v.parser.ParseWithClaims(token, &jc, v.keyfunc(ctx))
	if err != nil {
		return nil, classify(err)
	}
	_, rest, _ := strings.Cut(token, ".")
	payload, _, _ := strings.Cut(rest, ".")
	c, err := jc.claims(payload)
	if err != nil {
		return nil, err
	}
	if v.cache != nil {
		v.cache.put(token, c, now, c.ExpiresAt.Add(v.leeway), keys)
	}
	return c, nil
}

// keyfunc checks the header, then finds the key.
func (v *Validator) keyfunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if err := v.checkHeader(t.Header); err != nil {
			return nil, err
		}
		var (
			key any
			err error
		)
		if v.keysCtx != nil {
			key, err = v.keysCtx(ctx)(t)
		} else {
			key, err = v.keys.Keyfunc(t)
		}
		if err != nil {
			return nil, v.keyError(ctx, err)
		}
		return key, nil
	}
}

func (v *Validator) checkHeader(h map[string]any) error {
	alg, _ := h["alg"].(string)
	if !v.allowed[alg] {
		return ErrAlgorithm
	}
	if _, ok := h["crit"]; ok {
		return ErrCritical
	}
	if kid, ok := h["kid"]; ok {
		if _, isString := kid.(string); !isString {
			return ErrMalformed
		}
	}
	typ, present := h["typ"]
	if !present {
		if v.requireType {
			return ErrType
		}
		return nil
	}
	s, _ := typ.(string)
	if !strings.EqualFold(s, "at+jwt") && !strings.EqualFold(s, "application/at+jwt") && !strings.EqualFold(s, "JWT") {
		return ErrType
	}
	return nil
}

// keyError turns a key lookup failure into ErrUnknownKey, or
// ErrKeysUnavailable when there are no keys at all.
func (v *Validator) keyError(ctx context.Context, err error) error {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r
		}
	}
	if src, ok := v.keys.(*jwksSource); ok && src.empty(ctx) {
		return ErrKeysUnavailable
	}
	return ErrUnknownKey
}

// classify maps golang-jwt's errors onto ours.
func classify(err error) error {
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r
		}
	}
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return ErrExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return ErrNotYetValid
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return ErrIssuedInFuture
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return ErrIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return ErrAudience
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return ErrMissingClaim
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrSignature
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// The header named an algorithm golang-jwt does not know.
		return ErrAlgorithm
	}
	return ErrMalformed
}

// discover reads the issuer's discovery document and returns its jwks_uri.
func discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("middleware: discovery: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("middleware: discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("middleware: discovery: %s answered %s", u, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", fmt.Errorf("middleware: discovery: %s: %w", u, err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("middleware: discovery: document names issuer %q, want %q", doc.Issuer, issuer)
	}
	if doc.JWKSURI == "" {
		return "", fmt.Errorf("middleware: discovery: %s has no jwks_uri", u)
	}
	return doc.JWKSURI, nil
}

// jwksSource is a KeySource backed by a JWKS URL.
type jwksSource struct {
	keyfunc keyfunc.Keyfunc
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
	store := &versionedStorage{Storage: jwkset.NewMemoryStorage()}
	remote, err := jwkset.NewStorageFromHTTP(jwksURL, jwkset.HTTPClientStorageOptions{
		Client:                    client,
		Ctx:                       ctx,
		HTTPTimeout:               10 * time.Second,
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           refresh,
		Storage:                   store,
		RefreshErrorHandler: func(ctx context.Context, err error) {
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
		// and its wait bound would also cut the fetch short.
		RateLimitWaitMax:  10 * time.Second,
		RefreshUnknownKID: rate.NewLimiter(rate.Inf, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("middleware: JWKS %s: %w", jwksURL, err)
	}
	storage := &unknownKIDStorage{Storage: remotes, local: store, limit: unknownKID}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: storage})
	if err != nil {
		return nil, fmt.Errorf("middleware: JWKS %s: %w", jwksURL, err)
	}
	return &jwksSource{keyfunc: kf, store: store}, nil
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

func (s *jwksSource) Keyfunc(t *jwt.Token) (any, error) { return s.keyfunc.Keyfunc(t) }

// KeysVersion changes each time the key set is replaced by a fetch.
func (s *jwksSource) KeysVersion() uint64 { return s.store.version.Load() }

func (s *jwksSource) empty(ctx context.Context) bool {
	all, err := s.store.KeyReadAll(ctx)
	return err != nil || len(all) == 0
}

// versionedStorage counts the replacements of a key set, so that cached
// validations can tell the keys have changed.
type versionedStorage struct {
	jwkset.Storage
	version atomic.Uint64
}

func (s *versionedStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	err := s.Storage.KeyReplaceAll(ctx, given)
	s.version.Add(1)
	return err
}

// limitedClient returns a client like c (or a default one) whose answers
// are cut off with an error past maxDocument bytes.
func limitedClient(c *http.Client) *http.Client {
	out := &http.Client{Timeout: 10 * time.Second}
	if c != nil {
		cp := *c
		out = &cp
	}
	base := out.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = limitTransport{base: base, max: maxDocument}
	return out
}

type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max}
	return resp, nil
}

// errTooLarge is what a body past the limit reads as.
var errTooLarge = errors.New("answer larger than 1 MiB")

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
