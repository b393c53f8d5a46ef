package issuer

import (
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Config is the issuer's configuration, as read from its JSON file by
// LoadConfig or built in code; docs/IDENTITY-SERVICE.md describes the
// file field by field. A Config is plain data: Validate checks it, and
// New and Reload check it, read its key files and apply it.
type Config struct {
	// Issuer is the issuer URL, e.g. "https://host/ids": the "iss" of every
	// token, and the path prefix the issuer serves under. Required.
	Issuer string `json:"issuer"`

	// Keys are the signing keys. Without times, the first one signs and
	// all are published in the JWKS; with publishAt, signAt and retireAt
	// they rotate on a schedule (see KeyConfig). At least one is
	// required, unless EphemeralKey is set.
	Keys []KeyConfig `json:"keys,omitempty"`

	// EphemeralKey, set with no Keys, makes the issuer sign with an ES256
	// key it generates when it is created (and keeps across reloads):
	// tokens stop validating when the process ends, so it is for
	// development only, and the issuer logs a warning. False requires
	// Keys.
	EphemeralKey bool `json:"ephemeralKey,omitempty"`

	// Clients are the registered clients. None means every token request
	// fails.
	Clients []ClientConfig `json:"clients"`

	// Scopes are scopes of your own that clients and API resources may
	// hold beside the product's two (scope.All()); see checkOwnScopes.
	Scopes []string `json:"scopes,omitempty"`

	// Profile is how the token endpoint answers and shapes its tokens:
	// "rfc" (RFC 6749 §5.2 and RFC 9068, the default) or "identityserver",
	// as the product's IdentityServer 7.4 does, so that its existing
	// clients cannot tell the two apart: every token error is 400 with no
	// WWW-Authenticate (invalid_client too), a request without credentials
	// is invalid_request, one without grant_type unsupported_grant_type,
	// more than one resource invalid_target, a request without scope gets
	// all of the client's scopes (unless scopeWhenOmitted says otherwise);
	// tokens carry scope as an array (unless scopeFormat says otherwise),
	// no sub, a jti of 32 hex digits, and, when the configuration has API
	// resources, as aud the names of those whose scopes the token carries.
	// docs/CONTRACT.md lists each difference.
	Profile string `json:"profile,omitempty"`

	// ScopeFormat is how the scope claim is written: "string" (space
	// delimited, RFC 9068) or "array" (IdentityServer's form). Empty means
	// "string", or "array" with the identityserver profile.
	ScopeFormat string `json:"scopeFormat,omitempty"`

	// JWKSMaxAgeSeconds is the Cache-Control max-age of the JWKS and
	// discovery answers. Zero means 300.
	JWKSMaxAgeSeconds int `json:"jwksMaxAgeSeconds,omitempty"`

	// ValidatorRefreshSeconds is how often the validators of this
	// issuer's tokens fetch its JWKS again (accesstoken.Config.
	// RefreshInterval). A key's signAt must come at least this long plus
	// JWKSMaxAgeSeconds after its publishAt, so that every validator has
	// the key before its first token. Zero means 300, the validator's
	// default.
	ValidatorRefreshSeconds int `json:"validatorRefreshSeconds,omitempty"`

	// Limits bound the token endpoint. The zero value takes the defaults.
	Limits Limits `json:"limits,omitzero"`

	// ScopeWhenOmitted is what a token request without a scope gets, for
	// clients that do not say: "refuse" (400 invalid_scope, the
	// contract's answer) or "all" (every scope the client is allowed, as
	// IdentityServer does). Empty means "refuse", or "all" with the
	// identityserver profile.
	ScopeWhenOmitted string `json:"scopeWhenOmitted,omitempty"`

	// APIResources are the APIs that may introspect tokens at
	// {issuer}/connect/introspect (RFC 7662), each with its name and
	// secret, as IdentityServer registers them: an API sees only the
	// tokens that carry one of its scopes.
	APIResources []APIResourceConfig `json:"apiResources,omitempty"`

	// DPoP configures sender-constrained tokens (RFC 9449). A client that
	// sends a DPoP proof with its token request gets a token bound to the
	// proof's key (cnf.jkt, "token_type": "DPoP"), whatever this says, as
	// IdentityServer does; a client with requireDPoP must. The zero value
	// takes the defaults.
	DPoP DPoPConfig `json:"dpop,omitzero"`

	// ClientAssertions bound the signed assertions of private_key_jwt
	// clients. The zero value takes the defaults.
	ClientAssertions AssertionConfig `json:"clientAssertions,omitzero"`

	// Dir is the folder that relative key file paths are read from, when
	// New or Reload reads them. LoadConfig and ParseConfig set it to the
	// configuration file's folder. Empty means the working directory.
	Dir string `json:"-"`
}

// KeyConfig is one signing key: a PEM file, or a key built in code.
//
// PublishAt, SignAt and RetireAt schedule a rotation, so that every
// replica reading the same file switches at the same instant of its
// clock, without a reload. At an instant t:
//
//   - a key is published (in the JWKS, and accepted by a validator in the
//     same process) from its publishAt (none: since ever) until its
//     retireAt (none: forever), excluded;
//   - among the published keys whose signAt is at or before t (none:
//     since ever), the one with the latest signAt signs; a tie, as
//     between keys without signAt, goes to the one listed first. Keys
//     without times thus keep the rule "the first one signs".
//
// New, Reload and Validate refuse a schedule in which a key signs less
// than ValidatorRefreshSeconds + JWKSMaxAgeSeconds after its publishAt,
// a key retires less than the longest client's AccessTokenLifetime after
// it last signs, no key signs at some instant after the first one does,
// a key signs again after another one took over, or a key's times are
// out of order. New and Reload also refuse one in which no key signs yet
// at the issuer's clock.
type KeyConfig struct {
	// File is a PEM file holding a private key (PKCS #8, SEC 1 or PKCS #1),
	// read by New and Reload. A relative path is read from Config.Dir.
	File string `json:"file,omitempty"`
	// Alg is the signing algorithm: "ES256" (P-256 keys), "RS256" (RSA of
	// 2048 bits or more) or "EdDSA" (Ed25519). Empty means the one that
	// fits the key's type.
	Alg string `json:"alg,omitempty"`
	// Key is the private key itself, for a Config built in code instead
	// of File. Set File or Key, not both.
	Key crypto.Signer `json:"-"`

	// PublishAt is when the key starts to be published, an RFC 3339 time
	// such as "2026-06-01T00:00:00Z". Empty means since ever: the key is
	// taken to be in every validator's copy of the JWKS already, so give
	// a new key a publishAt, and push the file before that instant.
	PublishAt string `json:"publishAt,omitempty"`
	// SignAt is when the key may start signing (RFC 3339). Empty means
	// as soon as it is published, ranked below every key with a signAt.
	SignAt string `json:"signAt,omitempty"`
	// RetireAt is when the key stops being published (RFC 3339): its
	// tokens stop validating. Empty means never.
	RetireAt string `json:"retireAt,omitempty"`
}

// ClientConfig is one registered client.
type ClientConfig struct {
	// ClientID identifies the client. Required and unique, at most
	// MaxClientIDLength characters.
	ClientID string `json:"clientId"`
	// SecretHashes are the hashes of the client's secrets, in the forms of
	// package secret ("sha256:...", "sha512:...", "bcrypt:..."). Several
	// let a secret be rotated without downtime. A plain-text secret is
	// refused. At least one hash or one of PublicKeys is required.
	SecretHashes []string `json:"secretHashes,omitempty"`
	// PublicKeys verify the client's signed assertions (private_key_jwt,
	// RFC 7523 §2.2), beside or instead of secrets. At most
	// MaxClientKeys; several let a key be rotated without downtime.
	PublicKeys []ClientKeyConfig `json:"publicKeys,omitempty"`
	// GrantTypes the client may use. Empty means ["client_credentials"].
	GrantTypes []string `json:"grantTypes,omitempty"`
	// Scopes the client may ask for; at least one, each a scope the
	// service knows (pd_AdminWebApi, pd_ConnectWebApi).
	Scopes []string `json:"scopes"`
	// AccessTokenLifetime in seconds. Zero means 3600; at most
	// MaxAccessTokenLifetime.
	AccessTokenLifetime int `json:"accessTokenLifetime,omitempty"`
	// Audience is the "aud" of the client's tokens. Empty means
	// ["{issuer}/resources"]. A request may narrow it with resource
	// parameters (RFC 8707), each one of these.
	Audience []string `json:"audience,omitempty"`
	// ScopeWhenOmitted overrides Config.ScopeWhenOmitted for this client:
	// "refuse" or "all". Empty means the Config's.
	ScopeWhenOmitted string `json:"scopeWhenOmitted,omitempty"`
	// Claims are added to the client's tokens, each as "client_" and its
	// Type (IdentityServer's client claims): {"type": "tenant", "value":
	// "acme"} gives "client_tenant": "acme"; several of one type give an
	// array. Types are letters, digits, "_", "-" and "."; "id" is taken.
	Claims []ClientClaim `json:"claims,omitempty"`
	// RequireDPoP refuses the client's token requests that carry no DPoP
	// proof (400 invalid_request): its tokens are always bound to a key.
	RequireDPoP bool `json:"requireDPoP,omitempty"`
	// AccessTokenType is the kind of the client's access tokens: "jwt"
	// (the default), signed and checked by any validator with the JWKS,
	// or "reference", an opaque handle that an API checks at the
	// introspection endpoint and that the client can revoke at
	// {issuer}/connect/revocation (RFC 7009), with effect at the next
	// check. The issuer keeps a reference token's grant in its token
	// store (WithTokenStore), under the token's SHA-256.
	AccessTokenType string `json:"accessTokenType,omitempty"`
}

// ClientClaim is one claim of a client's tokens (ClientConfig.Claims).
type ClientClaim struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// The profiles of Config.Profile.
const (
	ProfileRFC            = "rfc"            // RFC 6749 §5.2 and RFC 9068: the default
	ProfileIdentityServer = "identityserver" // IdentityServer 7.4's answers and tokens
)

// DPoPConfig bounds the DPoP proofs of token requests. The resource
// server's side, which checks proofs at the APIs, is middleware.DPoP.
type DPoPConfig struct {
	// ProofMaxAgeSeconds is how old a proof may be (by its iat), and so
	// how long its jti is remembered to refuse a replay, in the memory of
	// clientAssertions.replayCacheBytes (or the shared limiter store).
	// Zero means 60; at most 300.
	ProofMaxAgeSeconds int `json:"proofMaxAgeSeconds,omitempty"`
	// RequireNonce makes every proof carry the issuer's current nonce
	// (RFC 9449 §8): a proof without it is answered 400 use_dpop_nonce
	// with the nonce in DPoP-Nonce, and the client retries. A nonce lasts
	// ProofMaxAgeSeconds, and the one before it is still accepted. Every
	// replica of a configuration makes the same nonces, from the signing
	// key, with no shared state.
	RequireNonce bool `json:"requireNonce,omitempty"`
}

// APIResourceConfig is one API that may introspect tokens: it
// authenticates with its Name as client ID and one of its secrets (HTTP
// Basic or in the form), or a signed assertion (private_key_jwt, with
// PublicKeys), under the same failure limits as clients.
type APIResourceConfig struct {
	// Name is the API's ID. Required and unique among the API resources,
	// at most MaxClientIDLength characters.
	Name string `json:"name"`
	// SecretHashes are the hashes of the API's secrets, in the forms of
	// package secret. At least one hash or one of PublicKeys is required.
	SecretHashes []string `json:"secretHashes,omitempty"`
	// PublicKeys verify the API's signed assertions (private_key_jwt), as
	// a client's: at most MaxClientKeys.
	PublicKeys []ClientKeyConfig `json:"publicKeys,omitempty"`
	// Scopes are the API's: it is told of a token only when the token
	// carries one of them, and of those scopes only. At least one.
	Scopes []string `json:"scopes"`
}

// ClientKeyConfig is one public key of a client: a PEM file, an inline
// JWK, or a key built in code. Set exactly one.
type ClientKeyConfig struct {
	// File is a PEM file holding a public key ("PUBLIC KEY", PKIX), read
	// by New and Reload. A relative path is read from Config.Dir.
	File string `json:"file,omitempty"`
	// JWK is a public JSON Web Key (RFC 7517): EC P-256, RSA of 2048 bits
	// or more, or OKP Ed25519. A JWK holding a private key is refused.
	JWK json.RawMessage `json:"jwk,omitempty"`
	// Alg is the one algorithm the key verifies: "ES256", "RS256",
	// "PS256" or "EdDSA". Empty means the JWK's "alg", else the one that
	// fits the key's type (RS256 for RSA).
	Alg string `json:"alg,omitempty"`
	// Key is the public key itself, for a Config built in code.
	Key crypto.PublicKey `json:"-"`
}

// AssertionConfig bounds the client assertions of private_key_jwt. Zero
// values take the defaults.
type AssertionConfig struct {
	// MaxLifetimeSeconds is how far ahead an assertion's exp may be: an
	// assertion living longer is refused, so that its jti need not be
	// remembered long. Zero means 300; at most 3600 (authlib's default
	// lifetime).
	MaxLifetimeSeconds int `json:"maxLifetimeSeconds,omitempty"`
	// ReplayCacheBytes is the memory that remembers the jti of accepted
	// assertions until they expire, allocated once: 16 bytes each (they
	// are hashed). Only an assertion with a valid signature adds one, so
	// it fills only as fast as the clients holding keys ask for tokens;
	// when it is full, an assertion is refused with 429 slow_down rather
	// than an unexpired jti forgotten. A reload that changes it forgets
	// none either: the jtis the new size has no room for are kept beside
	// it until they expire. Zero means 256 KiB (16,384 entries);
	// otherwise from 4 KiB to 64 MiB.
	ReplayCacheBytes int `json:"replayCacheBytes,omitempty"`
}

// Limits bound the token endpoint. Zero values take the defaults.
//
// Failed authentications are limited before the secret (or the client
// assertion) is checked: each attempt reserves one failure from its
// budgets and gives it back if the secret is right, so concurrent guesses cannot multiply a budget, and an
// attempt that was checked is charged even if its request ends early. The
// budgets are per address, per client ID, and per client ID and address.
// An address is answered 429 slow_down once it has failed
// FailedAttemptsPerAddress times in the window, or once it has failed for
// a client whose FailedAttemptsPerClient are spent. A secret that already
// failed for a client from an address is charged once per window, however
// often it is sent again: it is no new guess. Someone else's
// failures never lock a client out of an address that gave its right
// secret within the last 24 hours (however many requests it has in
// flight), nor, while the limiter has room to remember it, out of an
// address that has not failed for it.
//
// What an attacker with N addresses (IPv4 addresses, or IPv6 /64s) can do
// in one window: verify at most FailedAttemptsPerClient secrets for one
// client from all of them together, plus one per address that the limiter
// can remember (half of LimiterMaxBytes, 16 bytes an address: more
// addresses than that are refused, not forgotten), and at most
// N × FailedAttemptsPerAddress secrets in all. The attacker's own
// addresses are slowed.
type Limits struct {
	// MaxBodyBytes bounds a token request's body. Zero means 16 KiB.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
	// FailedAttemptsPerClient is how many failed authentications one
	// client ID may have within FailureWindowSeconds, from all addresses
	// together, before addresses that failed for it are answered 429
	// slow_down. Zero means 10.
	FailedAttemptsPerClient int `json:"failedAttemptsPerClient,omitempty"`
	// FailedAttemptsPerAddress is how many failed authentications one
	// address may have within the window, for any clients, before it is
	// answered 429 slow_down. Zero means 100.
	FailedAttemptsPerAddress int `json:"failedAttemptsPerAddress,omitempty"`
	// FailureWindowSeconds is the window of the two limits above; the
	// allowance comes back evenly over it. Zero means 60; at most a day.
	FailureWindowSeconds int `json:"failureWindowSeconds,omitempty"`
	// LimiterMaxBytes is the memory the failure limiter holds, allocated
	// once at start: 16 bytes per remembered client ID, address or pair,
	// whatever the IDs look like (they are hashed). When it is full, the
	// entries that free up soonest are forgotten first. Zero means 1 MiB
	// (65,536 entries); otherwise from 4 KiB to 1 GiB.
	LimiterMaxBytes int `json:"limiterMaxBytes,omitempty"`
	// FailureFloorMillis is the least time an invalid_client answer takes,
	// waited out without computing, so that an unknown client, a wrong
	// secret and a client with several or slow (bcrypt) hashes answer
	// alike. Zero means automatic: none while every hash is fast (they do
	// equal work already), else twice the time the costliest client's
	// bcrypt hashes took when the configuration was loaded. At most
	// 10000; -1 means none.
	FailureFloorMillis int `json:"failureFloorMillis,omitempty"`
	// MaxConcurrentSlowHashes bounds the bcrypt checks running at once;
	// the others wait. Zero means half the CPUs, at least one.
	MaxConcurrentSlowHashes int `json:"maxConcurrentSlowHashes,omitempty"`
	// TrustedProxyHeader, when set (e.g. "X-Forwarded-For"), is where the
	// remote address is read from: the rightmost address in it not added
	// by a trusted hop (see TrustedProxies). Set it only behind a proxy
	// that sets the header, else clients choose their own address.
	// Addresses are keyed without their port, and IPv6 by its /64.
	TrustedProxyHeader string `json:"trustedProxyHeader,omitempty"`
	// TrustedProxies are the proxies (CIDR prefixes or addresses) whose
	// entries in TrustedProxyHeader are believed. Empty means one trusted
	// hop: the header's rightmost address. Otherwise the header is read
	// only from a RemoteAddr in this list, and trusted entries are skipped
	// from the right.
	TrustedProxies []string `json:"trustedProxies,omitempty"`
	// NAT64Prefixes are the prefixes of the NAT64 or SIIT translators in
	// front of the issuer (RFC 6052: /32, /40, /48, /56, /64 or /96), such
	// as "64:ff9b:1::/96" (RFC 8215's local-use block): an address in one
	// carries an IPv4 client's address, and is keyed as that address. The
	// well-known prefix 64:ff9b::/96 always is. List only a translator's:
	// whoever can source addresses in a listed prefix chooses its key.
	NAT64Prefixes []string `json:"nat64Prefixes,omitempty"`
}

// MaxAccessTokenLifetime bounds ClientConfig.AccessTokenLifetime: a day,
// in seconds.
const MaxAccessTokenLifetime = 86400

// Input bounds, IdentityServer's InputLengthRestrictions: longer values
// are refused with 400 invalid_request before anything is remembered.
const (
	MaxClientIDLength = 100 // characters of a client ID
	MaxSecretLength   = 100 // characters of a client secret
	MaxScopeLength    = 300 // characters of the scope parameter

	// MaxAssertionLength bounds the client_assertion parameter, in bytes;
	// a longer one is refused before it is decoded.
	MaxAssertionLength = 8 << 10
	// MaxClientKeys bounds the public keys of one client.
	MaxClientKeys = 8
)

// ConfigError names the field of the configuration that is wrong and why.
// It never holds a secret hash's value: a value that is not a hash may be
// a secret pasted in plain text.
type ConfigError struct {
	File   string // the file, when LoadConfig read it; else empty
	Field  string // e.g. "clients[1].clientId"; "(file)" for the file as a whole
	Reason string
	Err    error // the cause, when a package's error is (secret.ErrEmptySecret, say); may be nil
}

func (e *ConfigError) Error() string {
	if e.File != "" {
		return "issuer config: " + e.File + ": " + e.Field + ": " + e.Reason
	}
	return "issuer config: " + e.Field + ": " + e.Reason
}

// Unwrap returns the cause, so that errors.Is finds it.
func (e *ConfigError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// causeErr is the ConfigError of field for err, which it wraps: a key
// file that cannot be read stays errors.Is(err, fs.ErrPermission).
func causeErr(field string, err error) error {
	return &ConfigError{Field: field, Reason: err.Error(), Err: err}
}

// LoadConfig reads a configuration file (see ParseConfig). It does not
// check the values or read the key files: New and Reload do, once.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data, filepath.Dir(path))
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = path
	}
	return c, err
}

