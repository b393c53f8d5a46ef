package accesstoken

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/observe"
)

// DefaultAlgorithms returns the signing algorithms a Validator accepts
// when Config.Algorithms is empty: ES256, RS256, PS256, EdDSA and
// Ed25519, [RFC 9864]'s fully-specified name for EdDSA over an Ed25519
// key. Each call returns a new slice.
//
// [RFC 9864]: https://www.rfc-editor.org/rfc/rfc9864
func DefaultAlgorithms() []string { return slices.Clone(jws.Algorithms) }

// DefaultMaxTokenSize is the longest token a Validator reads when
// Config.MaxTokenSize is zero: 16 KiB, far above the 0.5 to 2 KiB
// of real access tokens.
const DefaultMaxTokenSize = 16 << 10

// DefaultFetchTimeout bounds each fetch of a discovery document or a JWKS
// when Config.FetchTimeout is zero.
const DefaultFetchTimeout = 10 * time.Second

// Config configures a Validator. Issuer is required, and so is
// Audience unless AnyAudience says otherwise; every other zero value is a
// safe default. A Validator that accepts the tokens of several issuers
// names them in Issuers instead.
type Config struct {
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
	// "admin-api". New refuses an empty Audience unless
	// AnyAudience is set.
	Audience []string

	// AnyAudience accepts a token whatever its "aud" says, or without
	// one. Set it only when every API that trusts this issuer may accept
	// every token it issues (a single resource server, say); it cannot be
	// combined with Audience.
	AnyAudience bool

	// Keys, when set, is the only source of verification keys: nothing is
	// fetched over HTTP. Use it when the issuer runs in the same process
	// (Keys: iss, an *issuer.Issuer). It cannot be combined with JWKSURL,
	// HTTPClient, FetchTimeout, RefreshInterval or RefreshUnknownKID,
	// which only apply to a fetched JWKS: New refuses the mix.
	Keys KeySource

	// Algorithms are the accepted "alg" values, names of
	// DefaultAlgorithms(), which is what empty means. New refuses
	// any other name: "none", the HMAC algorithms and the rest. The list
	// is matched exactly: "EdDSA" and "Ed25519" are listed apart.
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
	// DefaultMaxTokenSize (16 KiB); New refuses a negative value.
	MaxTokenSize int

	// AllowBoundTokens accepts tokens that carry a "cnf" claim, which
	// binds them to a key (DPoP, RFC 9449; mutual TLS, RFC 8705; RFC
	// 7800). By default such a token fails with ErrBoundToken: presented
	// as a plain bearer token it is probably stolen, since its holder
	// would prove the key. Set it only if the handler checks the binding
	// itself (the "cnf" claim is in Claims.Raw).
	AllowBoundTokens bool

	// HTTPClient fetches the discovery document and the JWKS: its
	// Transport (proxy, TLS, connection pool) is the one used. Nil means
	// http.DefaultTransport. Whatever it is, every fetch ends after
	// FetchTimeout, even with a client that has no Timeout of its own (a
	// shorter Timeout of its own applies too), provided its Transport
	// honours the request's context, as http.Transport does; and answers
	// larger than 1 MiB are refused.
	HTTPClient *http.Client

	// FetchTimeout bounds each fetch of the discovery document or the
	// JWKS, from the request to the last byte of the answer, redirects
	// included: at start, in the background and on an unknown kid. Zero
	// means DefaultFetchTimeout (10 seconds); New refuses a
	// negative value.
	FetchTimeout time.Duration

	// RefreshInterval is how often the JWKS is fetched again in the
	// background. Zero means 5 minutes.
	RefreshInterval time.Duration

	// RefreshUnknownKID limits how often a token with an unknown "kid"
	// triggers a JWKS fetch. Nil means at most once every 30 seconds. A
	// token that arrives while the limit is exhausted fails at once with
	// ErrUnknownKey; it never waits. A fetch that brings back the same
	// key set leaves the verified-token cache as it was.
	RefreshUnknownKID *rate.Limiter

	// Logger receives the failures of the background JWKS refresh. Nil
	// logs nothing. Rejected requests are logged by the middleware's own
	// Logger (BearerConfig, SCIMConfig).
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
	// source that is not a VersionedKeySource the cache stays off, since
	// it could not follow key removals.
	CacheSize int

	// CacheMaxAge bounds how long a validated token is remembered. Zero
	// means 5 minutes.
	CacheMaxAge time.Duration

	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time

	// Issuers, when set, are the issuers whose tokens are accepted, each
	// with its own keys and audience, in place of Issuer, JWKSURL, Keys,
	// Audience and AnyAudience, which must then be empty: during a move
	// from one identity service to another, say. See TrustedIssuer. The
	// other settings apply to every issuer; a RefreshUnknownKID given
	// here is one limit shared by the JWKS of all of them, and nil gives
	// each its own.
	Issuers []TrustedIssuer

	// Observer gets an event for every validation (observe.
	// ValidationSucceeded, from the cache or not, or ValidationFailed with
	// the reason's code) and every JWKS fetch (observe.KeysFetched or
	// KeysFetchFailed). Nil sends none, at no cost.
	Observer observe.Observer
}

