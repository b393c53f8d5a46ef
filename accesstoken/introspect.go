package accesstoken

import (
	"cmp"
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/observe"
)

// Defaults of an IntrospectorConfig.
const (
	// DefaultIntrospectionMaxAge bounds how long an active answer is
	// reused: the longest a revoked token keeps working.
	DefaultIntrospectionMaxAge = time.Minute
	// DefaultIntrospectionInactiveMaxAge is how long an inactive answer is reused.
	DefaultIntrospectionInactiveMaxAge = 10 * time.Second
	// DefaultIntrospectionCacheBytes is the memory of the answers reused.
	DefaultIntrospectionCacheBytes = 16 << 20
	// DefaultMaxConcurrentIntrospections bounds the introspection calls
	// in flight at once.
	DefaultMaxConcurrentIntrospections = 64
)

// MaxIntrospectedTokenLength is the longest opaque token an Introspector sends
// to its endpoint: longer ones fail with ErrTooLarge and cost no call.
// Reference tokens are short: 43 characters from this module's issuer,
// 66 from IdentityServer.
const MaxIntrospectedTokenLength = 512

// maxAnswer bounds what is read of an introspection answer. Only tokens
// of at most maxCachedReference bytes with answers of at most
// maxCachedAnswer are cached, so that an entry's size is bounded, and the
// cache in bytes.
const (
	maxAnswer          = 64 << 10
	maxCachedAnswer    = 1 << 10
	maxCachedReference = 128
)

// introspectionEntryBytes is the most one cached answer costs: a cache
// entry (cacheEntryOverhead, with the Claims), the token, the answer's
// base64url (kept for Claims.Decode) and the claims' strings read from it.
const introspectionEntryBytes = cacheEntryOverhead + maxCachedReference + 3*maxCachedAnswer

// ErrInactive is the reason of a token the introspection endpoint says is
// not active: unknown, expired, revoked, or not for this API.
var ErrInactive = errors.New("token is not active")

// ErrIntrospectionUnavailable is the reason of a token that could not be
// introspected: the endpoint was down, slow, or answered what is not an
// introspection answer. The token is refused (401 invalid_token), never
// let through; the log says why.
var ErrIntrospectionUnavailable = errors.New("token introspection unavailable")

// LocalIntrospector answers token introspection in the same process, as
// the endpoint would answer the API resource api: the RFC 7662 answer as
// JSON. *issuer.Issuer is one.
type LocalIntrospector interface {
	IntrospectToken(ctx context.Context, api, token string) ([]byte, error)
}