// ParseConfig decodes a configuration file's content (see DecodeConfig)
// and sets Dir, the folder its relative key file paths are read from, to
// dir. It does not check the values: New, Reload and Validate do.
func ParseConfig(data []byte, dir string) (*Config, error) {
	var c Config
	if err := DecodeConfig(data, &c); err != nil {
		return nil, err
	}
	c.Dir = dir
	return &c, nil
}

// DecodeConfig decodes one JSON value from data into v strictly: an
// unknown field (with the known one it comes nearest, if any), a value of
// the wrong type, bad JSON or anything but white space after the value is
// a *ConfigError naming the field, or the line ("(file)" for the file as
// a whole). v is a *Config or, for a file that holds other sections beside
// the issuer's, a pointer to a struct of your own that embeds Config. It
// does not check the values: see Validate.
func DecodeConfig(data []byte, v any) error { return decodeStrict(data, v) }

// Validate checks c's fields and returns a *ConfigError naming the first
// wrong one. It neither reads the key files nor changes c, nor reads a
// clock: a key schedule is checked as a whole. New and Reload run the
// same checks, so there is no need to call it before them; call it to
// check a Config without applying it. They also read the key files, and
// refuse a schedule under which no key signs yet at the issuer's clock.
func (c *Config) Validate() error {
	_, err := c.check()
	return err
}

