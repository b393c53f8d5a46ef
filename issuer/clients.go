package issuer

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/idsauth/idsauth/internal/oauthwire"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Bounds of a configuration, IdentityServer's InputLengthRestrictions
// among them: a longer client ID or secret is refused at the token
// endpoint with 400 invalid_request before anything is remembered of it.
const (
	maxClientIDLength      = 100     // characters of a client ID
	maxSecretLength        = 100     // characters of a client secret
	maxScopeLength         = 300     // characters of the scope parameter
	maxAssertionLength     = 8 << 10 // bytes of a client_assertion, refused before it is decoded
	maxClientKeys          = 8       // public keys of one client
	maxAccessTokenLifetime = time.Hour * 24
)

// compiler compiles the clients and API resources of one configuration,
// those of its file and those of a registry alike: whatever its source, a
// client takes the one path of compiler.client, an API resource that of
// compiler.api, and both the one path of their credentials.
type compiler struct {
	d       Config       // the configuration, its defaults applied
	own     scope.Set    // its scopes of its own
	haveCAs bool         // it has mtls.clientCAs, which tls_client_auth needs
	logger  *slog.Logger // the issuer's, once it compiles for one; nil: none
	aud     []string     // the default audience, shared by the clients that take it
	trust   *trust       // its trusted issuers (trust_config.go)
}

// compiler returns the compiler of d, whose defaults are applied.
func (d Config) compiler() (*compiler, error) {
	if err := validateScopeWhenOmitted("", "scopeWhenOmitted", d.ScopeWhenOmitted); err != nil {
		return nil, err
	}
	own, err := parseOwnScopes(d.Scopes)
	if err != nil {
		return nil, err
	}
	k := &compiler{d: d, own: own, haveCAs: len(d.MTLS.ClientCAs) > 0 || len(d.MTLS.ClientCACerts) > 0,
		aud: d.clientDefaults(ClientConfig{}).Audience}
	if k.trust, err = k.compileTrust(); err != nil {
		return nil, err
	}
	return k, nil
}

// compileRoster compiles the clients and API resources of the file, c's
// (before its defaults: k's are applied): the clients into r.files, which
// a build puts in the table once their key files are read.
func (k *compiler) compileRoster(c *Config) (*roster, error) {
	r := &roster{apis: make(map[string]*apiResource, len(c.APIResources)), k: k, federated: newCredIndex()}
	seen := make(map[string]bool, len(c.Clients))
	for i, cc := range c.Clients {
		cl, err := k.client(fmt.Sprintf("clients[%d]", i), cc)
		if err != nil {
			return nil, err
		}
		if seen[cl.id] {
			return nil, fieldErr(fmt.Sprintf("clients[%d].clientId", i), "duplicate client ID %q", cl.id)
		}
		seen[cl.id] = true
		if err := r.federated.add(fmt.Sprintf("clients[%d] (%q)", i, cl.id), cl); err != nil {
			return nil, err
		}
		r.files = append(r.files, fileClient{cc: cc, cl: cl})
	}
	for i, ac := range c.APIResources {
		api, err := k.api(fmt.Sprintf("apiResources[%d]", i), ac)
		if err != nil {
			return nil, err
		}
		if r.apis[api.name] != nil {
			return nil, fieldErr(fmt.Sprintf("apiResources[%d].name", i), "duplicate API resource %q", api.name)
		}
		r.apis[api.name] = api
		r.apiOrder = append(r.apiOrder, api)
	}
	return r, nil
}

// compile compiles an entry of r's table, the client it keeps, by the
// path every client takes: its epoch the record's when its registration
// gives none, and, under the identityserver profile, without an audience
// of its own, the names of the API resources of its scopes as
// IdentityServer gives them.
func (r *roster) compile(e entry) (*client, error) {
	cl, err := r.k.client("clients", e.Config)
	if err != nil {
		return nil, err
	}
	if !cl.ownEpoch {
		cl.epoch = e.Epoch
	}
	if r.k.d.Profile == profileIdentityServer && cl.defaultAud && len(r.apiOrder) > 0 {
		cl.apiAud, cl.audience = true, apiAudience(r.apiOrder, cl.scopeList)
	}
	return cl, nil
}

// client is a checked client registration: its data, and the prefix of
// its tokens once made.
type client struct {
	clientData
	// prefix is how its tokens begin, for its own audience, in the span
	// of the key set it was made for (sign.go).
	prefix atomic.Pointer[tokenPrefix]
}

// forRequest returns a copy of cl for one request to change (its keys
// fetched, its scopes capped), whose prefix is made anew.
func (cl *client) forRequest() *client { return &client{clientData: cl.clientData} }

