package issuer

import (
	"fmt"
	"slices"
	"strings"
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

// compileClients checks the clients and API resources of d, whose
// defaults are applied (c is d before them), and returns a state holding
// them.
func (d Config) compileClients(c *Config, own scope.Set) (*state, error) {
	st := &state{clients: make(map[string]*client, len(d.Clients)), apis: make(map[string]*apiResource, len(d.APIResources))}
	haveCAs := len(d.MTLS.ClientCAs) > 0 || len(d.MTLS.ClientCACerts) > 0
	for i, cc := range d.Clients {
		cl, err := cc.compile(fmt.Sprintf("clients[%d]", i), own)
		if err != nil {
			return nil, err
		}
		if cl.certs, err = compileCertAuth(fmt.Sprintf("clients[%d] (%q)", i, cc.ClientID), cc.TLSClientAuth, cc.CertificateThumbprints, haveCAs); err != nil {
			return nil, err
		}
		cl.certBound = cc.CertificateBoundTokens
		if st.clients[cl.id] != nil {
			return nil, fieldErr(fmt.Sprintf("clients[%d].clientId", i), "duplicate client ID %q", cl.id)
		}
		st.clients[cl.id] = cl
	}
	for i, ac := range d.APIResources {
		api, err := ac.compile(fmt.Sprintf("apiResources[%d]", i), own)
		if err != nil {
			return nil, err
		}
		if api.certs, err = compileCertAuth(fmt.Sprintf("apiResources[%d] (%q)", i, ac.Name), ac.TLSClientAuth, ac.CertificateThumbprints, haveCAs); err != nil {
			return nil, err
		}
		if st.apis[api.name] != nil {
			return nil, fieldErr(fmt.Sprintf("apiResources[%d].name", i), "duplicate API resource %q", api.name)
		}
		st.apis[api.name] = api
		st.apiOrder = append(st.apiOrder, api)
	}
	for _, cc := range c.Clients {
		if cl := st.clients[cc.ClientID]; cl != nil {
			cl.defaultAud = len(cc.Audience) == 0
		}
	}
	return st, nil
}

// apiAudiences gives, under the identityserver profile, every client
// without an audience of its own the names of the API resources of its
// scopes, as IdentityServer does, once the file's and the registered API
// resources are known. A client it changes is copied: the one compiled
// from the file is shared with the next SetRegistered.
func (st *state) apiAudiences() {
	if !st.identityServer || len(st.apiOrder) == 0 {
		return
	}
	for id, cl := range st.clients {
		if cl.defaultAud {
			cp := *cl
			cp.apiAud, cp.audience = true, apiAudience(st.apiOrder, cl.scopeList)
			st.clients[id] = &cp
		}
	}
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
	reference   bool      // its access tokens are reference tokens
	requireDPoP bool      // its token requests must carry a DPoP proof
	claims      []byte    // its client_ claims as JSON members, each led by a comma; nil for none
	apiAud      bool      // its audience is its API resources' names (the identityserver profile)
	defaultAud  bool      // it has no audience of its own
	certs       *certAuth // how it authenticates by certificate (RFC 8705 §2); nil: it does not
	certBound   bool      // its tokens are bound to its certificate (RFC 8705 §3)
}

// compile checks a client whose defaults are applied; f names it.
func (cc ClientConfig) compile(f string, own scope.Set) (*client, error) {
	if cc.ClientID == "" {
		return nil, fieldErr(f+".clientId", "empty")
	}
	if utf8.RuneCountInString(cc.ClientID) > maxClientIDLength {
		return nil, fieldErr(f+".clientId", "longer than %d characters", maxClientIDLength)
	}
	f = fmt.Sprintf("%s (%q)", f, cc.ClientID)
	if len(cc.SecretHashes) == 0 && len(cc.PublicKeys) == 0 && !cc.TLSClientAuth.set() && len(cc.CertificateThumbprints) == 0 {
		return nil, fieldErr(f+".secretHashes", "at least one hash (or one of publicKeys, a tlsClientAuth or a certificate thumbprint) is required")
	}
	hashes, err := parseHashes(f+".secretHashes", cc.SecretHashes)
	if err != nil {
		return nil, err
	}
	cl := &client{id: cc.ClientID, hashes: hashes, audience: cc.Audience, allScopes: cc.ScopeWhenOmitted == scopeAll}
	if len(cc.PublicKeys) > maxClientKeys {
		return nil, fieldErr(f+".publicKeys", "more than %d keys", maxClientKeys)
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
	if err := checkSeconds(f+".accessTokenLifetime", cc.AccessTokenLifetime); err != nil {
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
	if utf8.RuneCountInString(ac.Name) > maxClientIDLength {
		return nil, fieldErr(f+".name", "longer than %d characters", maxClientIDLength)
	}
	f = fmt.Sprintf("%s (%q)", f, ac.Name)
	if len(ac.SecretHashes) == 0 && len(ac.PublicKeys) == 0 && !ac.TLSClientAuth.set() && len(ac.CertificateThumbprints) == 0 {
		return nil, fieldErr(f+".secretHashes", "at least one hash (or one of publicKeys, a tlsClientAuth or a certificate thumbprint) is required")
	}
	hashes, err := parseHashes(f+".secretHashes", ac.SecretHashes)
	if err != nil {
		return nil, err
	}
	cl := &client{id: ac.Name, hashes: hashes}
	if len(ac.PublicKeys) > maxClientKeys {
		return nil, fieldErr(f+".publicKeys", "more than %d keys", maxClientKeys)
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