// IntrospectorConfig configures an Introspector. Issuer is required, and
// so is Audience unless AnyAudience; so are ClientID and a credential
// (ClientSecret or Key) unless Local or Unauthenticated is set.
type IntrospectorConfig struct {
	// Issuer is the issuer whose tokens are introspected: an answer's
	// "iss", when it has one, must be it. When Endpoint and Local are
	// empty, the endpoint is read from its discovery document
	// ("introspection_endpoint").
	Issuer string
	// Endpoint is the introspection endpoint's URL, such as
	// "https://host/ids/connect/introspect".
	Endpoint string
	// ClientID is the API's name at the issuer (IdentityServer's
	// ApiResource name).
	ClientID string
	// ClientSecret is the API's secret, sent with HTTP Basic.
	ClientSecret string
	// Key, instead of ClientSecret, signs a private_key_jwt assertion
	// (RFC 7523) for each call, its audience the Issuer; KeyID is its
	// "kid" (empty: the key's RFC 7638 thumbprint), KeyAlg its algorithm
	// ("ES256", "RS256", "PS256" or "EdDSA"; empty: the one that fits the
	// key, RS256 for RSA).
	Key    crypto.Signer
	KeyID  string
	KeyAlg string
	// Local, when set, answers in the same process (an *issuer.Issuer):
	// nothing goes on the wire and no credential is needed. It cannot be
	// combined with Endpoint, ClientSecret, Key or HTTPClient.
	Local LocalIntrospector
	// Unauthenticated calls an endpoint that takes no client
	// authentication, such as ORY Hydra's admin introspection
	// (/admin/oauth2/introspect) on a private network: no Authorization
	// header and no secret or assertion in the form; ClientID, when set,
	// is sent as client_id (RFC 6749 §2.3's "none"). It must be said:
	// without it, a config with neither ClientSecret nor Key is refused,
	// and it cannot be combined with them or with Local. The answers are
	// trusted as they come, so the way to the endpoint must be one nobody
	// else can answer on: TLS to it, or a network of your own.
	Unauthenticated bool

	// Audience and AnyAudience: as in Config. An answer's "aud"
	// must hold one of Audience.
	//
	// It is also what refuses a refresh token where the endpoint's answer
	// does not say what kind of token it describes (an answer that says so
	// is checked: see Introspector). panva's oidc-provider and Spring
	// Authorization Server leave "token_type" out of a refresh token's
	// answer, and both give it no "aud": Audience refuses it, AnyAudience
	// lets it through as an access token. With Authlib, the answer is
	// what the server's own code writes.
	Audience    []string
	AnyAudience bool

	// CacheMaxAge bounds how long an active answer is reused, and so how long
	// a revoked token keeps working here: until the earlier of its exp
	// and CacheMaxAge after the answer. Zero means DefaultIntrospectionMaxAge.
	CacheMaxAge time.Duration
	// InactiveCacheMaxAge is how long an inactive answer is reused, so that a
	// client retrying a dead token costs one call. Zero means
	// DefaultIntrospectionInactiveMaxAge; negative, never.
	InactiveCacheMaxAge time.Duration
	// CacheBytes is the memory of the reused answers, active and inactive
	// apart (three quarters and a quarter), counted at the most an entry
	// may cost, about 3.7 KiB: tokens over 128 bytes and answers over
	// 1 KiB are not cached. Zero means DefaultIntrospectionCacheBytes
	// (16 MiB: about 4,400 answers); negative turns the cache off.
	CacheBytes int
	// MaxConcurrent bounds the calls in flight at once; more wait for a
	// slot, up to FetchTimeout (a call, once started, is shared by every
	// request about its token, and ends at FetchTimeout whatever any of
	// them does). Zero means DefaultMaxConcurrentIntrospections.
	MaxConcurrent int
	// FetchTimeout bounds each call. Zero means defaultTimeout.
	FetchTimeout time.Duration
	// HTTPClient makes the calls (its Transport); nil means
	// http.DefaultTransport. Calls never follow a redirect: the
	// credentials go to Endpoint only.
	HTTPClient *http.Client
	// MaxTokenLength is the longest token sent to the endpoint; a longer
	// one fails with ErrTooLarge and costs no call. Zero means
	// MaxIntrospectedTokenLength, for reference tokens; a JWT (to a
	// command that introspects anything) needs DefaultMaxTokenSize.
	MaxTokenLength int
	// Leeway and AllowBoundTokens: as in Config.
	Leeway           time.Duration
	AllowBoundTokens bool
	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time
	// Logger gets a line for each call that failed. Nil logs nothing.
	Logger *slog.Logger
	// Observer gets a ValidationSucceeded or ValidationFailed event for
	// every token, as a Validator's. Nil sends none.
	Observer observe.Observer
}

// Introspector is a TokenValidator for opaque (reference) tokens: it asks
// an RFC 7662 introspection endpoint about each one, with the API's
// credentials, and reuses the answers. It is safe for concurrent use.
//
// An active answer is reused until the earlier of the token's exp and
// CacheMaxAge; an inactive one for InactiveCacheMaxAge. Concurrent validations of
// one token share one call. The answer's claims are checked as a JWT's
// are (exp, nbf, iat with leeway, aud, no cnf, the scope claim), so that
// both kinds of token give the same Claims and the same 401 and 403
// answers. An active answer that says it is about another kind of token
// than an access token (a refresh token: ORY Hydra's "token_use",
// IdentityServer's and RFC 8693's names in "token_type", Keycloak's
// "typ") is refused with ErrType: a refresh token lives for weeks. A
// call that fails refuses the token with ErrIntrospectionUnavailable.
//
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
type Introspector struct {
	from     *trustedIssuer // the issuer and audience; its version never changes
	rules    *Validator     // leeway, bound tokens, observer
	endpoint string
	clientID string
	secret   string
	noAuth   bool // Unauthenticated
	signer   *clientauth.Signer
	local    LocalIntrospector
	client   *http.Client

	active, inactive *tokenCache // nil when off
	inactiveAge      time.Duration
	flights          flights
	slots            chan struct{}
	timeout          time.Duration
	maxToken         int
	logger           *slog.Logger
}