// Validator validates access tokens ([RFC 9068]) against the issuer's
// keys. It is safe for concurrent use. A Validator that fetches a JWKS
// owns a goroutine that refreshes it (one per issuer that fetches); the
// goroutines end when the context given to New ends.
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
type Validator struct {
	issuers     map[string]*trustedIssuer // by exact "iss": Issuer alone, or each of Issuers
	allowed     map[string]bool
	requireType bool
	allowBound  bool
	maxSize     int
	leeway      time.Duration
	now         func() time.Time
	cache       *tokenCache // nil when off, and when no issuer's keys have a version
	observer    observe.Observer
	checks      atomic.Uint64 // signature checks made: counted, for tests
}

// trustedIssuer is one issuer a Validator accepts, as New
// prepared it.
type trustedIssuer struct {
	issuer    string
	audience  []string // empty with AnyAudience
	keys      KeySource
	versioned VersionedKeySource // nil when the source has no version: its tokens are not cached
}

// New returns a Validator for cfg. With a JWKS URL (given or
// discovered) it fetches the key set once before it returns; if that
// fetch fails it still returns, validation fails with ErrKeysUnavailable,
// and the keys are fetched again on the refresh interval and, rate
// limited, when a token names a key it does not know. A failed discovery
// is an error, since without it there is no URL to fetch keys from, and
// so is a config without an Issuer, without an Audience (unless
// AnyAudience), with a forbidden algorithm, or with Keys and a setting of
// a fetched JWKS. With Issuers, all of this holds for each issuer, two
// issuers with the same Issuer are an error too, and on any error the
// JWKS of the issuers before it are not refreshed.
func New(ctx context.Context, cfg Config) (_ *Validator, err error) {
	list, err := cfg.issuerList()
	if err != nil {
		return nil, err
	}
	if cfg.MaxTokenSize < 0 {
		return nil, errors.New("accesstoken: Config.MaxTokenSize is negative")
	}
	if cfg.FetchTimeout < 0 {
		return nil, errors.New("accesstoken: Config.FetchTimeout is negative")
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms()
	}
	allowed := make(map[string]bool, len(algs))
	for _, a := range algs {
		if strings.EqualFold(a, "none") || strings.HasPrefix(strings.ToUpper(a), "HS") {
			return nil, fmt.Errorf("accesstoken: algorithm %q is never allowed", a)
		}
		if jws.Method(a) == nil {
			return nil, fmt.Errorf("accesstoken: unknown algorithm %q", a)
		}
		allowed[a] = true
	}
	leeway := leewayOf(cfg.Leeway)
	v := &Validator{
		allowed:     allowed,
		requireType: cfg.RequireType,
		allowBound:  cfg.AllowBoundTokens,
		maxSize:     cfg.MaxTokenSize,
		leeway:      leeway,
		now:         cfg.Now,
		observer:    cfg.Observer,
		issuers:     make(map[string]*trustedIssuer, len(list)),
	}
	if v.maxSize == 0 {
		v.maxSize = DefaultMaxTokenSize
	}
	if v.now == nil {
		v.now = time.Now
	}
	// An error ends the refreshes of the issuers set up before it.
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	var client *http.Client // made for the first issuer that fetches
	versioned := false      // some issuer's keys have a version
	for _, ti := range list {
		src := ti.Keys
		if src == nil {
			if client == nil {
				client = limitedClient(cfg.HTTPClient, cfg.fetchTimeout())
			}
			if src, err = fetchedKeys(ctx, client, ti, cfg); err != nil {
				return nil, err
			}
		}
		t := &trustedIssuer{issuer: ti.Issuer, audience: slices.Clone(ti.Audience), keys: src}
		t.versioned, _ = src.(VersionedKeySource)
		versioned = versioned || t.versioned != nil
		v.issuers[t.issuer] = t
	}
	// Without a version, cached tokens could not follow key removals:
	// the cache is for the issuers whose keys have one.
	if cfg.CacheSize >= 0 && versioned {
		size, age := cfg.CacheSize, cfg.CacheMaxAge
		if size == 0 {
			size = 10000
		}
		if age <= 0 {
			age = 5 * time.Minute
		}
		v.cache = newTokenCache(size, age)
	}
	return v, nil
}

// fetchedKeys returns the JWKS source of ti, from its JWKSURL or by
// discovery.
func fetchedKeys(ctx context.Context, client *http.Client, ti TrustedIssuer, cfg Config) (KeySource, error) {
	jwksURL := ti.JWKSURL
	if jwksURL == "" {
		u, err := discover(ctx, client, ti.Issuer)
		if err != nil {
			return nil, err
		}
		jwksURL = u
	}
	src, err := newJWKSSource(ctx, client, jwksURL, cfg)
	if err != nil {
		return nil, err
	}
	return src, nil
}

// fetchTimeout is FetchTimeout, or its default.
func (cfg *Config) fetchTimeout() time.Duration {
	if cfg.FetchTimeout == 0 {
		return DefaultFetchTimeout
	}
	return cfg.FetchTimeout
}

