package issuer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/scope"
)

// compileParts validates c and compiles what its fields decide, defaults
// applied, into the parts of a state: all of it but the keys and the
// files, which Issuer.compile reads, and the discovery document, which
// withRegistered writes once the roster is whole. Errors name each field
// as the configuration file does.
func (c *Config) compileParts() (*state, error) {
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
		if err := kc.validate(); err != nil {
			return nil, fieldErr(fmt.Sprintf("keys[%d]", i), "%v", err)
		}
	}
	d := c.withDefaults()
	st := &state{}
	if st.face, err = d.compileFace(u); err != nil {
		return nil, err
	}
	if st.guards, err = d.compileGuards(); err != nil {
		return nil, err
	}
	if st.proofs, err = d.compileProofs(u); err != nil {
		return nil, err
	}
	k, err := d.compiler()
	if err != nil {
		return nil, err
	}
	st.trust = k.trust
	if st.roster, err = k.compileRoster(c); err != nil {
		return nil, err
	}
	st.keyring = &keyring{}
	if st.plan, err = d.keyPlan(); err != nil {
		return nil, err
	}
	return st, nil
}

// compileFace compiles how the issuer at u speaks, d's defaults applied.
func (d *Config) compileFace(u *url.URL) (*face, error) {
	switch d.Profile {
	case profileRFC, profileIdentityServer:
	default:
		return nil, fieldErr("profile", `want "rfc" or "identityserver", got %q`, d.Profile)
	}
	switch d.ScopeFormat {
	case "string", "array":
	default:
		return nil, fieldErr("scopeFormat", `want "string" or "array", got %q`, d.ScopeFormat)
	}
	if err := validateSeconds("", "jwksMaxAgeSeconds", d.JWKSMaxAge); err != nil {
		return nil, err
	}
	if d.ValidatorRefresh < 0 {
		return nil, fieldErr("validatorRefreshSeconds", "negative")
	}
	return &face{
		issuer:         d.Issuer,
		prefix:         strings.TrimSuffix(u.Path, "/"),
		identityServer: d.Profile == profileIdentityServer,
		scopeArray:     d.ScopeFormat == "array",
		mcpClients:     d.MCPClients,
		cacheHeader:    "public, max-age=" + strconv.FormatInt(int64(d.JWKSMaxAge/time.Second), 10),
		maxBody:        d.MaxBodyBytes,
		maxBodyText:    strconv.FormatInt(d.MaxBodyBytes, 10),
		misMounted:     new(atomic.Bool),
	}, nil
}

// compileProofs compiles what a request to the issuer at u may prove
// beside a secret, d's defaults applied: the files of its CAs are
// Issuer.compile's to read.
func (d *Config) compileProofs(u *url.URL) (*proofs, error) {
	if err := d.ClientAssertions.validate(); err != nil {
		return nil, err
	}
	if a := d.DPoP.ProofMaxAge; a < time.Second || a > 5*time.Minute {
		return nil, fieldErr("dpop.proofMaxAgeSeconds", "want 1 to 300 seconds (0: 60), got %v", d.DPoP.ProofMaxAge)
	}
	mtls, err := d.MTLS.compile(u)
	if err != nil {
		return nil, err
	}
	return &proofs{assertionLifetime: d.ClientAssertions.MaxLifetime, dpopWindow: d.DPoP.ProofMaxAge, dpopNonces: d.DPoP.RequireNonce, mtls: mtls}, nil
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

// compileGuards compiles what bounds the askers, c's defaults applied,
// naming the first bad limit in the order of the file's fields, so that a
// file with two bad values is always told of the same one.
func (c *Config) compileGuards() (*guards, error) {
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
			return nil, fieldErr("limits."+f.name, "negative")
		}
	}
	switch {
	case l.FailureWindow > 24*time.Hour:
		return nil, fieldErr("limits.failureWindowSeconds", "at most 86400 (a day)")
	case v.FailureFloor > 10*time.Second:
		return nil, fieldErr("limits.failureFloorMillis", "at most 10000 (10 seconds)")
	case l.MemoryBytes > 1<<30:
		return nil, fieldErr("limits.limiterMaxBytes", "at most %d", 1<<30)
	case l.MemoryBytes < 4<<10:
		return nil, fieldErr("limits.limiterMaxBytes", "at least 4096 (or 0 for the default)")
	}
	if err := clientip.CheckHeader(l.TrustedProxyHeader); err != nil {
		return nil, fieldErr("limits.trustedProxyHeader", "%v", err)
	}
	if l.TrustedProxyHeader == "" && len(l.TrustedProxies) > 0 {
		return nil, fieldErr("limits.trustedProxies", "set trustedProxyHeader too")
	}
	for i, p := range l.NAT64Prefixes {
		if err := clientip.CheckNAT64(p); err != nil {
			return nil, fieldErr("limits.nat64Prefixes", "[%d]: %v", i, err)
		}
	}
	g := &guards{
		addrs:       clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: l.TrustedProxies, NAT64: l.NAT64Prefixes},
		budget:      l.Budget(),
		verifierCfg: c.Verifier,
		replayBytes: c.ClientAssertions.ReplayCacheBytes,
	}
	g.limiterCfg = limiterConfig{budget: g.budget, bytes: l.MemoryBytes}
	return g, nil
}

