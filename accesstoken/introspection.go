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
// all, which lives for weeks; where the answer does not say, Config.Audience
// refuses it. Which members are read, and which servers write what:
// docs/RESOURCE-SERVER.md, "Refresh tokens are refused".
type Introspection struct {
	// Endpoint is the introspection endpoint's URL. Empty means the
	// discovery document's "introspection_endpoint". A URL with userinfo
	// is refused, there too: the credentials are ClientID and ClientSecret.
	Endpoint string
	// ClientID is the API's name at the issuer (IdentityServer's
	// ApiResource name).
	ClientID string
	// ClientSecret is the API's secret, sent with HTTP Basic.
	ClientSecret string
	// Key, instead of ClientSecret, signs a private_key_jwt assertion for
	// each call; KeyID is its "kid" (empty: the RFC 7638 thumbprint), KeyAlg
	// its "alg" (empty: the key's). See docs/RESOURCE-SERVER.md.
	Key    crypto.Signer
	KeyID  string
	KeyAlg string
	// Local, when set, answers in the same process (an *issuer.Issuer):
	// nothing goes on the wire and no credential is needed. It cannot be
	// combined with Endpoint, ClientSecret, Key or HTTPClient.
	Local LocalIntrospector
	// Unauthenticated calls an endpoint that takes no client
	// authentication (ClientID, if set, goes as client_id); not with
	// ClientSecret, Key or Local. See docs/RESOURCE-SERVER.md.
	Unauthenticated bool

	// CacheMaxAge bounds how long an active answer is reused, and so how
	// long a revoked token keeps working here: until the earlier of its
	// exp and CacheMaxAge after the answer. Zero means one minute.
	CacheMaxAge time.Duration
	// InactiveCacheMaxAge is how long an inactive answer is reused, so
	// that a client retrying a dead token costs one call. Zero means 10
	// seconds; negative, never.
	InactiveCacheMaxAge time.Duration
	// CacheBytes is the memory of the reused answers, counted at about
	// 3.7 KiB an entry. Zero means 16 MiB (about 4,400 answers); negative
	// turns the cache off.
	CacheBytes int
	// MaxConcurrent bounds the calls in flight at once; more wait for a
	// slot, up to Timeout. Zero means 64.
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