// Validate checks a raw access token, in this order: its size, its form,
// its header (alg on the allow-list, typ, no crit), its issuer, its
// signature, and only then its other claims: each registered claim of the
// right JSON type (names matched exactly, NumericDates as JSON numbers),
// no cnf, exp/nbf/iat with leeway, aud, and the scope claim. On failure it
// returns a *ValidationError whose Reason is one of the Err* values of
// this package.
//
// The issuer is the one trusted issuer (Config.Issuer, or one of
// Issuers) whose name is the payload's "iss", exactly; it is found before
// the signature is checked, since only its keys may check it (see
// TrustedIssuer). A payload that is not a JSON object, or whose "iss" is
// not a string, fails with ErrMalformed, and an "iss" of no trusted
// issuer with ErrIssuer, before any key is looked up: such a token never
// causes a fetch, nor spends the unknown-kid limit that the trusted
// issuer's new keys need.
func (v *Validator) Validate(ctx context.Context, token string) (*Claims, error) {
	start := v.startTimer()
	if len(token) > v.maxSize {
		return nil, v.failed(ctx, start, refused(ErrTooLarge))
	}
	now := v.now()
	if c, hit, err := v.fromCache(ctx, v.cache, token, now, start); hit {
		return c, err
	}
	c, t, keys, err := v.validate(ctx, token, now)
	if err == nil {
		err = v.binding(ctx, c)
	}
	if err != nil {
		if _, ok := err.(*ValidationError); !ok {
			err = refused(err)
		}
		return nil, v.failed(ctx, start, err)
	}
	if v.cache != nil && t.versioned != nil && len(token) <= maxCachedToken {
		// The cache keeps its own copy, and the claims point into it, so
		// neither pins the request's memory.
		token = strings.Clone(token)
		_, rest, _ := strings.Cut(token, ".")
		c.payload, _, _ = strings.Cut(rest, ".")
		v.cache.put(token, c, now, c.ExpiresAt.Add(v.leeway), t, keys)
	}
	v.succeeded(ctx, start, false)
	return c, nil
}

// fromCache answers for token from cache (nil: off) when it holds it: its
// claims, or the refusal of its binding for this request; hit is false
// when the token must be checked.
func (v *Validator) fromCache(ctx context.Context, cache *tokenCache, token string, now, start time.Time) (c *Claims, hit bool, err error) {
	if cache == nil {
		return nil, false, nil
	}
	if c, hit = cache.get(token, now); !hit {
		return nil, false, nil
	}
	if err := v.binding(ctx, c); err != nil {
		return nil, true, v.failed(ctx, start, refused(err))
	}
	v.succeeded(ctx, start, true)
	return c, true, nil
}

// validate is Validate without the cache. It returns the issuer that
// accepted the token and the version of its keys read before they were.
func (v *Validator) validate(ctx context.Context, token string, now time.Time) (*Claims, *trustedIssuer, uint64, error) {
	t, err := jws.Parse(token)
	if err != nil {
		return nil, nil, 0, ErrMalformed
	}
	if err := v.checkHeader(t); err != nil {
		return nil, nil, 0, err
	}
	sig, err := t.Signature()
	if err != nil {
		return nil, nil, 0, ErrMalformed
	}
	payload, err := t.Payload()
	if err != nil {
		return nil, nil, 0, ErrMalformed
	}
	raw, err := readClaimSet(payload)
	if err != nil {
		return nil, nil, 0, err
	}
	ti, err := v.chooseIssuer(raw)
	if err != nil {
		return nil, nil, 0, err
	}
	var version uint64
	if ti.versioned != nil {
		version = ti.versioned.KeysVersion() // before the keys: a change after makes the entry stale
	}
	keys, err := ti.keys.VerificationKeys(ctx, t.KID, t.Alg)
	if err != nil {
		return nil, nil, 0, keyError(err)
	}
	switch {
	case len(keys) == 0:
		return nil, nil, 0, ErrUnknownKey
	case len(keys) > MaxKeysPerToken:
		// A token without kid against a set with many keys of its alg:
		// trying them all would let anyone make each forged token cost
		// as many checks as the set holds.
		return nil, nil, 0, ErrAmbiguousKey
	}
	if !v.verify(jws.Method(t.Alg), t.SigningInput, sig, keys) {
		return nil, nil, 0, ErrSignature
	}
	// Only now, with the signature good, are the claims but "iss" read.
	c, err := v.claims(ti, raw, t.Payload64, "", now)
	return c, ti, version, err
}

// chooseIssuer returns the trusted issuer whose keys may verify a token
// with the claim set raw: the one whose Issuer is its "iss", exactly. The
// "iss" has not been verified, so a refusal reports no fact: it is an
// attacker's word as much as an issuer's.
func (v *Validator) chooseIssuer(raw jws.Claims) (*trustedIssuer, error) {
	iss, err := issuerClaim(raw)
	if err != nil {
		return nil, err
	}
	t, ok := v.issuers[iss]
	if !ok {
		return nil, ErrIssuer
	}
	return t, nil
}
