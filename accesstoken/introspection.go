package accesstoken

import (
	"context"
	"crypto"
	"errors"
	"net/http"
	"time"
)

// Introspection says how a Validator asks its issuer about the tokens it
// does not check with keys: at the issuer's RFC 7662 introspection
// endpoint, with this API's credentials, or in the same process (Local).
// With Config.Keys, those are the opaque (reference) tokens, and a token
// shaped like a JWT (three dot-separated parts) is checked with the keys;
// without Keys, every token is introspected. ClientID and a credential
// (ClientSecret or Key) are required, unless Unauthenticated (and for the
// credential, Local).
//
// An active answer is reused until the earlier of the token's exp and
// CacheMaxAge; an inactive one for InactiveCacheMaxAge. Concurrent
// validations of one token share one call. The answer's claims are
// checked as a JWT's are (exp, nbf, iat with leeway, aud, cnf, the scope
// claim), so that both kinds of token give the same Claims and the same
// refusals. A call that fails refuses the token with
// ErrIntrospectionUnavailable, never lets it through.
//
// An active answer is taken only if it may be about an access token, and
// refused ("type") if it may be about another kind, a refresh token above
// all, which lives for weeks. ORY Hydra's "token_use" must be
// "access_token". "token_type" must name an access token's scheme
// ("Bearer", "DPoP", "PoP") or an access token ("access_token" as
// IdentityServer writes it, RFC 8693's URN of it, "client_credentials" as
// oidc-provider before v4 did, "access"): any other name is refused,
// whether it names a refresh token ("refresh_token", "Refresh", RFC 8693's
// URN, ...) or a kind not known here, which is logged. Keycloak's "typ"
// must not name another kind ("Refresh", "Offline", "ID",
// "refresh_token", ...). Names are compared without regard to case, "_"
// or "-".
//
// token_type is held to an allow-list because the names of the other
// kinds are many, and one missed would let a refresh token in silently,
// while an access token's are few, and one missed refuses that server's
// every token at once, with the name in the log. "typ", no standard's
// member, may hold a JWT's own typ ("at+jwt", "JWT"), and is held to the
// list of the other kinds instead.
//
// Config.Audience is also what refuses a refresh token where the
// endpoint's answer does not say what kind of token it describes: panva's
// oidc-provider and Spring Authorization Server leave "token_type" out of
// a refresh token's answer, and give it no "aud": Audience refuses it,
// AnyAudience lets it through as an access token. With Authlib, the
// answer is what the server's own code writes.
type Introspection struct {
	// Endpoint is the introspection endpoint's URL, such as
	// "https://host/ids/connect/introspect". Empty means the one the
	// issuer's discovery document names ("introspection_endpoint"). A
	// URL with userinfo ("user:password@") is refused, there too: the
	// credentials are ClientID and ClientSecret.
	Endpoint string
	// ClientID is the API's name at the issuer (IdentityServer's
	// ApiResource name).
	ClientID string
	// ClientSecret is the API's secret, sent with HTTP Basic.
	ClientSecret string
	// Key, instead of ClientSecret, signs a private_key_jwt assertion
	// (RFC 7523) for each call, its audience the issuer; KeyID is its
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
	// without it, an Introspection with neither ClientSecret nor Key is
	// refused, and it cannot be combined with them or with Local. The
	// answers are trusted as they come, so the way to the endpoint must be
	// one nobody else can answer on: TLS to it, or a network of your own.
	Unauthenticated bool

	// CacheMaxAge bounds how long an active answer is reused, and so how
	// long a revoked token keeps working here: until the earlier of its
	// exp and CacheMaxAge after the answer. Zero means one minute.
	CacheMaxAge time.Duration
	// InactiveCacheMaxAge is how long an inactive answer is reused, so
	// that a client retrying a dead token costs one call. Zero means 10
	// seconds; negative, never.
	InactiveCacheMaxAge time.Duration
	// CacheBytes is the memory of the reused answers, active and inactive
	// apart (three quarters and a quarter), counted at the most an entry
	// may cost, about 3.7 KiB: a token over 128 bytes (a JWT) is cached
	// under its SHA-256, and an answer over 1 KiB is not cached. Zero
	// means 16 MiB (about 4,400 answers); negative turns the cache off.
	CacheBytes int
	// MaxConcurrent bounds the calls in flight at once; more wait for a
	// slot, up to Timeout (a call, once started, is shared by every
	// request about its token, and ends at Timeout whatever any of them
	// does). Zero means 64.
	MaxConcurrent int
	// Timeout bounds each call, and the discovery of Endpoint. Zero means
	// 10 seconds.
	Timeout time.Duration
	// HTTPClient makes the calls (its Transport); nil means
	// http.DefaultTransport. Calls never follow a redirect: the
	// credentials go to Endpoint only.
	HTTPClient *http.Client
}

// LocalIntrospector answers token introspection in the same process, as
// the endpoint would answer the API resource api: the RFC 7662 answer as
// JSON. *issuer.Issuer is one.
type LocalIntrospector interface {
	IntrospectToken(ctx context.Context, api, token string) ([]byte, error)
}

// maxReferenceSize is the longest token introspected when
// Config.MaxTokenSize is zero: reference tokens are short, 43 characters
// from this module's issuer and 66 from IdentityServer.
const maxReferenceSize = 512

// maxAnswer bounds what is read of an introspection answer. Only answers
// of at most maxCachedAnswer are cached, under the token when it is of at
// most maxCachedReference bytes, else under its SHA-256, so that an
// entry's size is bounded, and the cache in bytes.
const (
	maxAnswer          = 64 << 10
	maxCachedAnswer    = 1 << 10
	maxCachedReference = 128
)

// introspectionEntryBytes is the most one cached answer costs: a cache
// entry (cacheEntryOverhead, with the Claims), the token, the answer's
// base64url (kept for Claims.Decode) and the claims' strings read from it.
const introspectionEntryBytes = cacheEntryOverhead + maxCachedReference + 3*maxCachedAnswer

// check returns what is wrong with i, or nil.
func (i *Introspection) check() error {
	switch {
	case i.ClientID == "" && !i.Unauthenticated:
		return errors.New("accesstoken: Config.Introspection.ClientID is required (the API's name at the issuer)")
	case i.Unauthenticated && (i.ClientSecret != "" || i.Key != nil || i.Local != nil):
		return errors.New("accesstoken: Config.Introspection: Unauthenticated sends no credential: ClientSecret, Key and Local do not apply")
	case i.Local == nil && i.ClientSecret == "" && i.Key == nil && !i.Unauthenticated:
		return errors.New("accesstoken: Config.Introspection needs ClientSecret or Key (or Local; or Unauthenticated, for an endpoint that takes no client authentication)")
	case i.ClientSecret != "" && i.Key != nil:
		return errors.New("accesstoken: Config.Introspection: set ClientSecret or Key, not both")
	case i.Local != nil && (i.Endpoint != "" || i.ClientSecret != "" || i.Key != nil || i.HTTPClient != nil):
		return errors.New("accesstoken: Config.Introspection: Local answers in process: Endpoint, ClientSecret, Key and HTTPClient do not apply")
	case i.Timeout < 0 || i.CacheMaxAge < 0 || i.MaxConcurrent < 0:
		return errors.New("accesstoken: Config.Introspection: a negative Timeout, CacheMaxAge or MaxConcurrent")
	case i.Endpoint != "":
		return checkURL("Config.Introspection.Endpoint", i.Endpoint)
	}
	return nil
}