// check validates c and returns what its fields decide, defaults applied:
// all of the issuer's state but the keys, which compile reads.
func (c *Config) check() (*state, error) {
	if c.Issuer == "" {
		return nil, fieldErr("issuer", "required")
	}
	u, err := url.Parse(c.Issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fieldErr("issuer", "want an absolute http(s) URL without query or fragment, got %q", c.Issuer)
	}
	switch {
	case len(c.Keys) == 0 && !c.EphemeralKey:
		return nil, fieldErr("keys", "at least one signing key is required (or, for development only, set ephemeralKey)")
	case len(c.Keys) > 0 && c.EphemeralKey:
		return nil, fieldErr("ephemeralKey", "set keys or ephemeralKey, not both")
	}
	for i, kc := range c.Keys {
		if err := kc.check(); err != nil {
			return nil, fieldErr(fmt.Sprintf("keys[%d]", i), "%v", err)
		}
	}
	d := c.withDefaults()
	switch d.Profile {
	case ProfileRFC, ProfileIdentityServer:
	default:
		return nil, fieldErr("profile", `want "rfc" or "identityserver", got %q`, c.Profile)
	}
	switch d.ScopeFormat {
	case "string", "array":
	default:
		return nil, fieldErr("scopeFormat", `want "string" or "array", got %q`, c.ScopeFormat)
	}
	if d.JWKSMaxAgeSeconds < 0 {
		return nil, fieldErr("jwksMaxAgeSeconds", "negative")
	}
	if d.ValidatorRefreshSeconds < 0 {
		return nil, fieldErr("validatorRefreshSeconds", "negative")
	}
	l := d.Limits
	if err := l.check(); err != nil {
		return nil, err
	}
	if err := checkScopeWhenOmitted("scopeWhenOmitted", d.ScopeWhenOmitted); err != nil {
		return nil, err
	}
	if err := d.ClientAssertions.check(); err != nil {
		return nil, err
	}
	if d.DPoP.ProofMaxAgeSeconds < 0 || d.DPoP.ProofMaxAgeSeconds > 300 {
		return nil, fieldErr("dpop.proofMaxAgeSeconds", "want 1 to 300 (0: 60), got %d", d.DPoP.ProofMaxAgeSeconds)
	}
	trusted, err := clientip.ParsePrefixes(l.TrustedProxies)
	if err != nil {
		return nil, fieldErr("limits.trustedProxies", "%v", err)
	}
	nat64, err := clientip.ParseNAT64(l.NAT64Prefixes)
	if err != nil {
		return nil, fieldErr("limits.nat64Prefixes", "%v", err)
	}
	own, err := checkOwnScopes(d.Scopes)
	if err != nil {
		return nil, err
	}
	clients := make(map[string]*client, len(d.Clients))
	for i, cc := range d.Clients {
		cl, err := cc.compile(fmt.Sprintf("clients[%d]", i), own)
		if err != nil {
			return nil, err
		}
		if clients[cl.id] != nil {
			return nil, fieldErr(fmt.Sprintf("clients[%d].clientId", i), "duplicate client ID %q", cl.id)
		}
		clients[cl.id] = cl
	}
	apis := make(map[string]*apiResource, len(d.APIResources))
	var apiOrder []*apiResource
	for i, ac := range d.APIResources {
		api, err := ac.compile(fmt.Sprintf("apiResources[%d]", i), own)
		if err != nil {
			return nil, err
		}
		if apis[api.name] != nil {
			return nil, fieldErr(fmt.Sprintf("apiResources[%d].name", i), "duplicate API resource %q", api.name)
		}
		apis[api.name] = api
		apiOrder = append(apiOrder, api)
	}
	if d.Profile == ProfileIdentityServer && len(apiOrder) > 0 {
		// As IdentityServer: a client without an audience of its own gets
		// the names of the API resources of its scopes.
		for _, cc := range c.Clients {
			if cl := clients[cc.ClientID]; cl != nil && len(cc.Audience) == 0 {
				cl.apiAud, cl.audience = true, apiAudience(apiOrder, cl.scopeList)
			}
		}
	}
	plan, err := d.keyPlan()
	if err != nil {
		return nil, err
	}
	budget := limit.Budget{
		PerSubject: l.FailedAttemptsPerClient,
		PerAddress: l.FailedAttemptsPerAddress,
		Window:     time.Duration(l.FailureWindowSeconds) * time.Second,
	}
	return &state{
		issuer:         d.Issuer,
		prefix:         strings.TrimSuffix(u.Path, "/"),
		clients:        clients,
		apis:           apis,
		apiOrder:       apiOrder,
		identityServer: d.Profile == ProfileIdentityServer,
		scopeArray:     d.ScopeFormat == "array",
		cacheHeader:    "public, max-age=" + strconv.Itoa(d.JWKSMaxAgeSeconds),
		limits:         l,
		addrs:          clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: trusted, NAT64: nat64},
		budget:         budget,
		limiterCfg:     limiterConfig{budget: budget, bytes: l.LimiterMaxBytes},
		verifierCfg: secret.VerifierConfig{
			MaxConcurrentSlow: l.MaxConcurrentSlowHashes,
			FailureFloor:      time.Duration(l.FailureFloorMillis) * time.Millisecond,
		},
		assertionLifetime: time.Duration(d.ClientAssertions.MaxLifetimeSeconds) * time.Second,
		replayBytes:       d.ClientAssertions.ReplayCacheBytes,
		dpopWindow:        time.Duration(d.DPoP.ProofMaxAgeSeconds) * time.Second,
		dpopNonces:        d.DPoP.RequireNonce,
		plan:              plan,
	}, nil
}

