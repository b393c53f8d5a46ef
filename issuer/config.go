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

	// Keys are the signing keys. Without times, the first one signs and
	// all are published in the JWKS; with PublishAt, SignAt and RetireAt
	// they rotate on a schedule (see KeyConfig). At least one is
	// required, unless EphemeralKey is set.
	Keys []KeyConfig

	// EphemeralKey, set with no Keys, makes the issuer sign with an ES256
	// key it generates when it is created (and keeps across reloads):
	// tokens stop validating when the process ends, so it is for
	// development only, and the issuer logs a warning. False requires
	// Keys.
	EphemeralKey bool

	// Clients are the registered clients. None means every token request
	// fails.
	Clients []ClientConfig

	// Scopes are scopes of your own that clients and API resources may
	// hold beside the product's two (scope.All()): at most 64, each a
	// scope name of RFC 6749 §3.3 of at most 200 characters, none the
	// product's in another case. Any other is refused wherever it is
	// named.
	Scopes []string

	// Profile is how the token endpoint answers and shapes its tokens:
	// "rfc" (RFC 6749 §5.2 and RFC 9068, the default) or "identityserver",
	// as the product's IdentityServer 7.4 does, so that its existing
	// clients cannot tell the two apart: every token error is 400 with no
	// WWW-Authenticate (invalid_client too), a request without credentials
	// is invalid_request, one without grant_type unsupported_grant_type,
	// more than one resource invalid_target, a request without scope gets
	// all of the client's scopes (unless ScopeWhenOmitted says otherwise);
	// tokens carry scope as an array (unless ScopeFormat says otherwise),
	// no sub, a jti of 32 hex digits, and, when the configuration has API
	// resources, as aud the names of those whose scopes the token carries.
	// docs/CONTRACT.md lists each difference.
	Profile string

	// ScopeFormat is how the scope claim is written: "string" (space
	// delimited, RFC 9068) or "array" (IdentityServer's form). Empty means
	// "string", or "array" with the identityserver profile.
	ScopeFormat string

	// MCPClients makes the discovery document and RFC 8414 metadata
	// acceptable to the MCP SDKs' clients (go-sdk, the TypeScript SDK),
	// which refuse a server without an authorization endpoint or PKCE
	// even for the client_credentials grant: it adds
	// "authorization_endpoint", {issuer}/connect/authorize, which
	// refuses every request (400 unsupported_response_type: no
	// authorization flow is served, and grant_types_supported still
	// says so), and "code_challenge_methods_supported": ["S256"].
	// False lists neither (docs/MCP.md).
	MCPClients bool

	// JWKSMaxAge is the Cache-Control max-age of the JWKS and discovery
	// answers: a whole number of seconds, such as 5*time.Minute. Zero
	// means 5 minutes.
	JWKSMaxAge time.Duration

	// ValidatorRefresh is how often the validators of this issuer's
	// tokens fetch its JWKS again (accesstoken.JWKSConfig's
	// RefreshInterval). A key's SignAt
	// must come at least this long plus JWKSMaxAge after its PublishAt,
	// so that every validator has the key before its first token. Zero
	// means 5 minutes, the validator's default.
	ValidatorRefresh time.Duration

	// Limits are the failure limits of the token, introspection and
	// revocation endpoints, whose subjects are client IDs (and API
	// resources), and how a client's address is found (see limit.Config).
	// The zero value takes the defaults. FailureWindow is at most a day,
	// MemoryBytes from 4 KiB to 1 GiB.
	Limits limit.Config

	// MaxBodyBytes bounds a request's body at the three endpoints. Zero
	// means 16 KiB.
	MaxBodyBytes int64

	// Verifier configures how secrets are checked (see
	// secret.VerifierConfig): FailureFloor is the least time an
	// invalid_client answer takes, waited out without computing, so that
	// an unknown client, a wrong secret and a client with several or slow
	// (bcrypt) hashes answer alike (zero: automatic; at most 10 seconds;
	// negative: none), and MaxConcurrentSlow bounds the bcrypt checks
	// running at once. The zero value takes the defaults. With
	// WithVerifier, that Verifier's own settings apply instead.
	Verifier secret.VerifierConfig

	// ScopeWhenOmitted is what a token request without a scope gets, for
	// clients that do not say: "refuse" (400 invalid_scope, the
	// contract's answer) or "all" (every scope the client is allowed, as
	// IdentityServer does). Empty means "refuse", or "all" with the
	// identityserver profile.
	ScopeWhenOmitted string

	// APIResources are the APIs that may introspect tokens at
	// {issuer}/connect/introspect (RFC 7662), each with its name and
	// secret, as IdentityServer registers them: an API sees only the
	// tokens that carry one of its scopes.
	APIResources []APIResourceConfig

	// DPoP configures sender-constrained tokens (RFC 9449). A client that
	// sends a DPoP proof with its token request gets a token bound to the
	// proof's key (cnf.jkt, "token_type": "DPoP"), whatever this says, as
	// IdentityServer does; a client with RequireDPoP must. The zero value
	// takes the defaults.
	DPoP DPoPConfig

	// ClientAssertions bound the signed assertions of private_key_jwt
	// clients. The zero value takes the defaults.
	ClientAssertions AssertionConfig

	// TrustedIssuers are the issuers of workload identities whose tokens
	// authenticate clients (ClientConfig.FederatedCredentials), and may
	// be exchanged by the JWT bearer grant. None means none.
	TrustedIssuers []TrustedIssuerConfig

	// MTLS configures mutual TLS (RFC 8705): the CAs of the clients that
	// authenticate with a certificate (ClientConfig.TLSClientAuth), the
	// URL of a listener that asks for certificates, and a proxy that
	// forwards them. The zero value reads a client's certificate from the
	// TLS connection, trusts no CA and names no alias.
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
	// ever: the key is taken to be in every validator's copy of the JWKS
	// already, so give a new key a PublishAt, and push the configuration
	// before that instant.
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
	// SecretHashes are the hashes of the client's secrets, in the forms of
	// package secret ("sha256:...", "sha512:...", "bcrypt:..."). Several
	// let a secret be rotated without downtime. A plain-text secret is
	// refused. At least one hash, one of PublicKeys, a JWKSURI, a
	// TLSClientAuth, one of CertificateThumbprints or one of
	// FederatedCredentials is required. A secret is at most 100
	// characters.
	SecretHashes []string
	// PublicKeys verify the client's signed assertions (private_key_jwt,
	// RFC 7523 §2.2), beside or instead of secrets. At most 8; several let
	// a key be rotated without downtime. Every refused assertion of an alg,
	// whoever sends it, costs as many signature checks as the most keys of
	// that alg any client or API resource has (so that an unknown client
	// and a wrong key cost the same), at the size of its largest RSA key: 8
	// keys here make each cost 8, up to 8 RSA checks at 4096 bits. A
	// success costs the checks of this client's keys up to the one that
	// signed it.
	PublicKeys []ClientKeyConfig
	// JWKSURI is where the client publishes the keys of its
	// private_key_jwt assertions, instead of PublicKeys (RFC 7591 §2: not
	// both): an https URL, fetched when an assertion needs it and again
	// for a kid it lacks, so that the client rotates its keys without a
	// reload. docs/SECURITY.md says what it may name.
	JWKSURI string
	// FederatedCredentials are the workload identities that authenticate
	// the client (a token of a TrustedIssuer as its client_assertion): at
	// most 20, none another client's.
	FederatedCredentials []FederatedCredential
	// MaxAssertionAge bounds how old (by its iat) a workload's token may
	// be to authenticate the client: such tokens are reused until
	// renewed, so a token is accepted again and again within it. A whole
	// number of seconds; zero means an hour; at most a day.
	MaxAssertionAge time.Duration
	// AllowDefaultServiceAccount lets a Kubernetes namespace's "default"
	// service account be one of FederatedCredentials, which is refused
	// otherwise: every pod without an account of its own runs as it.
	AllowDefaultServiceAccount bool
	// GrantTypes the client may use: "client_credentials", and
	// "urn:ietf:params:oauth:grant-type:jwt-bearer" for a client whose
	// federated credentials' tokens a trusted issuer lets be exchanged
	// (TrustedIssuerConfig.JWTBearerGrant). Empty means
	// ["client_credentials"].
	GrantTypes []string
	// Scopes the client may ask for; at least one, each a scope the
	// service knows (pd_AdminWebApi, pd_ConnectWebApi, or one of
	// Config.Scopes).
	Scopes []string
	// AccessTokenLifetime is how long the client's tokens live: a whole
	// number of seconds, such as 15*time.Minute (expires_in says it in
	// seconds). Zero means an hour; at most a day (24*time.Hour): a bearer
	// token that lives longer outlives any revocation.
	AccessTokenLifetime time.Duration
	// Audience is the "aud" of the client's tokens. Empty means
	// ["{issuer}/resources"]. A request may narrow it with resource
	// parameters (RFC 8707), each one of these. A reload that takes an
	// audience ends, at introspection, the client's tokens that name it.
	Audience []string
	// ScopeWhenOmitted overrides Config.ScopeWhenOmitted for this client:
	// "refuse" or "all". Empty means the Config's.
	ScopeWhenOmitted string
	// Claims are added to the client's tokens, each as "client_" and its
	// Type (IdentityServer's client claims): {Type: "tenant", Value:
	// "acme"} gives "client_tenant": "acme"; several of one type give an
	// array. Types are letters, digits, "_", "-" and "."; "id" is taken.
	Claims []ClientClaim
	// RequireDPoP refuses the client's token requests that carry no DPoP
	// proof (400 invalid_request): its tokens are always bound to a key. A
	// reload that sets it ends the client's bearer tokens at introspection.
	RequireDPoP bool
	// AccessTokenType is the kind of the client's access tokens: "jwt"
	// (the default), signed and checked by any validator with the JWKS,
	// or "reference", an opaque handle that an API checks at the
	// introspection endpoint and that the client can revoke at
	// {issuer}/connect/revocation (RFC 7009), with effect at the next
	// check. The issuer keeps a reference token's grant in its token
	// store (WithTokenStore), under the token's SHA-256.
	AccessTokenType string

	// TLSClientAuth, when set, authenticates the client by mutual TLS
	// (RFC 8705 §2.1, tls_client_auth): a certificate of one of the CAs
	// of Config.MTLS.ClientCAs, with clientAuth use, valid now, whose
	// subject or one of whose names is the one set here. The request
	// carries client_id in its body and no other credential.
	TLSClientAuth TLSClientAuth
	// CertificateThumbprints authenticate the client by mutual TLS with a
	// certificate of its own (RFC 8705 §2.2, self_signed_tls_client_auth):
	// each the SHA-256 thumbprint of one, as "x5t#S256" writes it
	// (base64url) or as "openssl x509 -noout -fingerprint -sha256"
	// prints it (hex, with colons or without). A certificate of one of
	// its PublicKeys authenticates it too. The certificate's chain is not
	// checked, its validity period is. At most 8.
	CertificateThumbprints []string
	// CertificateBoundTokens binds the client's tokens to the certificate
	// its token request presents (RFC 8705 §3, cnf "x5t#S256"), whatever
	// the way it authenticates, and refuses a request without one (400
	// invalid_request), unless it carries a DPoP proof: its tokens are
	// always bound. A client that authenticates with a certificate gets
	// bound tokens without it, as IdentityServer's do.
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
	// ProofMaxAge is how old a proof may be (by its iat), and so how long
	// its jti is remembered to refuse a replay, in the memory of
	// ClientAssertions.ReplayCacheBytes (or the shared limiter store), and
	// the nonce period. Zero means one minute; from a second to 5
	// minutes.
	ProofMaxAge time.Duration
	// RequireNonce makes every proof carry the issuer's current nonce
	// (RFC 9449 §8): a proof without it is answered 400 use_dpop_nonce
	// with the nonce in DPoP-Nonce, and the client retries. A nonce lasts
	// ProofMaxAge, and the one before it is still accepted. Every replica
	// of a configuration makes the same nonces, from the signing key,
	// with no shared state.
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
	// MaxLifetime is how far ahead an assertion's exp may be: an
	// assertion living longer is refused, so that its jti need not be
	// remembered long. Zero means 5 minutes; at most an hour (authlib's
	// default lifetime). An assertion is at most 8 KiB.
	MaxLifetime time.Duration
	// ReplayCacheBytes is the memory that remembers the jti of accepted
	// assertions until they expire, allocated once: 16 bytes each (they
	// are hashed). Only an assertion with a valid signature adds one, so
	// it fills only as fast as the clients holding keys ask for tokens;
	// when it is full, an assertion is refused with 429 slow_down rather
	// than an unexpired jti forgotten. A reload that changes it forgets
	// none either: the jtis the new size has no room for are kept beside
	// it until they expire. Zero means 256 KiB (16,384 entries);
	// otherwise from 4 KiB to 64 MiB.
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
	// ClientCAs are PEM files of the certificate authorities whose
	// certificates tls_client_auth clients present: a client's certificate
	// must chain to one of them (through the intermediates it sends).
	// New and Reload read them; a relative path is read from Config.Dir.
	ClientCAs []string
	// ClientCACerts are more of them, for a Config built in code.
	ClientCACerts []*x509.Certificate
	// Alias is the issuer URL at a listener of its own that asks clients
	// for a certificate, such as "https://mtls.example.com/ids": the
	// discovery document then names its token, introspection and
	// revocation endpoints in mtls_endpoint_aliases (RFC 8705 §5), which
	// mutual TLS clients use, so that the main listener need not ask
	// anyone for a certificate. An https URL whose path is the issuer
	// URL's; the issuer serves it as its own (a DPoP proof may name
	// either). Empty: no alias.
	Alias string
	// CertificateHeader is the request header in which a TLS-terminating
	// proxy in front of the issuer forwards its client's certificate, in
	// one of the forms middleware.ForwardedCert reads (nginx's
	// $ssl_client_escaped_cert, PEM, base64 DER, Envoy's XFCC). It is
	// read only from TrustedProxies, and from them alone: their own
	// connection certificate is not their client's. Set both or neither.
	CertificateHeader string
	TrustedProxies    []netip.Prefix
}

// TLSClientAuth names the certificate of a tls_client_auth client (RFC
// 8705 §2.1.2): set exactly one field.
type TLSClientAuth struct {
	// SubjectDN is its subject, in RFC 4514's form, the most specific RDN
	// first ("CN=demo-mtls,O=Example"); .NET's form, as IdentityServer's
	// X509Name secrets hold it ("CN=demo-mtls, O=Example"), is read too.
	// Types match by OID and values exactly, case included.
	SubjectDN string
	// SANDNS, SANURI and SANEmail are a dNSName, a
	// uniformResourceIdentifier or an rfc822Name it holds among its
	// subject alternative names: DNS names without regard to case, an
	// email's domain too, a URI exactly.
	SANDNS   string
	SANURI   string
	SANEmail string
	// SANIP is an iPAddress it holds, compared as an address (RFC 5952
	// §8): "2001:db8::1" is "2001:0db8:0:0:0:0:0:1".
	SANIP string
}
