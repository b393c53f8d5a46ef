package issuer

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Config is the issuer's configuration, as read from its JSON file by
// LoadConfig or built in code. The package documentation describes the
// file field by field.
type Config struct {
	// Issuer is the issuer URL, e.g. "https://host/ids": the "iss" of every
	// token, and the path prefix the issuer serves under.
	Issuer string `json:"issuer"`

	// Keys are the signing keys. The first one signs; all are published in
	// the JWKS. Empty means an ephemeral ES256 key made at start, for
	// development only.
	Keys []KeyConfig `json:"keys,omitempty"`

	// Clients are the registered clients.
	Clients []ClientConfig `json:"clients"`

	// ScopeFormat is how the scope claim is written: "string" (space
	// delimited, RFC 9068; the default) or "array" (IdentityServer's form).
	ScopeFormat string `json:"scopeFormat,omitempty"`

	// JWKSMaxAgeSeconds is the Cache-Control max-age of the JWKS and
	// discovery answers. Zero means 300.
	JWKSMaxAgeSeconds int `json:"jwksMaxAgeSeconds,omitempty"`

	// Limits bound the token endpoint.
	Limits Limits `json:"limits,omitzero"`

	// SCIMTenants are the SCIM tenants and their token hashes. The issuer
	// does not use them; they share this file so one reload updates both
	// (see middleware.Tenants).
	SCIMTenants []TenantConfig `json:"scimTenants,omitempty"`

	// Logger receives the issuer's log lines. Nil logs nothing. No line
	// holds a secret or a token. New reads it; Reload keeps New's.
	Logger *slog.Logger `json:"-"`

	// Now is the clock, for tests. Nil means time.Now.
	Now func() time.Time `json:"-"`

	// Set by Validate.
	keys    []*keys.Key
	clients map[string]*client
	tenants map[string][]secret.Hash
}

// KeyConfig is one signing key.
type KeyConfig struct {
	// File is a PEM file holding a private key (PKCS #8, SEC 1 or PKCS #1).
	// A relative path is read from the configuration file's folder.
	File string `json:"file,omitempty"`
	// Alg is the signing algorithm: "ES256" (P-256 keys), "RS256" (RSA of
	// 2048 bits or more) or "EdDSA" (Ed25519). Empty means the one that
	// fits the key's type.
	Alg string `json:"alg,omitempty"`
	// Key is the private key itself, for a Config built in code instead
	// of File.
	Key crypto.Signer `json:"-"`
}

// ClientConfig is one registered client.
type ClientConfig struct {
	// ClientID identifies the client. Required and unique.
	ClientID string `json:"clientId"`
	// SecretHashes are the hashes of the client's secrets, in the forms of
	// package secret ("sha256:...", "sha512:...", "bcrypt:..."). Several
	// let a secret be rotated without downtime. A plain-text secret is
	// refused.
	SecretHashes []string `json:"secretHashes"`
	// GrantTypes the client may use. Empty means ["client_credentials"].
	GrantTypes []string `json:"grantTypes,omitempty"`
	// Scopes the client may ask for; each must be a scope the service
	// knows (pd_AdminWebApi, pd_ConnectWebApi).
	Scopes []string `json:"scopes"`
	// AccessTokenLifetime in seconds. Zero means 3600.
	AccessTokenLifetime int `json:"accessTokenLifetime,omitempty"`
	// Audience is the "aud" of the client's tokens. Empty means
	// "{issuer}/resources".
	Audience []string `json:"audience,omitempty"`
}

// Limits bound the token endpoint. Zero values take the defaults.
//
// Failed authentications are limited before the secret is checked: each
// attempt reserves one failure from its budgets and gives it back if the
// secret is right, so concurrent guesses cannot multiply a budget, and an
// attempt that was checked is charged even if its request ends early. The
// budgets are per address, per client ID, and per client ID and address.
// An address is answered 429 slow_down once it has failed
// FailedAttemptsPerAddress times in the window, or once it has failed for
// a client whose FailedAttemptsPerClient are spent. Someone else's
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
}

