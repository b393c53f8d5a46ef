package middleware

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// KeySource gives the key that verifies a token, the shape of keyfunc's
// Keyfunc method. Set ValidatorConfig.Keys to one to validate without
// fetching a JWKS: *issuer.Issuer is one, and so is any keyfunc.Keyfunc.
// The token it is given has its header, method and signature; its claims
// are not read before the signature is verified, so they are nil. The
// key may be a jwt.VerificationKeySet, for any of several keys. A
// KeySource is trusted as it is: the checks on a JWK's "use", "key_ops"
// and "alg" are those of the validator's own JWKS source.
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
// ValidatorConfig.Algorithms is empty. "Ed25519" is RFC 9864's
// fully-specified name for EdDSA over an Ed25519 key.
var DefaultAlgorithms = []string{"ES256", "RS256", "PS256", "EdDSA", "Ed25519"}

// DefaultMaxTokenSize is the longest token a Validator reads when
// ValidatorConfig.MaxTokenSize is zero: 16 KiB, far above the 0.5 to 2 KiB
// of real access tokens.
const DefaultMaxTokenSize = 16 << 10

// ValidatorConfig configures a Validator. Issuer is required, and so is
// Audience unless AnyAudience says otherwise; every other zero value is a
// safe default.
type ValidatorConfig struct {
	// Issuer is the expected "iss" claim, e.g. "https://host/ids". When
	// neither JWKSURL nor Keys is set, the JWKS URL is read from
	// {Issuer}/.well-known/openid-configuration, whose "issuer" must equal
	// Issuer exactly.
	Issuer string

	// JWKSURL is where the signing keys are published. Empty means: found
	// by discovery (unless Keys is set).
	JWKSURL string

	// Audience is who this service is, as the issuer names it in "aud": a
	// token is accepted only if its "aud" holds at least one of these
	// values. RFC 9068 §4 requires a resource server to check it, or a
	// token the same issuer minted for another API would work here too.
	//
	// What to put here is what the issuer puts in "aud". IdentityServer
	// (Duende, IdentityServer4) with EmitStaticAudienceClaim on, and this
	// module's issuer by default, put "{issuer}/resources", e.g.
	// "https://host/ids/resources"; with it off, IdentityServer puts the
	// names of the API resources whose scopes the token carries, e.g.
	// "admin-api". NewValidator refuses an empty Audience unless
	// AnyAudience is set.
	Audience []string

	// AnyAudience accepts a token whatever its "aud" says, or without
	// one. Set it only when every API that trusts this issuer may accept
	// every token it issues (a single resource server, say); it cannot be
	// combined with Audience.
	AnyAudience bool

	// Keys, when set, is the only source of verification keys: nothing is
	// fetched over HTTP. Use it when the issuer runs in the same process.
	Keys KeySource

	// Algorithms are the accepted "alg" values. Empty means
	// DefaultAlgorithms. "none" and the HMAC algorithms are never accepted,
	// even if listed: NewValidator refuses them. The list is matched
	// exactly: "EdDSA" and "Ed25519" are listed apart.
	Algorithms []string

	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means 30
	// seconds; a negative value means none.
	Leeway time.Duration

	// RequireType rejects tokens whose header has no "typ". By default a
	// missing typ is accepted, for issuers that omit it; a typ that is
	// present must always be "at+jwt", "application/at+jwt" or "JWT".
	RequireType bool

	// MaxTokenSize is the longest token, in bytes, that is read at all:
	// a longer one fails with ErrTooLarge before any decoding. Zero means
	// DefaultMaxTokenSize (16 KiB); NewValidator refuses a negative value.
	MaxTokenSize int

	// AllowBoundTokens accepts tokens that carry a "cnf" claim, which
	// binds them to a key (DPoP, RFC 9449; mutual TLS, RFC 8705; RFC
	// 7800). By default such a token fails with ErrBoundToken: presented
	// as a plain bearer token it is probably stolen, since its holder
	// would prove the key. Set it only if the handler checks the binding
	// itself (the "cnf" claim is in Claims.Raw).
	AllowBoundTokens bool

	// HTTPClient fetches the discovery document and the JWKS. Nil means a
	// client with a 10-second timeout. Either way, answers larger than
	// 1 MiB are refused.
	HTTPClient *http.Client

	// RefreshInterval is how often the JWKS is fetched again in the
	// background. Zero means 5 minutes.
	RefreshInterval time.Duration

	// RefreshUnknownKID limits how often a token with an unknown "kid"
	// triggers a JWKS fetch. Nil means at most once every 30 seconds. A
	// token that arrives while the limit is exhausted fails at once with
	// ErrUnknownKey; it never waits. A fetch that brings back the same
	// key set leaves the verified-token cache as it was.
	RefreshUnknownKID *rate.Limiter

	// Logger receives JWKS refresh failures. Nil logs nothing.
	Logger *slog.Logger

	// CacheSize is how many validated tokens are remembered, so that a
	// token seen again skips the signature check (see below). Zero means
	// 10000; a negative value turns the cache off.
	//
	// A cached token is the same token to the byte; it is remembered until
	// the earlier of its exp (with leeway) and CacheMaxAge, and forgotten
	// as soon as the key set changes (a JWKS refresh that brings other
	// keys, an issuer reload). CacheSize is the real capacity: when the
	// cache is full, the oldest entry makes room, in constant time. An
	// entry costs about 520 bytes plus the token, as measured after a GC
	// (about 1 KB for a typical 500-byte token); tokens over 4 KiB are not
	// cached. The default 10000 entries thus take about 10 MB. With a Keys
	// source that has no KeysVersion method the cache stays off, since it
	// could not follow key removals.
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
	keys        KeySource
	jwks        *jwksSource // set for the JWKS source
	allowed     map[string]bool
	issuer      string
	audience    []string // empty with AnyAudience
	requireType bool
	allowBound  bool
	maxSize     int
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
// is an error, since without it there is no URL to fetch keys from, and
// so is a config without an Issuer, without an Audience (unless
// AnyAudience), or with a forbidden algorithm.
func NewValidator(ctx context.Context, cfg ValidatorConfig) (*Validator, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("middleware: ValidatorConfig.Issuer is required")
	}
	switch {
	case len(cfg.Audience) == 0 && !cfg.AnyAudience:
		return nil, errors.New(`middleware: ValidatorConfig.Audience is required (RFC 9068 §4): set it to what the issuer puts in "aud" (IdentityServer: "{issuer}/resources" or the API resource names), or set AnyAudience`)
	case len(cfg.Audience) > 0 && cfg.AnyAudience:
		return nil, errors.New("middleware: ValidatorConfig.Audience and AnyAudience exclude each other")
	}
	if cfg.MaxTokenSize < 0 {
		return nil, errors.New("middleware: ValidatorConfig.MaxTokenSize is negative")
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
		if signingMethod(a) == nil {
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
	v := &Validator{
		allowed:     allowed,
		issuer:      cfg.Issuer,
		audience:    slices.Clone(cfg.Audience),
		requireType: cfg.RequireType,
		allowBound:  cfg.AllowBoundTokens,
		maxSize:     cfg.MaxTokenSize,
		leeway:      leeway,
		now:         cfg.Now,
	}
	if v.maxSize == 0 {
		v.maxSize = DefaultMaxTokenSize
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
	v.jwks = src
	v.setKeysVersion()
	return v, nil
}

// signingMethod returns the golang-jwt method that verifies alg, or nil.
// "Ed25519" (RFC 9864) is EdDSA over an Ed25519 key, the only EdDSA
// golang-jwt has.
func signingMethod(alg string) jwt.SigningMethod {
	if alg == "Ed25519" {
		return jwt.SigningMethodEdDSA
	}
	return jwt.GetSigningMethod(alg)
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

// Validate checks a raw access token, in this order: its size, its form,
// its header (alg on the allow-list, typ, no crit), its signature, and
// only then its claims: each registered claim of the right JSON type
// (names matched exactly, NumericDates as JSON numbers), exp/nbf/iat with
// leeway, iss, aud, no cnf, and the scope claim. On failure it returns one
// of the Err* values of this package.
func (v *Validator) Validate(ctx context.Context, token string) (*Claims, error) {
	if len(token) > v.maxSize {
		return nil, ErrTooLarge
	}
	now := v.now()
	var keys uint64
	if v.cache != nil {
		keys = v.keysVersion()
		if c, ok := v.cache.get(token, now, keys); ok {
			return c, nil
		}
	}
	c, err := v.validate(ctx, token, now)
	if err != nil {
		return nil, err
	}
	if v.cache != nil && len(token) <= maxCachedToken {
		// The cache keeps its own copy, and the claims point into it, so
		// neither pins the request's memory.
		token = strings.Clone(token)
		_, rest, _ := strings.Cut(token, ".")
		c.payload, _, _ = strings.Cut(rest, ".")
		v.cache.put(token, c, now, c.ExpiresAt.Add(v.leeway), keys)
	}
	return c, nil
}

// b64 decodes JWS segments: base64url without padding, and only in its
// one canonical form, so that no two strings carry the same signature.
var b64 = base64.RawURLEncoding.Strict()

// validate is Validate without the cache.
func (v *Validator) validate(ctx context.Context, token string, now time.Time) (*Claims, error) {
	h64, rest, ok1 := strings.Cut(token, ".")
	p64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return nil, ErrMalformed
	}
	hb, err := b64.DecodeString(h64)
	if err != nil {
		return nil, ErrMalformed
	}
	var header map[string]any
	if err := json.Unmarshal(hb, &header); err != nil || header == nil {
		return nil, ErrMalformed
	}
	if err := v.checkHeader(header); err != nil {
		return nil, err
	}
	alg := header["alg"].(string) // checkHeader found it on the allow-list
	method := signingMethod(alg)
	sig, err := b64.DecodeString(s64)
	if err != nil {
		return nil, ErrMalformed
	}
	key, err := v.key(ctx, &jwt.Token{Raw: token, Method: method, Header: header, Signature: sig})
	if err != nil {
		return nil, err
	}
	if !verify(method, token[:len(h64)+1+len(p64)], sig, key) {
		return nil, ErrSignature
	}
	// Only now, with the signature good, is the payload read.
	payload, err := b64.DecodeString(p64)
	if err != nil {
		return nil, ErrMalformed
	}
	return v.claims(payload, p64, now)
}

// verify reports whether sig signs signingInput under key, or under any
// key of a jwt.VerificationKeySet.
func verify(method jwt.SigningMethod, signingInput string, sig []byte, key any) bool {
	if set, ok := key.(jwt.VerificationKeySet); ok {
		for _, k := range set.Keys {
			if method.Verify(signingInput, sig, k) == nil {
				return true
			}
		}
		return false
	}
	return method.Verify(signingInput, sig, key) == nil
}

// key finds the key that verifies t.
func (v *Validator) key(ctx context.Context, t *jwt.Token) (any, error) {
	var (
		key any
		err error
	)
	if v.jwks != nil {
		key, err = v.jwks.key(ctx, t.Header)
	} else {
		key, err = v.keys.Keyfunc(t)
	}
	if err != nil {
		return nil, v.keyError(ctx, err)
	}
	return key, nil
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

// keyError turns a key lookup failure into one of ours: ErrUnknownKey, or
// ErrKeysUnavailable when there are no keys at all.
func (v *Validator) keyError(ctx context.Context, err error) error {
	if v.jwks != nil && v.jwks.empty(ctx) {
		return ErrKeysUnavailable
	}
	for _, r := range reasons {
		if errors.Is(err, r) {
			return r
		}
	}
	return ErrUnknownKey
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

// Keyfunc gives the key named by t's kid, as key does.
func (s *jwksSource) Keyfunc(t *jwt.Token) (any, error) { return s.key(context.Background(), t.Header) }

// key returns the public key that may verify a token with this header:
// the JWK named by its kid, or, without a kid, every JWK that fits. A JWK
// fits when its "use" is absent or "sig", its "key_ops" (if any) include
// "verify", and its "alg" (if any) is the token's. keyfunc checks "use"
// only on request and never for a token without a kid, so the check is
// made here.
func (s *jwksSource) key(ctx context.Context, header map[string]any) (any, error) {
	alg, _ := header["alg"].(string)
	kid, hasKID := header["kid"].(string)
	if !hasKID {
		all, err := s.store.KeyReadAll(ctx)
		if err != nil {
			return nil, err
		}
		var set jwt.VerificationKeySet
		for _, j := range all {
			if k, err := verificationKey(j, alg); err == nil {
				set.Keys = append(set.Keys, k)
			}
		}
		if len(set.Keys) == 0 {
			return nil, ErrUnknownKey
		}
		return set, nil
	}
	j, err := s.storage.KeyRead(ctx, kid)
	if err != nil {
		return nil, err
	}
	return verificationKey(j, alg)
}

// verificationKey returns j's public key if j may verify a token signed
// with alg.
func verificationKey(j jwkset.JWK, alg string) (jwt.VerificationKey, error) {
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
}

func (s *versionedStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
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