// validate refuses bounds of assertions out of range.
func (a AssertionConfig) validate() error {
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

// readFile reads a file the configuration names, a relative path read
// from dir: the one reader of the signing keys, the clients' public keys
// and the CAs. It returns the path it read, for errors.
func readFile(dir, path string) (string, []byte, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	data, err := os.ReadFile(path)
	return path, data, err
}

// discoveryDocument is the discovery document of st's configuration:
// what the issuer serves at discoveryPath and MetadataHandler serves
// where RFC 8414 puts it. Each endpoint that lists private_key_jwt lists
// the algorithms of its assertions beside it, as RFC 8414 §2 requires:
// one authentication serves the three, so one list.
func (st *state) discoveryDocument() ([]byte, error) {
	methods := authMethods
	doc := map[string]any{
		"issuer":                   st.issuer,
		"token_endpoint":           st.issuer + tokenPath,
		"jwks_uri":                 st.issuer + jwksPath,
		"grant_types_supported":    []string{"client_credentials"},
		"scopes_supported":         scope.All(),
		"response_types_supported": []string{"token"},
		"token_endpoint_auth_signing_alg_values_supported":         jws.Algorithms,
		"introspection_endpoint":                                   st.issuer + introspectPath,
		"introspection_endpoint_auth_signing_alg_values_supported": jws.Algorithms,
		"revocation_endpoint":                                      st.issuer + revocationPath,
		"revocation_endpoint_auth_signing_alg_values_supported":    jws.Algorithms,
		"dpop_signing_alg_values_supported":                        dpop.Algs,
	}
	if st.mtlsUsed() {
		// RFC 8705 §2.1.1, §2.2.1, §3.3 and §5, as IdentityServer lists
		// them with mutual TLS on.
		methods = append(slices.Clip(authMethods), "tls_client_auth")
		if st.mtls.selfSignedReach() {
			methods = append(methods, "self_signed_tls_client_auth")
		}
		doc["tls_client_certificate_bound_access_tokens"] = true
		if a := st.mtls.alias; a != "" {
			doc["mtls_endpoint_aliases"] = map[string]string{
				"token_endpoint":         a + tokenPath,
				"introspection_endpoint": a + introspectPath,
				"revocation_endpoint":    a + revocationPath,
			}
		}
	}
	if st.mcpClients {
		doc["authorization_endpoint"] = st.issuer + authorizePath
		doc["code_challenge_methods_supported"] = []string{"S256"}
	}
	for _, e := range []string{"token", "introspection", "revocation"} {
		doc[e+"_endpoint_auth_methods_supported"] = methods
	}
	st.trust.discovery(doc)
	return json.Marshal(doc)
}

// compile compiles m's fields, those the file names under "mtls", for an
// issuer at issuerURL; the CA files are loadCAs's to read.
func (m MTLSConfig) compile(issuerURL *url.URL) (mtlsState, error) {
	st := mtlsState{enabled: len(m.ClientCAs) > 0 || len(m.ClientCACerts) > 0 || m.Alias != ""}
	for i, c := range m.ClientCACerts {
		if c == nil {
			return st, fieldErr(fmt.Sprintf("mtls.clientCACerts[%d]", i), "nil")
		}
	}
	if m.Alias != "" {
		u, err := url.Parse(m.Alias)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			strings.TrimSuffix(u.Path, "/") != strings.TrimSuffix(issuerURL.Path, "/") {
			return st, fieldErr("mtls.alias", "want an https URL whose path is the issuer's (%q), without query or fragment, got %q", issuerURL.Path, m.Alias)
		}
		st.alias = strings.TrimSuffix(m.Alias, "/")
	}
	if m.CertificateHeader == "" && len(m.TrustedProxies) == 0 {
		return st, nil
	}
	src, err := clientcert.NewSource(m.CertificateHeader, m.TrustedProxies)
	if se := (*clientcert.SettingError)(nil); errors.As(err, &se) {
		field := "mtls.trustedProxies"
		if se.Field == "Header" {
			field = "mtls.certificateHeader"
		}
		return st, fieldErr(field, "%s", se.Reason)
	}
	st.source, st.forwarded = src, true
	return st, nil
}
