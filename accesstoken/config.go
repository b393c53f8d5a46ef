package accesstoken

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idsauth/idsauth/observe"
)

// Config configures a Validator (New): which issuer's tokens it accepts,
// for which audience, with which keys, and how strictly. Issuer (or
// Issuers) is required, and so is Audience unless AnyAudience; every
// other zero value is a safe default.
type Config struct {
	// Issuer is the expected "iss" claim, e.g. "https://host/ids". One
	// with userinfo ("user:password@") is refused (see JWKSConfig.URL).
	Issuer string

	// Audience is who this service is, as the issuer writes it in "aud": a
	// token is accepted if its "aud" holds one of these. Required unless
	// AnyAudience; what vendors write: docs/RESOURCE-SERVER.md, Audiences.
	Audience []string

	// AnyAudience accepts a token whatever its "aud" says, or without one;
	// not with Audience. See docs/RESOURCE-SERVER.md, Audiences.
	AnyAudience bool

	// Keys verify the issuer's JWTs: a *JWKS (NewJWKS, ParseJWKS), an
	// *issuer.Issuer, or a KeySource of your own. Nil: the JWKS Issuer's
	// discovery names; with Introspection, none (every token introspected).
	Keys KeySource

	// Issuers, when set, replace Issuer, Audience, AnyAudience and Keys
	// (then empty) by a list, each with its own (TrustedIssuer); the other
	// settings apply to every issuer, and Introspection cannot be set.
	Issuers []TrustedIssuer

	// Introspection, when set, asks the issuer about the tokens Keys do
	// not check (RFC 7662): the opaque (reference) tokens, or, without
	// Keys, every token. Nil: a token that is not a JWT is malformed.
	Introspection *Introspection

	// Algorithms are the accepted "alg" values, matched exactly, among
	// ES256, RS256, PS256, EdDSA and Ed25519 (RFC 9864's EdDSA); empty
	// means all five. New refuses any other name ("none", HMAC...).
	Algorithms []string

	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means 30
	// seconds; a negative value means none.
	Leeway time.Duration

	// RequireType rejects tokens whose header has no "typ". By default a
	// missing typ is accepted, for issuers that omit it; a typ that is
	// present must always be "at+jwt", "application/at+jwt" or "JWT".
	RequireType bool

	// MaxTokenSize is the longest token, in bytes, read at all (longer:
	// "too_large"). Zero means 16 KiB, and 512 bytes for an opaque token
	// that is introspected; New refuses a negative value.
	MaxTokenSize int

	// AllowBoundTokens accepts a token with a "cnf" claim presented
	// without its proof; false refuses it ("bound_token"). Set it only if
	// the handler checks the binding itself: docs/RESOURCE-SERVER.md.
	AllowBoundTokens bool

	// CacheSize is how many validated tokens are remembered, so that the same
	// token seen again skips the signature check: each about 520 bytes plus
	// the token. Zero means 10000; negative turns it off (docs/PERFORMANCE.md).
	CacheSize int

	// CacheMaxAge bounds how long a validated token is remembered. Zero
	// means 5 minutes.
	CacheMaxAge time.Duration

	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time

	// Logger gets what fails out of the caller's sight: refreshes of the
	// JWKS it fetches itself and failed introspection calls, never a token
	// (refusals are BearerConfig.Logger's). Nil logs nothing.
	Logger *slog.Logger

	// Observer gets an event for every validation and every fetch of a
	// JWKS it fetches itself (docs/OBSERVABILITY.md). Nil sends none, at
	// no cost.
	Observer observe.Observer
}