// Input bounds, IdentityServer's InputLengthRestrictions: longer values
// are refused with 400 invalid_request before anything is remembered.
const (
	MaxClientIDLength = 100 // characters of a client ID
	MaxSecretLength   = 100 // characters of a client secret
	MaxScopeLength    = 300 // characters of the scope parameter
)

// TenantConfig is one SCIM tenant.
type TenantConfig struct {
	// Tenant is the tenant's name, the {tenant} of the SCIM path.
	Tenant string `json:"tenant"`
	// TokenHashes are the hashes of the tenant's bearer tokens, in the
	// forms of package secret. Several allow rotation.
	TokenHashes []string `json:"tokenHashes"`
}

// ConfigError names the field of the configuration that is wrong and why.
type ConfigError struct {
	Field  string // e.g. "clients[1].clientId"
	Reason string
}

func (e *ConfigError) Error() string { return "issuer config: " + e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// LoadConfig reads and checks a configuration file. It returns an error
// that names the first wrong field; it never returns a half-checked
// Config.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data, filepath.Dir(path))
}

// ParseConfig reads and checks a configuration from JSON. Relative key
// file paths are read from dir.
func ParseConfig(data []byte, dir string) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fieldErr("(file)", "invalid JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return nil, fieldErr(typ.Field, "wrong type: want %s", typ.Type)
		}
		return nil, fieldErr("(file)", "%v", err)
	}
	if dec.More() {
		return nil, fieldErr("(file)", "more than one JSON value")
	}
	for i := range c.Keys {
		if f := c.Keys[i].File; f != "" && !filepath.IsAbs(f) {
			c.Keys[i].File = filepath.Join(dir, f)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks c and reads its key files. LoadConfig and New call it;
// call it yourself to check a Config built in code.
func (c *Config) Validate() error {
	if c.Issuer == "" {
		return fieldErr("issuer", "required")
	}
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fieldErr("issuer", "want an absolute http(s) URL without query or fragment, got %q", c.Issuer)
	}
	switch c.ScopeFormat {
	case "", "string", "array":
	default:
		return fieldErr("scopeFormat", `want "string" or "array", got %q`, c.ScopeFormat)
	}
	if c.JWKSMaxAgeSeconds < 0 {
		return fieldErr("jwksMaxAgeSeconds", "negative")
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	ks := make([]*keys.Key, 0, len(c.Keys))
	seenKID := map[string]bool{}
	for i, kc := range c.Keys {
		k, err := kc.load()
		if err != nil {
			return fieldErr(fmt.Sprintf("keys[%d]", i), "%v", err)
		}
		if seenKID[k.KID] {
			return fieldErr(fmt.Sprintf("keys[%d]", i), "the same key is listed twice")
		}
		seenKID[k.KID] = true
		ks = append(ks, k)
	}
	clients := make(map[string]*client, len(c.Clients))
	for i, cc := range c.Clients {
		cl, err := cc.compile(fmt.Sprintf("clients[%d]", i))
		if err != nil {
			return err
		}
		if clients[cl.id] != nil {
			return fieldErr(fmt.Sprintf("clients[%d].clientId", i), "duplicate client ID %q", cl.id)
		}
		clients[cl.id] = cl
	}
	tenants := make(map[string][]secret.Hash, len(c.SCIMTenants))
	for i, tc := range c.SCIMTenants {
		f := fmt.Sprintf("scimTenants[%d]", i)
		if tc.Tenant == "" {
			return fieldErr(f+".tenant", "empty")
		}
		if _, dup := tenants[tc.Tenant]; dup {
			return fieldErr(f+".tenant", "duplicate tenant %q", tc.Tenant)
		}
		hashes, err := parseHashes(f+".tokenHashes", tc.TokenHashes)
		if err != nil {
			return err
		}
		tenants[tc.Tenant] = hashes
	}
	c.keys, c.clients, c.tenants = ks, clients, tenants
	return nil
}

// Tenants returns the SCIM tenants' token hashes, for
// middleware.NewTenants or (*middleware.Tenants).Replace. Call it on a
// validated Config.
func (c *Config) Tenants() map[string][]secret.Hash { return c.tenants }

func (l Limits) validate() error {
	for name, v := range map[string]int64{
		"maxBodyBytes": l.MaxBodyBytes, "failedAttemptsPerClient": int64(l.FailedAttemptsPerClient),
		"failedAttemptsPerAddress": int64(l.FailedAttemptsPerAddress), "failureWindowSeconds": int64(l.FailureWindowSeconds),
		"limiterMaxBytes": int64(l.LimiterMaxBytes), "maxConcurrentSlowHashes": int64(l.MaxConcurrentSlowHashes),
		"failureFloorMillis": int64(l.FailureFloorMillis) + 1, // -1 is allowed
	} {
		if v < 0 {
			return fieldErr("limits."+name, "negative")
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
	if _, err := clientip.ParsePrefixes(l.TrustedProxies); err != nil {
		return fieldErr("limits.trustedProxies", "%v", err)
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = 16 << 10
	}
	def(&l.FailedAttemptsPerClient, 10)
	def(&l.FailedAttemptsPerAddress, 100)
	def(&l.FailureWindowSeconds, 60)
	def(&l.LimiterMaxBytes, 1<<20)
	return l
}

func (kc KeyConfig) load() (*keys.Key, error) {
	priv := kc.Key
	switch {
	case priv != nil && kc.File != "":
		return nil, errors.New("set file or a key in code, not both")
	case priv == nil && kc.File == "":
		return nil, errors.New("file: required")
	case priv == nil:
		data, err := os.ReadFile(kc.File)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		priv, err = keys.ParsePEM(data)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", kc.File, err)
		}
	}
	alg := kc.Alg
	if alg == "" {
		alg = keys.AlgFor(priv)
	}
	switch alg {
	case "ES256", "RS256", "EdDSA":
	default:
		return nil, fmt.Errorf(`alg: want "ES256", "RS256" or "EdDSA", got %q`, alg)
	}
	return keys.New(alg, priv)
}

// client is a validated client registration.
type client struct {
	id          string
	hashes      []secret.Hash
	clientCreds bool
	scopes      scope.Set
	lifetime    time.Duration
	audience    []string
}

func (cc ClientConfig) compile(f string) (*client, error) {
	if cc.ClientID == "" {
		return nil, fieldErr(f+".clientId", "empty")
	}
	if utf8.RuneCountInString(cc.ClientID) > MaxClientIDLength {
		return nil, fieldErr(f+".clientId", "longer than %d characters", MaxClientIDLength)
	}
	f = fmt.Sprintf("%s (%q)", f, cc.ClientID)
	if len(cc.SecretHashes) == 0 {
		return nil, fieldErr(f+".secretHashes", "at least one hash is required")
	}
	hashes, err := parseHashes(f+".secretHashes", cc.SecretHashes)
	if err != nil {
		return nil, err
	}
	cl := &client{id: cc.ClientID, hashes: hashes}
	if len(cc.GrantTypes) == 0 {
		cl.clientCreds = true
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
		if !scope.Known(s) {
			return nil, fieldErr(fmt.Sprintf("%s.scopes[%d]", f, i), "unknown scope %q (known: %v)", s, scope.All())
		}
	}
	cl.scopes = scope.NewSet(cc.Scopes...)
	switch {
	case cc.AccessTokenLifetime < 0:
		return nil, fieldErr(f+".accessTokenLifetime", "negative")
	case cc.AccessTokenLifetime == 0:
		cl.lifetime = time.Hour
	default:
		cl.lifetime = time.Duration(cc.AccessTokenLifetime) * time.Second
	}
	for i, a := range cc.Audience {
		if a == "" {
			return nil, fieldErr(fmt.Sprintf("%s.audience[%d]", f, i), "empty")
		}
	}
	cl.audience = cc.Audience
	return cl, nil
}

func parseHashes(f string, in []string) ([]secret.Hash, error) {
	if len(in) == 0 {
		return nil, fieldErr(f, "at least one hash is required")
	}
	out := make([]secret.Hash, 0, len(in))
	for i, s := range in {
		h, err := secret.Parse(s)
		if err != nil {
			// The value may be a secret pasted in plain text: never echo it.
			return nil, fieldErr(fmt.Sprintf("%s[%d]", f, i), "%v", err)
		}
		out = append(out, h)
	}
	return out, nil
}
