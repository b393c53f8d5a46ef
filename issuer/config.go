package issuer

import (
	"crypto"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// Config is the issuer's configuration, built in code or read from its
// JSON file by LoadConfig (docs/IDENTITY-SERVICE.md describes the file
// field by field; file.go holds its shape, in which a duration is a
// number of seconds). A Config is plain data: Validate checks it, and New
// and Reload check it, read its key files and apply it.
type Config struct {
	// Issuer is the issuer URL, e.g. "https://host/ids": the "iss" of every
	// token, and the path prefix the issuer serves under. Required.
	Issuer string

	// Keys are the signing keys: without times the first one signs and all
	// are published; with PublishAt, SignAt and RetireAt they rotate on a
	// schedule (KeyConfig). At least one, unless EphemeralKey.
	Keys []KeyConfig

	// EphemeralKey, with no Keys, signs with an ES256 key made by New, kept
	// across reloads, that dies with the process: development only, and
	// logged. False requires Keys.
	EphemeralKey bool

	// Clients are the registered clients. None means every token request
	// fails.
	Clients []ClientConfig

	// Scopes are scopes of your own that clients and API resources may hold
	// beside the product's two (scope.All()); any other is refused where it
	// is named. None means the product's alone (docs/IDENTITY-SERVICE.md).
	Scopes []string

	// Profile is how the token endpoint answers and shapes its tokens: "rfc"
	// (RFC 6749 §5.2, RFC 9068; empty) or "identityserver", as IdentityServer
	// 7.4 does. docs/CONTRACT.md §2.1 lists each difference.
	Profile string

	// ScopeFormat is how the scope claim is written: "string" (space
	// delimited, RFC 9068) or "array" (IdentityServer's form). Empty means
	// "string", or "array" with the identityserver profile.
	ScopeFormat string

	// MCPClients adds to discovery and RFC 8414 metadata what the MCP SDKs'
	// clients require: an authorization_endpoint that refuses every request,
	// and PKCE's S256. False lists neither (docs/MCP.md).
	MCPClients bool

	// JWKSMaxAge is the Cache-Control max-age of the JWKS and discovery
	// answers: a whole number of seconds, such as 5*time.Minute. Zero
	// means 5 minutes.
	JWKSMaxAge time.Duration

	// ValidatorRefresh is how often this issuer's validators refetch its
	// JWKS; a key's SignAt must come at least this plus JWKSMaxAge after its
	// PublishAt. Zero means 5 minutes, the validator's default.
	ValidatorRefresh time.Duration

	// Limits are the failure limits of the token, introspection and
	// revocation endpoints (limit.Config; FailureWindow at most a day,
	// MemoryBytes 4 KiB to 1 GiB). The zero value takes the defaults.
	Limits limit.Config

	// MaxBodyBytes bounds a request's body at the three endpoints. Zero
	// means 16 KiB.
	MaxBodyBytes int64

	// Verifier configures how secrets are checked (secret.VerifierConfig;
	// FailureFloor at most 10 seconds). The zero value takes the defaults;
	// with WithVerifier, that Verifier's own settings apply instead.
	Verifier secret.VerifierConfig

	// ScopeWhenOmitted is what a token request without scope gets: "refuse"
	// (400 invalid_scope) or "all" (every scope the client may have). Empty
	// means "refuse", or "all" with the identityserver profile.
	ScopeWhenOmitted string

	// APIResources are the APIs that may introspect tokens (RFC 7662), each
	// told only of tokens that carry one of its scopes. None: nobody may.
	APIResources []APIResourceConfig

	// DPoP bounds the DPoP proofs (RFC 9449) of token requests; a proof
	// binds the token to its key whatever this says. The zero value takes
	// the defaults.
	DPoP DPoPConfig

	// ClientAssertions bound the signed assertions of private_key_jwt
	// clients. The zero value takes the defaults.
	ClientAssertions AssertionConfig

	// TrustedIssuers are the issuers of workload identities whose tokens
	// authenticate clients (ClientConfig.FederatedCredentials), and may
	// be exchanged by the JWT bearer grant. None means none.
	TrustedIssuers []TrustedIssuerConfig

	// MTLS configures mutual TLS (RFC 8705). The zero value reads a client's
	// certificate from the TLS connection, trusts no CA and names no alias.
	MTLS MTLSConfig

	// Dir is the folder that relative key file paths are read from, when
	// New or Reload reads them. LoadConfig and ParseConfig set it to the
	// configuration file's folder. Empty means the working directory.
	Dir string
}

// KeyConfig is one signing key: a PEM file, or a key built in code.
//
// PublishAt, SignAt and RetireAt schedule a rotation, so that every
// replica reading the same file switches at the same instant of its
// clock, without a reload. At an instant t:
//
//   - a key is published (in the JWKS, and accepted by a validator in the
//     same process) from its PublishAt (zero: since ever) until its
//     RetireAt (zero: forever), excluded;
//   - among the published keys whose SignAt is at or before t (zero:
//     since ever), the one with the latest SignAt signs; a tie, as
//     between keys without SignAt, goes to the one listed first. Keys
//     without times thus keep the rule "the first one signs".
//
// New, Reload and Validate refuse a schedule in which a key signs less
// than ValidatorRefresh + JWKSMaxAge after its PublishAt, a key retires
// less than the longest client's AccessTokenLifetime after it last
// signs, no key signs at some instant after the first one does, a key
// signs again after another one took over, or a key's times are out of
// order. New and Reload also refuse one in which no key signs yet at the
// issuer's clock.
type KeyConfig struct {
	// File is a PEM file holding a private key (PKCS #8, SEC 1 or PKCS #1),
	// read by New and Reload. A relative path is read from Config.Dir.
	File string
	// Alg is the signing algorithm: "ES256" (P-256 keys), "RS256" (RSA of
	// 2048 bits or more) or "EdDSA" (Ed25519). Empty means the one that
	// fits the key's type.
	Alg string
	// Key is the private key itself, for a Config built in code instead
	// of File. Set File or Key, not both.
	Key crypto.Signer

	// PublishAt is when the key starts to be published. Zero means since
	// ever: taken to be in every validator's copy already, so give a new
	// key a PublishAt and push the configuration before it.
	PublishAt time.Time
	// SignAt is when the key may start signing. Zero means as soon as it
	// is published, ranked below every key with a SignAt.
	SignAt time.Time
	// RetireAt is when the key stops being published: its tokens stop
	// validating. Zero means never.
	RetireAt time.Time
}

// ClientConfig is one registered client.
type ClientConfig struct {
	// ClientID identifies the client. Required and unique, at most 100
	// characters.
	ClientID string
	// SecretHashes are the hashes of the client's secrets, in package
	// secret's forms; several rotate one, plain text is refused. Required
	// unless the client has another credential (docs/IDENTITY-SERVICE.md).
	SecretHashes []string
	// PublicKeys verify the client's private_key_jwt assertions, beside or
	// instead of secrets: at most 8. What they cost every refused assertion:
	// docs/IDENTITY-SERVICE.md, "Keys instead of secrets".
	PublicKeys []ClientKeyConfig
	// JWKSURI is the https URL of the client's private_key_jwt keys, instead
	// of PublicKeys; empty: none. How it is fetched: docs/IDENTITY-SERVICE.md;
	// what it may name: docs/SECURITY.md.
	JWKSURI string
	// FederatedCredentials are the workload identities that authenticate
	// the client (a token of a TrustedIssuer as its client_assertion): at
	// most 20, none another client's.
	FederatedCredentials []FederatedCredential
	// MaxAssertionAge bounds how old (by iat) a workload's token may be to
	// authenticate the client, which may reuse it within it: whole seconds.
	// Zero means an hour; at most a day.
	MaxAssertionAge time.Duration
	// AllowDefaultServiceAccount lets a Kubernetes namespace's "default"
	// service account be one of FederatedCredentials, which is refused
	// otherwise: every pod without an account of its own runs as it.
	AllowDefaultServiceAccount bool
	// GrantTypes the client may use: "client_credentials", and the JWT
	// bearer grant's URN where TrustedIssuerConfig.JWTBearerGrant allows it.
	// Empty means ["client_credentials"].
	GrantTypes []string
	// Scopes the client may ask for; at least one, each a scope the
	// service knows (pd_AdminWebApi, pd_ConnectWebApi, or one of
	// Config.Scopes).
	Scopes []string
	// AccessTokenLifetime is how long the client's tokens live, in whole
	// seconds. Zero means an hour; at most a day: a bearer token that lives
	// longer outlives any revocation.
	AccessTokenLifetime time.Duration
	// Audience is the "aud" of the client's tokens, which a request may
	// narrow with resource parameters (RFC 8707). Empty means
	// ["{issuer}/resources"] (docs/IDENTITY-SERVICE.md for the profiles).
	Audience []string
	// ScopeWhenOmitted overrides Config.ScopeWhenOmitted for this client:
	// "refuse" or "all". Empty means the Config's.
	ScopeWhenOmitted string
	// Claims are added to the client's tokens as "client_" and their Type
	// ("client_tenant"), several of one type as an array. Types are
	// letters, digits, "_", "-" and "."; "id" is taken. None: no claim.
	Claims []ClientClaim
	// RequireDPoP refuses the client's token requests that carry no DPoP
	// proof (400 invalid_request): its tokens are always bound to a key. A
	// reload that sets it ends the client's bearer tokens at introspection.
	RequireDPoP bool
	// AccessTokenType is "jwt" (empty) or "reference": an opaque handle that
	// APIs introspect and the client may revoke, its grant in the token
	// store (docs/IDENTITY-SERVICE.md, Reference tokens).
	AccessTokenType string

	// TLSClientAuth, when set, authenticates the client by a certificate of
	// Config.MTLS.ClientCAs that names it so (tls_client_auth); zero: not
	// so. See docs/IDENTITY-SERVICE.md, Mutual TLS.
	TLSClientAuth TLSClientAuth
	// CertificateThumbprints authenticate the client by a certificate of its
	// own (self_signed_tls_client_auth): SHA-256 thumbprints, base64url or
	// hex; at most 8. See docs/IDENTITY-SERVICE.md, Mutual TLS.
	CertificateThumbprints []string
	// CertificateBoundTokens binds the client's tokens to its request's
	// certificate however it authenticates (a request with neither one nor
	// a DPoP proof is refused). False: only certificate authentication binds.
	CertificateBoundTokens bool

	// Epoch is this registration of ClientID: its tokens are active only
	// under it. A registry sets it (at most 2^53-1); zero means the
	// issuer's own record, renewed at a removal or when every secret goes.
	Epoch uint64
}

// ClientClaim is one claim of a client's tokens (ClientConfig.Claims).
type ClientClaim struct {
	Type  string
	Value string
}

// The profiles of Config.Profile.
const (
	profileRFC            = "rfc"            // RFC 6749 §5.2 and RFC 9068: the default
	profileIdentityServer = "identityserver" // IdentityServer 7.4's answers and tokens
)

// DPoPConfig bounds the DPoP proofs of token requests, in the words of
// middleware.DPoPConfig, which checks them at the APIs.
type DPoPConfig struct {
	// ProofMaxAge is how old (by iat) a proof may be, how long its jti is
	// remembered, and the nonce period. Zero means one minute; from a
	// second to 5 minutes.
	ProofMaxAge time.Duration
	// RequireNonce makes every proof carry the issuer's current nonce (RFC
	// 9449 §8), the same at every replica; false asks for none. See
	// docs/IDENTITY-SERVICE.md.
	RequireNonce bool
}

// APIResourceConfig is one API that may introspect tokens: it
// authenticates with its Name as client ID and one of its secrets (HTTP
// Basic or in the form), or a signed assertion (private_key_jwt, with
// PublicKeys), under the same failure limits as clients.
type APIResourceConfig struct {
	// Name is the API's ID. Required and unique among the API resources,
	// at most 100 characters.
	Name string
	// SecretHashes are the hashes of the API's secrets, in the forms of
	// package secret. At least one hash or another credential (PublicKeys,
	// TLSClientAuth, CertificateThumbprints) is required.
	SecretHashes []string
	// PublicKeys verify the API's signed assertions (private_key_jwt), as
	// a client's (ClientConfig.PublicKeys says what they cost): at most 8.
	PublicKeys []ClientKeyConfig
	// TLSClientAuth and CertificateThumbprints authenticate the API by
	// mutual TLS, as a client's (RFC 8705 §2).
	TLSClientAuth          TLSClientAuth
	CertificateThumbprints []string
	// Scopes are the API's: it is told of a token only when the token
	// carries one of them, and of those scopes only. At least one.
	Scopes []string
}

// ClientKeyConfig is one public key of a client: a PEM file, an inline
// JWK, or a key built in code. Set exactly one.
type ClientKeyConfig struct {
	// File is a PEM file holding a public key ("PUBLIC KEY", PKIX), read
	// by New and Reload. A relative path is read from Config.Dir.
	File string
	// JWK is a public JSON Web Key (RFC 7517): EC P-256, RSA of 2048 bits
	// or more, or OKP Ed25519. A JWK holding a private key is refused.
	JWK json.RawMessage
	// Alg is the one algorithm the key verifies: "ES256", "RS256",
	// "PS256" or "EdDSA". Empty means the JWK's "alg", else the one that
	// fits the key's type (RS256 for RSA).
	Alg string
	// Key is the public key itself, for a Config built in code.
	Key crypto.PublicKey
}

// AssertionConfig bounds the client assertions of private_key_jwt. Zero
// values take the defaults.
type AssertionConfig struct {
	// MaxLifetime is how far ahead an assertion's exp may be, so that its jti
	// need not be remembered long. Zero means 5 minutes; at most an hour.
	MaxLifetime time.Duration
	// ReplayCacheBytes is the memory remembering accepted assertions' jtis
	// until they expire, 16 bytes each (docs/IDENTITY-SERVICE.md). Zero means
	// 256 KiB; otherwise from 4 KiB to 64 MiB.
	ReplayCacheBytes int
	// AllowLoopbackJWKS lets a client's JWKSURI be plain http on a
	// loopback host, and any jwksUri reach a loopback address: for
	// development and tests. False refuses both.
	AllowLoopbackJWKS bool
}

// ConfigError names the field of the configuration that is wrong and why,
// the field as the configuration file names it. It never holds a secret
// hash's value: a value that is not a hash may be a secret pasted in
// plain text.
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

// Validate checks c's fields and returns a *ConfigError naming the first
// wrong one. It neither reads the key files nor changes c, nor reads a
// clock: a key schedule is checked as a whole. New and Reload run the
// same checks, so there is no need to call it before them; call it to
// check a Config without applying it. They also read the key files, and
// refuse a schedule under which no key signs yet at the issuer's clock.
func (c *Config) Validate() error {
	_, err := c.compileParts()
	return err
}

// MTLSConfig configures mutual TLS (RFC 8705) at the issuer: client
// authentication by certificate (ClientConfig.TLSClientAuth and
// CertificateThumbprints) and tokens bound to the certificate a token
// request presents. The TLS server in front of the issuer asks the
// clients for their certificates (Go's tls.RequestClientCert, or a proxy
// that forwards them): the issuer reads the certificate of the
// connection, or CertificateHeader from TrustedProxies, and checks
// chains itself.
type MTLSConfig struct {
	// ClientCAs are PEM files of the CAs that tls_client_auth clients'
	// certificates chain to, read by New and Reload from Config.Dir.
	// None: no tls_client_auth client can authenticate.
	ClientCAs []string
	// ClientCACerts are more of them, for a Config built in code.
	ClientCACerts []*x509.Certificate
	// Alias is the issuer URL (https, the issuer's path) at a listener of its
	// own that asks for certificates, named in discovery's
	// mtls_endpoint_aliases (RFC 8705 §5). Empty: no alias.
	Alias string
	// CertificateHeader is the header in which a TLS-terminating proxy
	// forwards its client's certificate, read from TrustedProxies alone
	// (middleware.ForwardedCert's forms). Set both or neither; empty: none.
	CertificateHeader string
	TrustedProxies    []netip.Prefix
}

// TLSClientAuth names the certificate of a tls_client_auth client (RFC
// 8705 §2.1.2): set exactly one field.
type TLSClientAuth struct {
	// SubjectDN is its subject in RFC 4514's form ("CN=demo-mtls,O=Example";
	// .NET's "CN=demo-mtls, O=Example" is read too): types match by OID,
	// values exactly, case included.
	SubjectDN string
	// SANDNS, SANURI and SANEmail are a DNS name, URI or email it holds
	// among its subject alternative names: DNS names and an email's domain
	// without regard to case, a URI exactly.
	SANDNS   string
	SANURI   string
	SANEmail string
	// SANIP is an iPAddress it holds, compared as an address (RFC 5952
	// §8): "2001:db8::1" is "2001:0db8:0:0:0:0:0:1".
	SANIP string
}