// TrustedIssuer is one of the issuers a Validator accepts tokens from, in
// Config.Issuers: as during a move from the product's IdentityServer to
// this module's issuer, when tokens of both are live. Its fields mean
// what the Config fields of the same names mean, for this issuer alone.
//
// The issuer of a token is the one whose Issuer is the token's "iss",
// byte for byte; its signature is checked with that issuer's keys alone,
// and its "aud" against that issuer's Audience. A token whose "iss" is no
// issuer's is refused ("issuer") before any key is looked up, so it never
// causes a fetch. A Validator of one issuer (Config.Issuer) chooses the
// same way, from a list of one.
//
// To choose the keys, "iss" is read before the signature is checked, and
// that is all that is read: after the size cap (MaxTokenSize) and the
// header checks, the payload is decoded, split into its claims as a JSON
// object (names matched exactly, a name given twice refused), and its
// "iss" alone is decoded to look the issuer up. Nothing else of the
// payload is used until that issuer's key has verified the signature;
// then every claim, "iss" included, is checked. An "iss" that did not
// verify is never reported, in an error or a log line.
//
// The scope claim needs nothing per issuer: a Validator reads both its
// forms, the string of RFC 9068 and IdentityServer's array, and "scp"
// when there is no "scope" (see Claims).
type TrustedIssuer struct {
	// Issuer is the "iss" of this issuer's tokens, e.g.
	// "https://host/ids"; required, unique in the list, and without
	// userinfo ("user:password@").
	Issuer string

	// Audience is who this service is, as this issuer writes it in "aud"
	// (docs/RESOURCE-SERVER.md, Audiences). Required unless AnyAudience.
	Audience []string

	// AnyAudience accepts this issuer's tokens whatever their "aud"
	// says. It cannot be combined with Audience.
	AnyAudience bool

	// Keys verify this issuer's JWTs, as Config.Keys: nil means the JWKS
	// its discovery document names.
	Keys KeySource
}

// issuerList returns the issuers of cfg, Issuer and its fields as a list
// of one when Issuers is empty, or an error naming the first field that
// is wrong.
func (cfg *Config) issuerList() ([]TrustedIssuer, error) {
	list, multi := cfg.Issuers, len(cfg.Issuers) > 0
	if !multi {
		list = []TrustedIssuer{{Issuer: cfg.Issuer, Keys: cfg.Keys, Audience: cfg.Audience, AnyAudience: cfg.AnyAudience}}
	} else if set := cfg.singleIssuerFields(); len(set) > 0 {
		return nil, fmt.Errorf("accesstoken: Config.Issuers cannot be combined with %s, which each of Issuers sets for itself", strings.Join(set, ", "))
	} else if cfg.Introspection != nil {
		return nil, fmt.Errorf("accesstoken: Config.Issuers cannot be combined with Introspection: an opaque token names no issuer to ask")
	}
	seen := make(map[string]int, len(list))
	for i, ti := range list {
		field := "Config."
		if multi {
			field = fmt.Sprintf("Config.Issuers[%d].", i)
		}
		if ti.Issuer == "" {
			return nil, fmt.Errorf("accesstoken: %sIssuer is required", field)
		}
		in := cfg.Introspection
		discovered := (ti.Keys == nil && in == nil) || (in != nil && in.Endpoint == "" && in.Local == nil)
		if err := checkIssuerURL(field+"Issuer", ti.Issuer, discovered); err != nil {
			return nil, err
		}
		if j, dup := seen[ti.Issuer]; dup {
			return nil, fmt.Errorf("accesstoken: %sIssuer %q is Issuers[%d]'s too", field, ti.Issuer, j)
		}
		seen[ti.Issuer] = i
		switch {
		case len(ti.Audience) == 0 && !ti.AnyAudience:
			return nil, fmt.Errorf(`accesstoken: %sAudience is required (RFC 9068 §4): set it to what the issuer puts in "aud" (IdentityServer: "{issuer}/resources" or the API resource names), or set AnyAudience`, field)
		case len(ti.Audience) > 0 && ti.AnyAudience:
			return nil, fmt.Errorf("accesstoken: %sAudience and AnyAudience exclude each other", field)
		}
	}
	return list, nil
}

// singleIssuerFields names the fields of cfg, set, that Issuers replaces.
func (cfg *Config) singleIssuerFields() []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Issuer", cfg.Issuer != ""},
		{"Audience", len(cfg.Audience) > 0},
		{"AnyAudience", cfg.AnyAudience},
		{"Keys", cfg.Keys != nil},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}