// withDefaults returns c with each zero value that has a default replaced
// by it: the one place the defaults are applied. The issuer URL loses a
// trailing slash. c's slices are not changed.
func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	c.Issuer = strings.TrimSuffix(c.Issuer, "/")
	if c.Profile == "" {
		c.Profile = ProfileRFC
	}
	ids := c.Profile == ProfileIdentityServer
	if c.ScopeFormat == "" {
		c.ScopeFormat = map[bool]string{true: "array", false: "string"}[ids]
	}
	def(&c.JWKSMaxAgeSeconds, 300)
	def(&c.ValidatorRefreshSeconds, 300)
	l := &c.Limits
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = 16 << 10
	}
	def(&l.FailedAttemptsPerClient, 10)
	def(&l.FailedAttemptsPerAddress, 100)
	def(&l.FailureWindowSeconds, 60)
	def(&l.LimiterMaxBytes, 1<<20)
	if c.ScopeWhenOmitted == "" {
		c.ScopeWhenOmitted = map[bool]string{true: scopeAll, false: scopeRefuse}[ids]
	}
	def(&c.ClientAssertions.MaxLifetimeSeconds, 300)
	def(&c.ClientAssertions.ReplayCacheBytes, 256<<10)
	def(&c.DPoP.ProofMaxAgeSeconds, 60)
	// FailureFloorMillis and MaxConcurrentSlowHashes mean "automatic" at
	// zero: secret.VerifierConfig decides.
	clients := make([]ClientConfig, len(c.Clients))
	for i, cc := range c.Clients {
		if len(cc.GrantTypes) == 0 {
			cc.GrantTypes = []string{"client_credentials"}
		}
		def(&cc.AccessTokenLifetime, 3600)
		if len(cc.Audience) == 0 {
			cc.Audience = []string{c.Issuer + "/resources"}
		}
		if cc.ScopeWhenOmitted == "" {
			cc.ScopeWhenOmitted = c.ScopeWhenOmitted
		}
		clients[i] = cc
	}
	c.Clients = clients
	return c
}