// NewIntrospector returns an Introspector for cfg. Without Endpoint or
// Local it reads the endpoint from the issuer's discovery document, and
// fails if it cannot.
func NewIntrospector(ctx context.Context, cfg IntrospectorConfig) (*Introspector, error) {
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("accesstoken: IntrospectorConfig.Issuer is required")
	case cfg.ClientID == "" && !cfg.Unauthenticated:
		return nil, errors.New("accesstoken: IntrospectorConfig.ClientID is required (the API's name at the issuer)")
	case len(cfg.Audience) == 0 && !cfg.AnyAudience:
		return nil, errors.New("accesstoken: IntrospectorConfig.Audience is required (or set AnyAudience)")
	case len(cfg.Audience) > 0 && cfg.AnyAudience:
		return nil, errors.New("accesstoken: IntrospectorConfig: set Audience or AnyAudience, not both")
	case cfg.Unauthenticated && (cfg.ClientSecret != "" || cfg.Key != nil || cfg.Local != nil):
		return nil, errors.New("accesstoken: IntrospectorConfig: Unauthenticated sends no credential: ClientSecret, Key and Local do not apply")
	case cfg.Local == nil && cfg.ClientSecret == "" && cfg.Key == nil && !cfg.Unauthenticated:
		return nil, errors.New("accesstoken: IntrospectorConfig needs ClientSecret or Key (or Local; or Unauthenticated, for an endpoint that takes no client authentication)")
	case cfg.ClientSecret != "" && cfg.Key != nil:
		return nil, errors.New("accesstoken: IntrospectorConfig: set ClientSecret or Key, not both")
	case cfg.Local != nil && (cfg.Endpoint != "" || cfg.ClientSecret != "" || cfg.Key != nil || cfg.HTTPClient != nil):
		return nil, errors.New("accesstoken: IntrospectorConfig: Local answers in process: Endpoint, ClientSecret, Key and HTTPClient do not apply")
	case cfg.FetchTimeout < 0 || cfg.CacheMaxAge < 0 || cfg.MaxConcurrent < 0 || cfg.MaxTokenLength < 0:
		return nil, errors.New("accesstoken: IntrospectorConfig: a negative FetchTimeout, CacheMaxAge, MaxConcurrent or MaxTokenLength")
	}
	in := &Introspector{
		from:     &trustedIssuer{issuer: cfg.Issuer, audience: cfg.Audience, versioned: constantVersion{}},
		rules:    &Validator{allowBound: cfg.AllowBoundTokens, leeway: leewayOf(cfg.Leeway), observer: cfg.Observer, now: cfg.Now},
		endpoint: cfg.Endpoint,
		clientID: cfg.ClientID,
		secret:   cfg.ClientSecret,
		noAuth:   cfg.Unauthenticated,
		local:    cfg.Local,
		timeout:  cfg.FetchTimeout,
		maxToken: cmp.Or(cfg.MaxTokenLength, MaxIntrospectedTokenLength),
		logger:   cfg.Logger,
	}
	if in.rules.now == nil {
		in.rules.now = time.Now
	}
	if in.timeout == 0 {
		in.timeout = defaultTimeout
	}
	in.slots = make(chan struct{}, cmp.Or(cfg.MaxConcurrent, DefaultMaxConcurrentIntrospections))
	if cfg.CacheBytes >= 0 {
		size := cmp.Or(cfg.CacheBytes, DefaultIntrospectionCacheBytes) / introspectionEntryBytes
		in.active = newTokenCache(max(1, size*3/4), cmp.Or(cfg.CacheMaxAge, DefaultIntrospectionMaxAge))
		in.inactiveAge = cfg.InactiveCacheMaxAge
		if in.inactiveAge == 0 {
			in.inactiveAge = DefaultIntrospectionInactiveMaxAge
		}
		if in.inactiveAge > 0 {
			in.inactive = newTokenCache(max(1, size/4), in.inactiveAge)
		}
	}
	if in.local != nil {
		return in, nil
	}
	in.client = clientauth.RefuseRedirects(limitedClient(cfg.HTTPClient, in.timeout))
	if cfg.Key != nil {
		s, err := clientauth.NewSigner(cfg.Key, cfg.KeyAlg, cfg.KeyID)
		if err != nil {
			return nil, fmt.Errorf("accesstoken: IntrospectorConfig.Key: %w", err)
		}
		in.signer = s
	}
	if in.endpoint == "" {
		doc, err := discoverDocument(ctx, limitedClient(cfg.HTTPClient, in.timeout), cfg.Issuer)
		if err != nil {
			return nil, err
		}
		if doc.IntrospectionEndpoint == "" {
			return nil, fmt.Errorf("accesstoken: discovery: %s names no introspection_endpoint", cfg.Issuer)
		}
		in.endpoint = doc.IntrospectionEndpoint
	}
	return in, nil
}

// leewayOf is Config.Leeway's rule: zero means 30 seconds,
// negative none.
func leewayOf(l time.Duration) time.Duration {
	switch {
	case l == 0:
		return 30 * time.Second
	case l < 0:
		return 0
	}
	return l
}

// constantVersion is the key version of an Introspector's answers, which
// no key change makes stale.
type constantVersion struct{ KeySource }