// clientData is what a client is compiled to.
type clientData struct {
	id          string
	hashes      []secret.Hash
	keys        []clientKey // private_key_jwt
	clientCreds bool
	scopes      scope.Set
	scopeList   []string // the allowed scopes, in the configuration's order
	allScopes   bool     // a request without scope gets scopeList
	lifetime    time.Duration
	audience    []string
	reference   bool      // its access tokens are reference tokens
	requireDPoP bool      // its token requests must carry a DPoP proof
	claims      []byte    // its client_ claims as JSON members, each led by a comma; nil for none
	apiAud      bool      // its audience is its API resources' names (the identityserver profile)
	defaultAud  bool      // it has no audience of its own
	certs       *certAuth // how it authenticates by certificate (RFC 8705 §2); nil: it does not
	certBound   bool      // its tokens are bound to its certificate (RFC 8705 §3)
	// epoch is this registration of the ID, which its tokens carry (see
	// ClientConfig.Epoch); its own or, when the configuration gives none,
	// the issuer's record of the ID (epochs.go).
	epoch    uint64
	ownEpoch bool // the configuration gave epoch
	// How a key set of its own or a workload authenticates it
	// (federation.go): its keys' URL, "" for none; its federated
	// credentials; the age its workload's tokens may reach; and whether
	// one of them may be a namespace's default service account.
	jwksURI         string
	federated       []federatedCred
	maxAssertionAge time.Duration
	defaultAccount  bool
	jwtBearer       bool // it may use the JWT bearer grant
}

// checkNamed checks the ID of a client or an API resource, given in
// member of f.
func checkNamed(f, member, id string) error {
	switch {
	case id == "":
		return fieldErr(f+"."+member, "empty")
	case utf8.RuneCountInString(id) > maxClientIDLength:
		return fieldErr(f+"."+member, "longer than %d characters", maxClientIDLength)
	}
	return nil
}

// named returns err, when it is a *ConfigError of a field of f, with f
// naming id: `clients[2] ("reporting").scopes`. The name is made only for
// an error: a registry's load compiles every client it holds.
func named(err error, f, id string) error {
	if err == nil {
		return nil
	}
	var ce *ConfigError
	if errors.As(err, &ce) && strings.HasPrefix(ce.Field, f) {
		ce.Field = fmt.Sprintf("%s (%q)", f, id) + ce.Field[len(f):]
	}
	return err
}

// client checks cc, before its defaults (k applies them), f naming it
// ("clients[2]" in the file, "clients" in a registry), and compiles it.
func (k *compiler) client(f string, cc ClientConfig) (_ *client, err error) {
	if err := checkNamed(f, "clientId", cc.ClientID); err != nil {
		return nil, err
	}
	defer func() { err = named(err, f, cc.ClientID) }()
	defaultAud := len(cc.Audience) == 0
	if defaultAud {
		cc.Audience = k.aud
	}
	cc = k.d.clientDefaults(cc)
	cl, err := k.credentials(f, cc.ClientID, credentials{cc.SecretHashes, cc.PublicKeys, cc.TLSClientAuth, cc.CertificateThumbprints,
		cc.JWKSURI != "" || len(cc.FederatedCredentials) > 0})
	if err != nil {
		return nil, err
	}
	if err := k.federation(f, cc, cl); err != nil {
		return nil, err
	}
	cl.audience, cl.allScopes, cl.defaultAud = cc.Audience, cc.ScopeWhenOmitted == scopeAll, defaultAud
	cl.certBound, cl.requireDPoP = cc.CertificateBoundTokens, cc.RequireDPoP
	if cc.Epoch > maxEpoch {
		return nil, fieldErr(f+".epoch", "at most 2^53-1, which a JWT carries exactly: its tokens would be refused")
	}
	cl.epoch, cl.ownEpoch = cc.Epoch, cc.Epoch != 0
	if err := validateScopeWhenOmitted(f, "scopeWhenOmitted", cc.ScopeWhenOmitted); err != nil {
		return nil, err
	}
	for i, g := range cc.GrantTypes {
		if g == "" {
			return nil, fieldErr(fmt.Sprintf("%s.grantTypes[%d]", f, i), "empty")
		}
		cl.clientCreds = cl.clientCreds || g == "client_credentials"
	}
	if cl.scopes, err = k.scopes(f, cc.Scopes); err != nil {
		return nil, err
	}
	cl.scopeList = make([]string, 0, len(cc.Scopes))
	for _, s := range cc.Scopes {
		if !slices.Contains(cl.scopeList, s) {
			cl.scopeList = append(cl.scopeList, s)
		}
	}
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
	if err := validateSeconds(f, "accessTokenLifetime", cc.AccessTokenLifetime); err != nil {
		return nil, err
	}
	if cc.AccessTokenLifetime > maxAccessTokenLifetime {
		return nil, fieldErr(f+".accessTokenLifetime", "at most %d (a day): a bearer token that lives longer outlives any revocation", int(maxAccessTokenLifetime/time.Second))
	}
	cl.lifetime = cc.AccessTokenLifetime
	for i, a := range cc.Audience {
		if a == "" {
			return nil, fieldErr(fmt.Sprintf("%s.audience[%d]", f, i), "empty")
		}
	}
	return cl, nil
}