func (l Limits) check() error {
	// In the order of the fields, so that a file with two bad values is
	// always told of the same one.
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"maxBodyBytes", l.MaxBodyBytes},
		{"failedAttemptsPerClient", int64(l.FailedAttemptsPerClient)},
		{"failedAttemptsPerAddress", int64(l.FailedAttemptsPerAddress)},
		{"failureWindowSeconds", int64(l.FailureWindowSeconds)},
		{"limiterMaxBytes", int64(l.LimiterMaxBytes)},
		{"failureFloorMillis", int64(l.FailureFloorMillis) + 1}, // -1 is allowed
		{"maxConcurrentSlowHashes", int64(l.MaxConcurrentSlowHashes)},
	} {
		if f.v < 0 {
			return fieldErr("limits."+f.name, "negative")
		}
	}
	for _, b := range []struct {
		name   string
		v, max int64
	}{
		{"failureWindowSeconds", int64(l.FailureWindowSeconds), 86400},
		{"failureFloorMillis", int64(l.FailureFloorMillis), 10000},
		{"limiterMaxBytes", int64(l.LimiterMaxBytes), 1 << 30},
	} {
		if b.v > b.max {
			return fieldErr("limits."+b.name, "at most %d", b.max)
		}
	}
	if l.LimiterMaxBytes != 0 && l.LimiterMaxBytes < 4<<10 {
		return fieldErr("limits.limiterMaxBytes", "at least 4096 (or 0 for the default)")
	}
	if err := clientip.CheckHeader(l.TrustedProxyHeader); err != nil {
		return fieldErr("limits.trustedProxyHeader", "%v", err)
	}
	if l.TrustedProxyHeader == "" && len(l.TrustedProxies) > 0 {
		return fieldErr("limits.trustedProxies", "set trustedProxyHeader too")
	}
	return nil
}