func (constantVersion) KeysVersion() uint64 { return 0 }

// inactiveClaims marks an inactive answer in the cache.
var inactiveClaims = &Claims{}

// Validate introspects token, or reuses an answer about it.
func (in *Introspector) Validate(ctx context.Context, token string) (*Claims, error) {
	v := in.rules
	start := v.startTimer()
	switch {
	case len(token) > in.maxToken:
		return nil, v.failed(ctx, start, refused(ErrTooLarge))
	case token == "":
		return nil, v.failed(ctx, start, refused(ErrMalformed))
	}
	now := v.now()
	if c, hit, err := v.fromCache(ctx, in.active, token, now, start); hit {
		return c, err
	}
	if in.inactive != nil {
		if _, ok := in.inactive.get(token, now); ok {
			return nil, v.failed(ctx, start, refused(ErrInactive))
		}
	}
	c, err := in.flights.do(token, func() (*Claims, error) { return in.call(ctx, token) })
	if err == nil {
		err = v.binding(ctx, c)
	}
	if err != nil {
		if _, ok := err.(*ValidationError); !ok {
			err = refused(err)
		}
		return nil, v.failed(ctx, start, err)
	}
	v.succeeded(ctx, start, false)
	return c, nil
}

// call asks the endpoint about token, checks the answer, and caches it.
func (in *Introspector) call(ctx context.Context, token string) (*Claims, error) {
	// The callers who share this call wait for it: the first one's
	// cancellation does not end it, FetchTimeout does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.timeout)
	defer cancel()
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		in.log(ctx, "no call slot freed in time", ctx.Err())
		return nil, ErrIntrospectionUnavailable
	}
	answer, err := in.ask(ctx, token)
	if err != nil {
		in.log(ctx, "the call failed", err)
		return nil, ErrIntrospectionUnavailable
	}
	raw, err := jws.ReadClaims(answer)
	if err != nil {
		in.log(ctx, "the answer is not a JSON object, or names a member twice", err)
		return nil, ErrIntrospectionUnavailable
	}
	a, _ := raw.Raw("active")
	active := string(a) == "true"
	if !active && string(a) != "false" {
		in.log(ctx, `the answer has no boolean "active"`, nil)
		return nil, ErrIntrospectionUnavailable
	}
	now := in.rules.now()
	cacheable := len(token) <= maxCachedReference && len(answer) <= maxCachedAnswer
	token = strings.Clone(token) // the caches keep it
	if !active {
		if in.inactive != nil && cacheable {
			in.inactive.put(token, inactiveClaims, now, now.Add(in.inactiveAge), in.from, 0)
		}
		return nil, ErrInactive
	}
	if !describesAccessToken(raw) {
		return nil, ErrType // a refresh token, say; not cached: a retry costs a call, as an unknown token's first does
	}
	// RFC 7662 makes "iss" optional: without it, the issuer asked.
	c, err := in.rules.claims(in.from, raw, base64.RawURLEncoding.EncodeToString(answer), in.from.issuer, now)
	if err != nil {
		return nil, err
	}
	if in.active != nil && cacheable {
		in.active.put(token, c, now, c.ExpiresAt.Add(in.rules.leeway), in.from, 0)
	}
	return c, nil
}

// ask returns the endpoint's answer about token.
func (in *Introspector) ask(ctx context.Context, token string) ([]byte, error) {
	if in.local != nil {
		return in.local.IntrospectToken(ctx, in.clientID, token)
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	switch {
	case in.noAuth:
		if in.clientID != "" {
			form.Set("client_id", in.clientID)
		}
	case in.signer != nil:
		// Its audience is the issuer, which IdentityServer and this
		// module's issuer accept at every endpoint.
		assertion, err := in.signer.Assertion(in.clientID, in.from.issuer, time.Now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", in.clientID)
		form.Set("client_assertion_type", clientauth.AssertionType)
		form.Set("client_assertion", assertion)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.signer == nil && !in.noAuth {
		req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.secret)) // RFC 6749 §2.3.1
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return nil, err
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("the endpoint answered %s", resp.Status)
	case len(body) > maxAnswer:
		return nil, fmt.Errorf("the answer is longer than %d bytes", maxAnswer)
	}
	return body, nil
}

// log records why a call failed, without the token.
func (in *Introspector) log(ctx context.Context, what string, err error) {
	if in.logger == nil {
		return
	}
	attrs := []slog.Attr{slog.String("endpoint", in.endpoint)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	in.logger.LogAttrs(ctx, slog.LevelWarn, "idsauth: token introspection: "+what, attrs...)
}
