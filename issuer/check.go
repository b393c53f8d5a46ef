package issuer

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/keys"
)

// check validates c and returns what its fields decide, defaults applied:
// all of the issuer's state but the keys, which compile reads. Errors
// name each field as the configuration file does.
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
	case profileRFC, profileIdentityServer:
	default:
		return nil, fieldErr("profile", `want "rfc" or "identityserver", got %q`, c.Profile)
	}
	switch d.ScopeFormat {
	case "string", "array":
	default:
		return nil, fieldErr("scopeFormat", `want "string" or "array", got %q`, c.ScopeFormat)
	}
	if err := checkSeconds("jwksMaxAgeSeconds", d.JWKSMaxAge); err != nil {
		return nil, err
	}
	if d.ValidatorRefresh < 0 {
		return nil, fieldErr("validatorRefreshSeconds", "negative")
	}
	if err := d.checkLimits(); err != nil {
		return nil, err
	}
	if err := checkScopeWhenOmitted("scopeWhenOmitted", d.ScopeWhenOmitted); err != nil {
		return nil, err
	}
	if err := d.ClientAssertions.check(); err != nil {
		return nil, err
	}
	if a := d.DPoP.ProofMaxAge; a < time.Second || a > 5*time.Minute {
		return nil, fieldErr("dpop.proofMaxAgeSeconds", "want 1 to 300 seconds (0: 60), got %v", c.DPoP.ProofMaxAge)
	}
	k, err := d.compiler()
	if err != nil {
		return nil, err
	}
	mtls, err := d.MTLS.check(u)
	if err != nil {
		return nil, err
	}
	st, err := k.compileClients(c)
	if err != nil {
		return nil, err
	}
	if st.plan, err = d.keyPlan(); err != nil {
		return nil, err
	}
	l := d.Limits
	st.issuer = d.Issuer
	st.prefix = strings.TrimSuffix(u.Path, "/")
	st.identityServer = d.Profile == profileIdentityServer
	st.scopeArray = d.ScopeFormat == "array"
	st.cacheHeader = "public, max-age=" + strconv.FormatInt(int64(d.JWKSMaxAge/time.Second), 10)
	st.maxBody, st.maxBodyText = d.MaxBodyBytes, strconv.FormatInt(d.MaxBodyBytes, 10)
	st.addrs = clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: l.TrustedProxies, NAT64: l.NAT64Prefixes}
	st.budget = l.Budget()
	st.limiterCfg = limiterConfig{budget: st.budget, bytes: l.MemoryBytes}
	st.verifierCfg = d.Verifier
	st.assertionLifetime = d.ClientAssertions.MaxLifetime
	st.replayBytes = d.ClientAssertions.ReplayCacheBytes
	st.dpopWindow, st.dpopNonces = d.DPoP.ProofMaxAge, d.DPoP.RequireNonce
	st.mtls = mtls
	return st, nil
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
	defTime := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	c.Issuer = strings.TrimSuffix(c.Issuer, "/")
	if c.Profile == "" {
		c.Profile = profileRFC
	}
	ids := c.Profile == profileIdentityServer
	if c.ScopeFormat == "" {
		c.ScopeFormat = map[bool]string{true: "array", false: "string"}[ids]
	}
	defTime(&c.JWKSMaxAge, 5*time.Minute)
	defTime(&c.ValidatorRefresh, 5*time.Minute)
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 16 << 10
	}
	def(&c.Limits.MemoryBytes, 1<<20)
	if c.ScopeWhenOmitted == "" {
		c.ScopeWhenOmitted = map[bool]string{true: scopeAll, false: scopeRefuse}[ids]
	}
	defTime(&c.ClientAssertions.MaxLifetime, 5*time.Minute)
	def(&c.ClientAssertions.ReplayCacheBytes, 256<<10)
	defTime(&c.DPoP.ProofMaxAge, time.Minute)
	// The budgets take their defaults in limit.Config.Budget; the
	// verifier's zero values mean "automatic" to secret.VerifierConfig.
	clients := make([]ClientConfig, len(c.Clients))
	for i, cc := range c.Clients {
		clients[i] = c.clientDefaults(cc)
	}
	c.Clients = clients
	return c
}

// clientDefaults returns cc with the defaults of c, whose own defaults
// are applied: a client of the file's, or a registered one.
func (c *Config) clientDefaults(cc ClientConfig) ClientConfig {
	if len(cc.GrantTypes) == 0 {
		cc.GrantTypes = []string{"client_credentials"}
	}
	if cc.AccessTokenLifetime == 0 {
		cc.AccessTokenLifetime = time.Hour
	}
	if len(cc.Audience) == 0 {
		cc.Audience = []string{c.Issuer + "/resources"}
	}
	if cc.ScopeWhenOmitted == "" {
		cc.ScopeWhenOmitted = c.ScopeWhenOmitted
	}
	return cc
}

// checkSeconds refuses a duration that goes on the wire in whole seconds
// (a max-age, a lifetime) and is negative or not whole.
func checkSeconds(field string, d time.Duration) error {
	switch {
	case d < 0:
		return fieldErr(field, "negative")
	case d%time.Second != 0:
		return fieldErr(field, "%v is not a whole number of seconds", d)
	}
	return nil
}

// checkLimits checks c's limits, defaults applied, naming the first bad
// one in the order of the file's fields, so that a file with two bad
// values is always told of the same one.
func (c *Config) checkLimits() error {
	l, v := c.Limits, c.Verifier
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"maxBodyBytes", c.MaxBodyBytes < 0},
		{"failedAttemptsPerClient", l.FailedAttemptsPerSubject < 0},
		{"failedAttemptsPerAddress", l.FailedAttemptsPerAddress < 0},
		{"failureWindowSeconds", l.FailureWindow < 0},
		{"limiterMaxBytes", l.MemoryBytes < 0},
		{"maxConcurrentSlowHashes", v.MaxConcurrentSlow < 0},
	} {
		if f.bad {
			return fieldErr("limits."+f.name, "negative")
		}
	}
	switch {
	case l.FailureWindow > 24*time.Hour:
		return fieldErr("limits.failureWindowSeconds", "at most 86400 (a day)")
	case v.FailureFloor > 10*time.Second:
		return fieldErr("limits.failureFloorMillis", "at most 10000 (10 seconds)")
	case l.MemoryBytes > 1<<30:
		return fieldErr("limits.limiterMaxBytes", "at most %d", 1<<30)
	case l.MemoryBytes < 4<<10:
		return fieldErr("limits.limiterMaxBytes", "at least 4096 (or 0 for the default)")
	}
	if err := clientip.CheckHeader(l.TrustedProxyHeader); err != nil {
		return fieldErr("limits.trustedProxyHeader", "%v", err)
	}
	if l.TrustedProxyHeader == "" && len(l.TrustedProxies) > 0 {
		return fieldErr("limits.trustedProxies", "set trustedProxyHeader too")
	}
	for i, p := range l.NAT64Prefixes {
		if err := clientip.CheckNAT64(p); err != nil {
			return fieldErr("limits.nat64Prefixes", "[%d]: %v", i, err)
		}
	}
	return nil
}

func (a AssertionConfig) check() error {
	switch {
	case a.MaxLifetime < 0:
		return fieldErr("clientAssertions.maxLifetimeSeconds", "negative")
	case a.MaxLifetime > time.Hour:
		return fieldErr("clientAssertions.maxLifetimeSeconds", "at most 3600 (an hour)")
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