func (a AssertionConfig) check() error {
	switch {
	case a.MaxLifetimeSeconds < 0:
		return fieldErr("clientAssertions.maxLifetimeSeconds", "negative")
	case a.MaxLifetimeSeconds > 3600:
		return fieldErr("clientAssertions.maxLifetimeSeconds", "at most 3600")
	case a.ReplayCacheBytes < 4<<10:
		return fieldErr("clientAssertions.replayCacheBytes", "at least 4096 (or 0 for the default)")
	case a.ReplayCacheBytes > 64<<20:
		return fieldErr("clientAssertions.replayCacheBytes", "at most 67108864")
	}
	return nil
}

// check checks what can be known of the key without reading its file.
func (kc KeyConfig) check() error {
	switch {
	case kc.Key != nil && kc.File != "":
		return errors.New("set file or a key in code, not both")
	case kc.Key == nil && kc.File == "":
		return errors.New("file: required")
	}
	switch kc.Alg {
	case "", "ES256", "RS256", "EdDSA":
		return nil
	}
	return fmt.Errorf(`alg: want "ES256", "RS256" or "EdDSA", got %q`, kc.Alg)
}

// load reads a checked key, its file from dir if the path is relative.
func (kc KeyConfig) load(dir string) (*keys.Key, error) {
	priv := kc.Key
	if priv == nil {
		path := kc.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		if priv, err = keys.ParsePEM(data); err != nil {
			return nil, fmt.Errorf("file %s: %w", path, err)
		}
	}
	alg := kc.Alg
	if alg == "" {
		alg = keys.AlgFor(priv)
	}
	return keys.New(alg, priv)
}

