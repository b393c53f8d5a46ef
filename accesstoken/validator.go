package accesstoken

import (
	"cmp"
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
)

// maxTokenSize is the longest token read when Config.MaxTokenSize is
// zero.
const maxTokenSize = 16 << 10

// Validator decides whether access tokens are good: JWTs ([RFC 9068])
// checked with their issuer's keys, and, with Config.Introspection,
// opaque tokens asked about at the issuer ([RFC 7662]); both kinds give
// the same Claims and the same refusals. It is safe for concurrent use.
// The key sets New fetches itself are refreshed by goroutines that end
// when the context given to New ends.
//
// [RFC 9068]: https://www.rfc-editor.org/rfc/rfc9068
// [RFC 7662]: https://www.rfc-editor.org/rfc/rfc7662
type Validator struct {
	checks                                // of every token's claims, whichever its kind
	issuers     map[string]*trustedIssuer // by exact "iss": Issuer alone, or each of Issuers
	allowed     map[string]bool
	requireType bool
	maxSize     int
	cache       *tokenCache   // nil when off, and when no issuer's keys have a version
	in          *introspector // nil without Config.Introspection
	sigChecks   atomic.Uint64 // signature checks made: counted, for tests
}

// New returns a Validator for cfg. An issuer without Keys gets the JWKS
// its discovery document names (see NewJWKS): the discovery is done, and
// the key set fetched once, before New returns; if that fetch fails New
// still returns, validation fails with ErrKeysUnavailable, and the keys
// are fetched again on the refresh interval and, rate limited, when a
// token names a key it does not know. A failed discovery is an error,
// since without it there is no URL to fetch keys from, and so is a
// config without an Issuer, without an Audience (unless AnyAudience), or
// with an algorithm New refuses. With Issuers, all of this holds for
// each issuer, two issuers with the same Issuer are an error too, and on
// any error the JWKS fetched for the issuers before it are not
// refreshed.
func New(ctx context.Context, cfg Config) (*Validator, error) {
	list, err := cfg.issuerList()
	if err != nil {
		return nil, err
	}
	if cfg.MaxTokenSize < 0 {
		return nil, errors.New("accesstoken: Config.MaxTokenSize is negative")
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = jws.Algorithms
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
	v := &Validator{
		checks:      newChecks(&cfg),
		allowed:     allowed,
		requireType: cfg.RequireType,
		maxSize:     cmp.Or(cfg.MaxTokenSize, maxTokenSize),
		issuers:     make(map[string]*trustedIssuer, len(list)),
	}
	// An error ends the refreshes of the issuers set up before it.
	ctx, cancel := context.WithCancel(ctx)
	made := false
	defer func() {
		if !made {
			cancel()
		}
	}()
	versioned := false // some issuer's keys have a version
	for _, ti := range list {
		src := ti.Keys
		switch {
		case src == nil && cfg.Introspection != nil:
			continue // every token is introspected
		case src == nil:
			if src, err = NewJWKS(ctx, JWKSConfig{Issuer: ti.Issuer, Logger: cfg.Logger, Observer: cfg.Observer}); err != nil {
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
		v.cache = newTokenCache(cmp.Or(cfg.CacheSize, 10000), cmp.Or(max(0, cfg.CacheMaxAge), 5*time.Minute))
	}
	if cfg.Introspection != nil {
		// An opaque token names no issuer: the one of Config.Issuer.
		from := &trustedIssuer{issuer: cfg.Issuer, audience: cfg.Audience, versioned: constantVersion{}}
		if v.in, err = newIntrospector(ctx, cfg.Introspection, &v.checks, from, cmp.Or(cfg.MaxTokenSize, maxReferenceSize), v.maxSize, cfg.Logger); err != nil {
			return nil, err
		}
	}
	made = true
	return v, nil
}

// Validate checks a raw access token presented as p (the zero
// Presentation: a bearer token); a transport calls it through Decide. A
// token Keys cannot check (every token, with Introspection and no Keys;
// else one not shaped as a JWT, with Introspection) is introspected: see
// Introspection. A JWT is checked in this order: its size, its form, its
// header (alg on the allow-list, typ, no crit), its issuer, its
// signature, and only then its other claims: each registered claim of the
// right JSON type (names matched exactly, NumericDates as JSON numbers),
// the binding ("cnf") p needs (see Presentation and
// Config.AllowBoundTokens), exp/nbf/iat with leeway, aud, and the scope
// claim. On failure it
// returns a *ValidationError, whose Code says why.
//
// The issuer is the one trusted issuer (Config.Issuer, or one of
// Issuers) whose name is the payload's "iss", exactly; it is found before
// the signature is checked, since only its keys may check it (see
// TrustedIssuer). A payload that is not a JSON object, or whose "iss" is
// not a string, is refused as malformed, and an "iss" of no trusted
// issuer as "issuer", before any key is looked up: such a token never
// causes a fetch, nor spends the unknown-kid limit that the trusted
// issuer's new keys need.
func (v *Validator) Validate(ctx context.Context, token string, p Presentation) (*Claims, error) {
	if v.in != nil && (len(v.issuers) == 0 || strings.Count(token, ".") != 2) {
		return v.in.validate(ctx, token, p)
	}
	start := v.startTimer()
	if len(token) > v.maxSize {
		return nil, v.failed(ctx, start, refused(errTooLarge))
	}
	now := v.now()
	if c, hit, err := v.fromCache(ctx, v.cache, token, p, now, start); hit {
		return c, err
	}
	c, t, keys, err := v.validate(ctx, token, now)
	if err == nil {
		err = v.binding(p, c)
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
		v.cache.put(token, c, now, c.ExpiresAt.Add(v.leeway), t.versioned, keys)
	}
	v.succeeded(ctx, start, false)
	return c, nil
}

// validate is Validate without the cache. It returns the issuer that
// accepted the token and the version of its keys read before they were.
func (v *Validator) validate(ctx context.Context, token string, now time.Time) (*Claims, *trustedIssuer, uint64, error) {
	t, err := jws.Parse(token)
	if err != nil {
		return nil, nil, 0, errMalformed
	}
	if err := v.checkHeader(t); err != nil {
		return nil, nil, 0, err
	}
	sig, err := t.Signature()
	if err != nil {
		return nil, nil, 0, errMalformed
	}
	payload, err := t.Payload()
	if err != nil {
		return nil, nil, 0, errMalformed
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
		return nil, nil, 0, errAmbiguousKey
	}
	if !v.verify(t.Alg, t.SigningInput, sig, keys) {
		return nil, nil, 0, errSignature
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
		return nil, errIssuer
	}
	return t, nil
}

// verify reports whether sig, of alg, signs signingInput under any of
// keys.
func (v *Validator) verify(alg, signingInput string, sig []byte, keys []crypto.PublicKey) bool {
	for _, k := range keys {
		v.sigChecks.Add(1)
		if jws.Verify(alg, signingInput, sig, k) == nil {
			return true
		}
	}
	return false
}

// checkHeader checks what the validator requires of a token's header:
// an "alg" on the allow-list, no "crit", and a "typ" of an access token
// (or none, unless RequireType).
func (v *Validator) checkHeader(t *jws.Token) error {
	if !v.allowed[t.Alg] {
		return errAlgorithm
	}
	if t.Has("crit") {
		return errCritical
	}
	typ, present, err := t.String("typ")
	switch {
	case !present:
		if v.requireType {
			return errType
		}
		return nil
	case err != nil:
		return errType
	}
	if !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") && !strings.EqualFold(typ, "JWT") {
		return errType
	}
	return nil
}
