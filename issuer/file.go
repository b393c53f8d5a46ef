package issuer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/idsauth/idsauth/internal/clientip"
)

// The configuration file is one JSON object whose shape is its own, apart
// from the Go Config: every member of every object of the file is listed
// below, by its name in the file, with where its value goes in a Config
// and in which unit (a duration is a whole number of seconds in the file,
// a key's times are RFC 3339 text, trusted proxies are text). The decoder
// walks the file with this shape in hand, so that it names a bad member by
// its place without asking encoding/json where its error was.

// file is the shape of the configuration file, decoded into c.
func (c *Config) file() object {
	l := &c.Limits
	return object{
		{"issuer", &c.Issuer},
		{"keys", objects(&c.Keys, (*KeyConfig).file, nil)},
		{"ephemeralKey", &c.EphemeralKey},
		{"clients", objects(&c.Clients, (*ClientConfig).file, clientIDOf)},
		{"scopes", &c.Scopes},
		{"profile", &c.Profile},
		{"scopeFormat", &c.ScopeFormat},
		{"mcpClients", &c.MCPClients},
		{"jwksMaxAgeSeconds", seconds{&c.JWKSMaxAge}},
		{"validatorRefreshSeconds", seconds{&c.ValidatorRefresh}},
		{"limits", object{
			{"maxBodyBytes", &c.MaxBodyBytes},
			{"failedAttemptsPerClient", &l.FailedAttemptsPerSubject},
			{"failedAttemptsPerAddress", &l.FailedAttemptsPerAddress},
			{"failureWindowSeconds", seconds{&l.FailureWindow}},
			{"limiterMaxBytes", &l.MemoryBytes},
			{"failureFloorMillis", floorMillis{&c.Verifier.FailureFloor}},
			{"maxConcurrentSlowHashes", &c.Verifier.MaxConcurrentSlow},
			{"trustedProxyHeader", &l.TrustedProxyHeader},
			{"trustedProxies", prefixes{&l.TrustedProxies, clientip.ParsePrefixes}},
			{"nat64Prefixes", prefixes{&l.NAT64Prefixes, parsePrefixes}},
		}},
		{"scopeWhenOmitted", &c.ScopeWhenOmitted},
		{"apiResources", objects(&c.APIResources, (*APIResourceConfig).file, nil)},
		{"dpop", object{
			{"proofMaxAgeSeconds", seconds{&c.DPoP.ProofMaxAge}},
			{"requireNonce", &c.DPoP.RequireNonce},
		}},
		{"clientAssertions", object{
			{"maxLifetimeSeconds", seconds{&c.ClientAssertions.MaxLifetime}},
			{"replayCacheBytes", &c.ClientAssertions.ReplayCacheBytes},
			{"allowLoopbackJwksUri", &c.ClientAssertions.AllowLoopbackJWKS},
		}},
		{"trustedIssuers", objects(&c.TrustedIssuers, (*TrustedIssuerConfig).file, nil)},
		{"mtls", object{
			{"clientCAs", &c.MTLS.ClientCAs},
			{"alias", &c.MTLS.Alias},
			{"certificateHeader", &c.MTLS.CertificateHeader},
			{"trustedProxies", prefixes{&c.MTLS.TrustedProxies, clientip.ParsePrefixes}},
		}},
	}
}

// tlsClientAuth is the shape of a tlsClientAuth object: RFC 8705
// §2.1.2's metadata, tls_client_auth_subject_dn and the rest, without
// their prefix.
func tlsClientAuth(a *TLSClientAuth) object {
	return object{
		{"subjectDn", &a.SubjectDN},
		{"sanDns", &a.SANDNS},
		{"sanUri", &a.SANURI},
		{"sanIp", &a.SANIP},
		{"sanEmail", &a.SANEmail},
	}
}

func (k *KeyConfig) file() object {
	return object{
		{"file", &k.File},
		{"alg", &k.Alg},
		{"publishAt", instant{&k.PublishAt}},
		{"signAt", instant{&k.SignAt}},
		{"retireAt", instant{&k.RetireAt}},
	}
}

func (cc *ClientConfig) file() object {
	return object{
		{"clientId", &cc.ClientID},
		{"secretHashes", &cc.SecretHashes},
		{"publicKeys", objects(&cc.PublicKeys, (*ClientKeyConfig).file, nil)},
		{"grantTypes", &cc.GrantTypes},
		{"scopes", &cc.Scopes},
		{"accessTokenLifetime", seconds{&cc.AccessTokenLifetime}},
		{"audience", &cc.Audience},
		{"scopeWhenOmitted", &cc.ScopeWhenOmitted},
		{"claims", objects(&cc.Claims, func(cl *ClientClaim) object { return object{{"type", &cl.Type}, {"value", &cl.Value}} }, nil)},
		{"requireDPoP", &cc.RequireDPoP},
		{"accessTokenType", &cc.AccessTokenType},
		{"tlsClientAuth", tlsClientAuth(&cc.TLSClientAuth)},
		{"certificateThumbprints", &cc.CertificateThumbprints},
		{"certificateBoundTokens", &cc.CertificateBoundTokens},
		{"jwksUri", &cc.JWKSURI},
		{"federatedCredentials", objects(&cc.FederatedCredentials, (*FederatedCredential).file, nil)},
		{"maxAssertionAgeSeconds", seconds{&cc.MaxAssertionAge}},
		{"allowDefaultServiceAccount", &cc.AllowDefaultServiceAccount},
	}
}