// scopes checks the scopes of a client or an API resource, f naming it:
// at least one, each one the service knows.
func (k *compiler) scopes(f string, names []string) (scope.Set, error) {
	if len(names) == 0 {
		return nil, fieldErr(f+".scopes", "at least one scope is required")
	}
	for i, s := range names {
		if !scope.Known(s) && !k.own.Has(s) {
			return nil, fieldErr(fmt.Sprintf("%s.scopes[%d]", f, i), "unknown scope %q (known: %v)", s, knownScopes(k.own))
		}
	}
	return scope.NewSet(names...), nil
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

// api checks an API resource, f naming it ("apiResources[2]" in the
// file, "apiResources" in a registry), and compiles it.
func (k *compiler) api(f string, ac APIResourceConfig) (_ *apiResource, err error) {
	if err := checkNamed(f, "name", ac.Name); err != nil {
		return nil, err
	}
	defer func() { err = named(err, f, ac.Name) }()
	cl, err := k.credentials(f, ac.Name, credentials{ac.SecretHashes, ac.PublicKeys, ac.TLSClientAuth, ac.CertificateThumbprints, false})
	if err != nil {
		return nil, err
	}
	scopes, err := k.scopes(f, ac.Scopes)
	if err != nil {
		return nil, err
	}
	return &apiResource{client: cl, name: ac.Name, scopes: scopes}, nil
}

// maxOwnScopes bounds Config.Scopes.
const maxOwnScopes = 64

// parseOwnScopes reads Config.Scopes, the scopes of your own that
// clients and API resources may hold beside the product's: each a scope
// name of RFC 6749 §3.3 (printable ASCII but space, quote and backslash)
// of at most 200 characters, none differing from one of the product's
// only in case (a misspelling: scope names are case-sensitive), none
// twice, at most 64. A scope that is not the product's nor listed here
// is refused wherever it is named, so that a misspelt one is found when
// the configuration is read. They are not listed in discovery's
// scopes_supported, which RFC 8414 §2 lets a server leave partial.
func parseOwnScopes(names []string) (scope.Set, error) {
	if len(names) > maxOwnScopes {
		return nil, fieldErr("scopes", "more than %d", maxOwnScopes)
	}
	for i, s := range names {
		f := fmt.Sprintf("scopes[%d]", i)
		switch {
		case s == "" || len(s) > 200 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }):
			return nil, fieldErr(f, "%q is not a scope name (RFC 6749 §3.3: 1 to 200 printable ASCII characters, no space, quote or backslash)", s)
		case !scope.Known(s) && isProductScopeInOtherCase(s):
			return nil, fieldErr(f, "%q differs from one of %v only in case, and scope names are case-sensitive", s, scope.All())
		case slices.Contains(names[:i], s):
			return nil, fieldErr(f, "%q is listed twice", s)
		}
	}
	return scope.NewSet(names...), nil
}

func isProductScopeInOtherCase(s string) bool {
	for _, k := range scope.All() {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// knownScopes lists the scopes a client or API resource may hold: the
// product's, then own.
func knownScopes(own scope.Set) []string {
	return append(scope.All(), own...)
}

// The values of ScopeWhenOmitted.
const (
	scopeRefuse = "refuse"
	scopeAll    = "all"
)

// validateScopeWhenOmitted refuses v, the field name of f, unless it is
// one of the values of ScopeWhenOmitted.
func validateScopeWhenOmitted(f, name, v string) error {
	switch v {
	case scopeRefuse, scopeAll:
		return nil
	}
	return fieldErr(join(f, name), `want "refuse" or "all", got %q`, v)
}

// clientDefaults returns cc with the defaults of c, whose own defaults
// are applied: a client of the file's, or a registered one.
func (c *Config) clientDefaults(cc ClientConfig) ClientConfig {
	// A default list is shared by the clients that take it: none writes
	// into it.
	if len(cc.GrantTypes) == 0 {
		cc.GrantTypes = clientCredentialsOnly
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

// clientCredentialsOnly is the default GrantTypes; read only.
var clientCredentialsOnly = []string{"client_credentials"}

// validateSeconds refuses a duration that goes on the wire in whole seconds
// (a max-age, a lifetime) and is negative or not whole: the field name
// of f (join's), made for an error alone.
func validateSeconds(f, name string, d time.Duration) error {
	switch {
	case d < 0:
		return fieldErr(join(f, name), "negative")
	case d%time.Second != 0:
		return fieldErr(join(f, name), "%v is not a whole number of seconds", d)
	}
	return nil
}