// client is a checked client registration.
type client struct {
	id          string
	hashes      []secret.Hash
	keys        []clientKey // private_key_jwt
	clientCreds bool
	scopes      scope.Set
	scopeList   []string // the allowed scopes, in the configuration's order
	allScopes   bool     // a request without scope gets scopeList
	lifetime    time.Duration
	audience    []string
	reference   bool   // its access tokens are reference tokens
	requireDPoP bool   // its token requests must carry a DPoP proof
	claims      []byte // its client_ claims as JSON members, each led by a comma; nil for none
	apiAud      bool   // its audience is its API resources' names (the identityserver profile)
}

// compile checks a client whose defaults are applied; f names it.
func (cc ClientConfig) compile(f string, own scope.Set) (*client, error) {
	if cc.ClientID == "" {
		return nil, fieldErr(f+".clientId", "empty")
	}
	if utf8.RuneCountInString(cc.ClientID) > MaxClientIDLength {
		return nil, fieldErr(f+".clientId", "longer than %d characters", MaxClientIDLength)
	}
	f = fmt.Sprintf("%s (%q)", f, cc.ClientID)
	if len(cc.SecretHashes) == 0 && len(cc.PublicKeys) == 0 {
		return nil, fieldErr(f+".secretHashes", "at least one hash (or one of publicKeys) is required")
	}
	hashes, err := parseHashes(f+".secretHashes", cc.SecretHashes)
	if err != nil {
		return nil, err
	}
	cl := &client{id: cc.ClientID, hashes: hashes, audience: cc.Audience, allScopes: cc.ScopeWhenOmitted == scopeAll}
	if len(cc.PublicKeys) > MaxClientKeys {
		return nil, fieldErr(f+".publicKeys", "more than %d keys", MaxClientKeys)
	}
	for i, kc := range cc.PublicKeys {
		k, err := kc.check()
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s.publicKeys[%d]", f, i), "%v", err)
		}
		if k != nil { // a file's key is read by compile
			cl.keys = append(cl.keys, *k)
		}
	}
	if err := checkScopeWhenOmitted(f+".scopeWhenOmitted", cc.ScopeWhenOmitted); err != nil {
		return nil, err
	}
	for i, g := range cc.GrantTypes {
		if g == "" {
			return nil, fieldErr(fmt.Sprintf("%s.grantTypes[%d]", f, i), "empty")
		}
		cl.clientCreds = cl.clientCreds || g == "client_credentials"
	}
	if len(cc.Scopes) == 0 {
		return nil, fieldErr(f+".scopes", "at least one scope is required")
	}
	for i, s := range cc.Scopes {
		if !scope.Known(s) && !own.Has(s) {
			return nil, fieldErr(fmt.Sprintf("%s.scopes[%d]", f, i), "unknown scope %q (known: %v)", s, knownScopes(own))
		}
	}
	cl.scopes = scope.NewSet(cc.Scopes...)
	for _, s := range cc.Scopes {
		if !slices.Contains(cl.scopeList, s) {
			cl.scopeList = append(cl.scopeList, s)
		}
	}
	cl.requireDPoP = cc.RequireDPoP
	if cl.claims, err = clientClaims(f, cc.Claims); err != nil {
		return nil, err
	}
	switch cc.AccessTokenType {
	case "", "jwt":
	case "reference":
		cl.reference = true
	default:
		return nil, fieldErr(f+".accessTokenType", `want "jwt" or "reference", got %q`, cc.AccessTokenType)
	}
	if cc.AccessTokenLifetime < 0 {
		return nil, fieldErr(f+".accessTokenLifetime", "negative")
	}
	if cc.AccessTokenLifetime > MaxAccessTokenLifetime {
		return nil, fieldErr(f+".accessTokenLifetime", "at most %d (a day): a bearer token that lives longer outlives any revocation", MaxAccessTokenLifetime)
	}
	cl.lifetime = time.Duration(cc.AccessTokenLifetime) * time.Second
	for i, a := range cc.Audience {
		if a == "" {
			return nil, fieldErr(fmt.Sprintf("%s.audience[%d]", f, i), "empty")
		}
	}
	return cl, nil
}