func (ac *APIResourceConfig) file() object {
	return object{
		{"name", &ac.Name},
		{"secretHashes", &ac.SecretHashes},
		{"publicKeys", objects(&ac.PublicKeys, (*ClientKeyConfig).file, nil)},
		{"scopes", &ac.Scopes},
		{"tlsClientAuth", tlsClientAuth(&ac.TLSClientAuth)},
		{"certificateThumbprints", &ac.CertificateThumbprints},
	}
}

func (kc *ClientKeyConfig) file() object {
	return object{{"file", &kc.File}, {"jwk", &kc.JWK}, {"alg", &kc.Alg}}
}

// clientIDOf is the clientId a client's object in the file holds, if it
// can be read: the errors about a client name it.
func clientIDOf(raw json.RawMessage) string {
	var named struct {
		ClientID string `json:"clientId"`
	}
	_ = json.Unmarshal(raw, &named) // best effort: it only names the client
	return named.ClientID
}

// LoadConfig reads the configuration file at path (see ParseConfig): its
// relative key file paths are read from its folder, and an error names
// it. It does not check the values or read the key files: New and Reload
// do, once.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data, filepath.Dir(path), nil)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = path
	}
	return c, err
}

// ParseConfig decodes the content of a configuration file into a Config
// whose Dir, the folder its relative key file paths are read from, is
// dir. It decodes strictly: an unknown field (with the known one it comes
// nearest, if any), a value of the wrong type or form, bad JSON or
// anything but white space after the object is a *ConfigError naming the
// field, or the line ("(file)" for the file as a whole). It does not
// check the values: New, Reload and Validate do.
//
// sections, for a file that holds settings of a service's own beside the
// issuer's, are its other top-level members by name, each decoded into
// its value (a pointer) by encoding/json, as strictly: an unknown field
// in one is named by its place. Nil means none.
func ParseConfig(data []byte, dir string, sections map[string]any) (*Config, error) {
	raw, err := oneValue(data)
	if err != nil {
		return nil, err
	}
	c := &Config{Dir: dir}
	shape := c.file()
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		shape = append(shape, member{name, section{sections[name]}})
	}
	if err := shape.decodeFile(raw, ""); err != nil {
		return nil, err
	}
	return c, nil
}

// seconds is a duration written as a whole number of seconds. One beyond
// what a Duration holds is held as the longest (or shortest) one, which
// the checks refuse as too long.
type seconds struct{ d *time.Duration }

func (s seconds) decodeFile(raw json.RawMessage, path string) error {
	var n int
	if string(raw) == "null" {
		return nil
	}
	if err := decodeValue(raw, &n, path); err != nil {
		return err
	}
	*s.d = durationOf(int64(n), time.Second)
	return nil
}

func durationOf(n int64, unit time.Duration) time.Duration {
	switch {
	case n > math.MaxInt64/int64(unit):
		return math.MaxInt64
	case n < math.MinInt64/int64(unit):
		return math.MinInt64
	}
	return time.Duration(n) * unit
}

// floorMillis is limits.failureFloorMillis: a number of milliseconds, or
// -1 for no floor at all (Verifier.FailureFloor negative).
type floorMillis struct{ d *time.Duration }

func (f floorMillis) decodeFile(raw json.RawMessage, path string) error {
	var n int
	if string(raw) == "null" {
		return nil
	}
	if err := decodeValue(raw, &n, path); err != nil {
		return err
	}
	if n < -1 {
		return fieldErr(path, "negative: want milliseconds, or -1 for none")
	}
	*f.d = durationOf(int64(n), time.Millisecond)
	return nil
}

// instant is a time written in RFC 3339, such as "2026-06-01T00:00:00Z";
// "" is none.
type instant struct{ t *time.Time }

func (in instant) decodeFile(raw json.RawMessage, path string) error {
	var s string
	if err := decodeValue(raw, &s, path); err != nil || s == "" {
		return err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.IsZero() {
		return fieldErr(path, "want an RFC 3339 time such as 2026-06-01T00:00:00Z, got %q", s)
	}
	*in.t = t
	return nil
}

// prefixes is a list of network prefixes written as text, read by parse.
type prefixes struct {
	p     *[]netip.Prefix
	parse func([]string) ([]netip.Prefix, error)
}

func (ps prefixes) decodeFile(raw json.RawMessage, path string) error {
	var in []string
	if err := decodeValue(raw, &in, path); err != nil {
		return err
	}
	out, err := ps.parse(in)
	if err != nil {
		return fieldErr(path, "%v", err)
	}
	*ps.p = out
	return nil
}

// parsePrefixes reads CIDR prefixes, each named by its index when wrong.
func parsePrefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for i, s := range in {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %v", i, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
