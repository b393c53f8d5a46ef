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
	// "admin-api". Elsewhere: Keycloak puts what an audience mapper adds
	// to the client's scope ("account" without one); Auth0 the API's
	// identifier; Microsoft Entra the API's Application ID URI or client
	// ID; Okta's default server "api://default". New refuses an empty
	// Audience unless AnyAudience is set.
	Audience []string

	// AnyAudience accepts a token whatever its "aud" says, or without
	// one. Set it only when every API that trusts this issuer may accept
	// every token it issues (a single resource server, say); it cannot be
	// combined with Audience.
	AnyAudience bool

	// Keys verify the issuer's JWTs: a *JWKS (NewJWKS fetches one, from
	// a URL or by discovery, and keeps it fresh; ParseJWKS reads one
	// given), an *issuer.Issuer in the same process, or a KeySource of
	// your own. Nil means the JWKS that Issuer's discovery document
	// ({Issuer}/.well-known/openid-configuration) names, fetched by
	// NewJWKS with its defaults and this Config's Logger and Observer,
	// and refreshed until the context given to New ends; or, with
	// Introspection, no keys: every token is introspected.
	Keys KeySource

	// Issuers, when set, are the issuers whose tokens are accepted, each
	// with its own audience and keys, in place of Issuer, Audience,
	// AnyAudience and Keys, which must then be empty: during a move from
	// one identity service to another, say. See TrustedIssuer. The other
	// settings apply to every issuer; Introspection does not apply, since
	// an opaque token names no issuer.
	Issuers []TrustedIssuer

	// Introspection, when set, asks the issuer about the tokens Keys do
	// not check (RFC 7662): the opaque (reference) tokens, or, without
	// Keys, every token. Nil: a token that is not a JWT is malformed.
	Introspection *Introspection

	// Algorithms are the accepted "alg" values, among ES256, RS256,
	// PS256, EdDSA and Ed25519 (RFC 9864's name of EdDSA over an Ed25519
	// key), which is what empty means. New refuses any other name:
	// "none", the HMAC algorithms and the rest. The list is matched
	// exactly: "EdDSA" and "Ed25519" are listed apart.
	Algorithms []string

	// Leeway is the clock skew allowed on exp, nbf and iat. Zero means 30
	// seconds; a negative value means none.
	Leeway time.Duration

	// RequireType rejects tokens whose header has no "typ". By default a
	// missing typ is accepted, for issuers that omit it; a typ that is
	// present must always be "at+jwt", "application/at+jwt" or "JWT".
	RequireType bool

	// MaxTokenSize is the longest token, in bytes, that is read at all: a
	// longer one is refused ("too_large") before any decoding or call.
	// Zero means 16 KiB, far above the 0.5 to 2 KiB of real access
	// tokens, and 512 bytes for an opaque token that is introspected:
	// reference tokens are short (43 characters from this module's issuer,
	// 66 from IdentityServer). A JWT introspected (Introspection without
	// Keys) gets the 16 KiB. New refuses a negative value.
	MaxTokenSize int

	// AllowBoundTokens accepts, presented without their proof, tokens
	// that carry a "cnf" claim, which binds them to a key (DPoP, RFC
	// 9449; a client certificate, RFC 8705; RFC 7800). By default such a
	// token is refused ("bound_token"): presented so it is probably
	// stolen, since its holder would prove the key. Set it only if the
	// handler checks the binding itself (the "cnf" claim is in
	// Claims.Raw). A token presented with its proof is another matter
	// (see Presentation), and a certificate-bound token presented with
	// another certificate is refused ("wrong_certificate") whatever this
	// says.
	AllowBoundTokens bool

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
	// cached. The default 10000 entries thus take about 10 MB. With Keys
	// that are not a VersionedKeySource the cache stays off, since it
	// could not follow key removals.
	CacheSize int

	// CacheMaxAge bounds how long a validated token is remembered. Zero
	// means 5 minutes.
	CacheMaxAge time.Duration

	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time

	// Logger receives what fails out of the caller's sight: the refreshes
	// of the JWKS this validator fetches itself (Keys nil), and the
	// introspection calls that fail (never with the token). Nil logs
	// nothing. Refused tokens are not logged here: the caller has them
	// (middleware.BearerConfig.Logger).
	Logger *slog.Logger

	// Observer gets an event for every validation (observe.
	// ValidationSucceeded, from the cache or not, or ValidationFailed with
	// the reason's code) and every fetch of a JWKS this validator fetches
	// itself (observe.KeysFetched or KeysFetchFailed). Nil sends none, at
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

	// Audience is who this service is, as this issuer names it in "aud":
	// IdentityServer puts "{issuer}/resources" with EmitStaticAudienceClaim
	// on and the API resource names (e.g. "admin-api") with it off; this
	// module's issuer puts "{issuer}/resources" by default. Required
	// unless AnyAudience is set.
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