// clientClaims checks a client's claims and writes them as the JSON
// members its tokens carry, in the order of their first appearance: a
// type given once is a string, one given several times an array.
func clientClaims(f string, in []ClientClaim) ([]byte, error) {
	var order []string
	values := map[string][]string{}
	for i, c := range in {
		if c.Type == "" || c.Type == "id" || strings.IndexFunc(c.Type, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
		}) >= 0 {
			return nil, fieldErr(fmt.Sprintf("%s.claims[%d].type", f, i), `want letters, digits, "_", "-" or ".", and not "id", got %q`, c.Type)
		}
		if _, seen := values[c.Type]; !seen {
			order = append(order, c.Type)
		}
		values[c.Type] = append(values[c.Type], c.Value)
	}
	var b []byte
	for _, t := range order {
		b = append(b, `,"client_`...)
		b = append(b, t...)
		b = append(b, `":`...)
		if vs := values[t]; len(vs) == 1 {
			b = oauthwire.AppendString(b, vs[0])
		} else {
			b = appendStrings(b, vs)
		}
	}
	return b, nil
}

// apiAudience returns the names of the API resources, in their order,
// that own one of scopes: a token's aud under the identityserver profile.
func apiAudience(apis []*apiResource, scopes []string) []string {
	var aud []string
	for _, a := range apis {
		if a.scopes.HasAny(scopes...) {
			aud = append(aud, a.name)
		}
	}
	return aud
}

// apiResource is a checked API resource: its credentials are a client's
// (no grant: it may only introspect).
type apiResource struct {
	*client
	name   string
	scopes scope.Set
}

// compile checks an API resource; f names it.
func (ac APIResourceConfig) compile(f string, own scope.Set) (*apiResource, error) {
	if ac.Name == "" {
		return nil, fieldErr(f+".name", "empty")
	}
	if utf8.RuneCountInString(ac.Name) > MaxClientIDLength {
		return nil, fieldErr(f+".name", "longer than %d characters", MaxClientIDLength)
	}
	f = fmt.Sprintf("%s (%q)", f, ac.Name)
	if len(ac.SecretHashes) == 0 && len(ac.PublicKeys) == 0 {
		return nil, fieldErr(f+".secretHashes", "at least one hash (or one of publicKeys) is required")
	}
	hashes, err := parseHashes(f+".secretHashes", ac.SecretHashes)
	if err != nil {
		return nil, err
	}
	cl := &client{id: ac.Name, hashes: hashes}
	if len(ac.PublicKeys) > MaxClientKeys {
		return nil, fieldErr(f+".publicKeys", "more than %d keys", MaxClientKeys)
	}
	for i, kc := range ac.PublicKeys {
		k, err := kc.check()
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s.publicKeys[%d]", f, i), "%v", err)
		}
		if k != nil { // a file's key is read by compile
			cl.keys = append(cl.keys, *k)
		}
	}
	if len(ac.Scopes) == 0 {
		return nil, fieldErr(f+".scopes", "at least one scope is required")
	}
	for i, s := range ac.Scopes {
		if !scope.Known(s) && !own.Has(s) {
			return nil, fieldErr(fmt.Sprintf("%s.scopes[%d]", f, i), "unknown scope %q (known: %v)", s, knownScopes(own))
		}
	}
	return &apiResource{client: cl, name: ac.Name, scopes: scope.NewSet(ac.Scopes...)}, nil
}

func parseHashes(f string, in []string) ([]secret.Hash, error) {
	out := make([]secret.Hash, 0, len(in))
	for i, s := range in {
		h, err := secret.Parse(s)
		if err != nil {
			// The value may be a secret pasted in plain text: never echo it.
			return nil, &ConfigError{Field: fmt.Sprintf("%s[%d]", f, i), Reason: err.Error(), Err: err}
		}
		out = append(out, h)
	}
	return out, nil
}
