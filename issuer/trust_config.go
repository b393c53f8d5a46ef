package issuer

import (
	"fmt"
	"github.com/idsauth/idsauth/scope"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TrustedIssuerConfig is an issuer of workload identities whose tokens
// authenticate clients, as each client's FederatedCredentials say: an
// OpenID Connect issuer (GitHub Actions, AWS STS, any other), a
// Kubernetes cluster's service-account issuer, or a SPIFFE trust domain
// (its JWT-SVIDs). Its keys come from where the operator says, never
// from a URL a client supplies. docs/IDENTITY-SERVICE.md shows each kind.
type TrustedIssuerConfig struct {
	// Issuer is the "iss" of its tokens, an https URL (http on loopback
	// alone), compared exactly. Required for "oidc" and "kubernetes"; for
	// "spiffe", the jwt_issuer its server sets, if any (empty: none).
	Issuer string
	// Kind is "oidc", "kubernetes" or "spiffe". Required.
	Kind string
	// TrustDomain is a "spiffe" issuer's trust domain ("example.org"), whose
	// keys sign for its SPIFFE IDs alone. Required for "spiffe", refused
	// for the others.
	TrustDomain string

	// JWKSURI is the URL of its JWKS. At most one of JWKSURI,
	// BundleEndpoint, BundleFile and InCluster; none means discovery (the
	// jwks_uri of Issuer's discovery document, whose issuer must be Issuer).
	JWKSURI string
	// BundleEndpoint is the https URL of a SPIFFE bundle endpoint (its
	// https_web profile: the server's certificate is checked as any web
	// server's, against CAFile when set), for "spiffe".
	BundleEndpoint string
	// BundleFile is a file of the trust domain's SPIFFE bundle (as
	// spire-server bundle show -format spiffe prints it), for "spiffe", read
	// at each refresh from Config.Dir: keeping it fresh is yours.
	BundleFile string
	// InCluster, for "kubernetes", fetches the cluster's JWKS from its API
	// server with the pod's own token and CA; false: not so. The ClusterRole
	// the pod's account needs: docs/IDENTITY-SERVICE.md.
	InCluster bool
	// APIServer is the API server's URL for InCluster. Empty means
	// https://kubernetes.default.svc.
	APIServer string
	// TokenFile is the pod's token for InCluster, read at each fetch.
	// Empty means /var/run/secrets/kubernetes.io/serviceaccount/token.
	TokenFile string
	// CAFile is a PEM file of the CAs the key source's TLS certificate must
	// chain to. Empty means the system's, or, for InCluster, the pod's
	// /var/run/secrets/kubernetes.io/serviceaccount/ca.crt.
	CAFile string

	// Audience is the audiences of which a token must carry one in its
	// aud. Empty means the issuer's token endpoint and its issuer URL
	// (RFC 7523 §3).
	Audience []string
	// MaxTokenLifetime bounds how long a token may say it lives (exp
	// after iat): a whole number of seconds. Zero means two hours; at
	// most a day.
	MaxTokenLifetime time.Duration
	// ClockSkew is the leeway for its tokens' exp, nbf and iat: a whole
	// number of seconds. Zero means 30 seconds; at most 5 minutes.
	ClockSkew time.Duration
	// KeysGrace is how long the keys last fetched keep verifying while its
	// key source does not answer; then its tokens are refused
	// (invalid_client). Zero means an hour; at most a day.
	KeysGrace time.Duration

	// JWTBearerGrant lets its tokens be exchanged for access tokens by the
	// JWT bearer grant (RFC 7523 §2.1), as docs/IDENTITY-SERVICE.md says.
	// False: its tokens only authenticate clients (client_assertion).
	JWTBearerGrant bool
	// Scopes are what a token of the JWT bearer grant through this issuer
	// may carry; required with JWTBearerGrant, refused without it.
	Scopes []string
}

// FederatedCredential is one workload identity that authenticates a
// client (ClientConfig.FederatedCredentials): a token of Issuer whose sub
// is Subject.
type FederatedCredential struct {
	// Issuer names a trusted issuer: its Issuer URL, or, for a "spiffe"
	// one, "spiffe://" and its trust domain. Empty for a SPIFFE Subject,
	// whose trust domain names it.
	Issuer string
	// Subject is the token's sub, matched exactly; a SPIFFE ID ending in
	// "/*" matches every SPIFFE ID under its path, and nothing else is a
	// pattern. Each kind's form: docs/IDENTITY-SERVICE.md.
	Subject string
}

// The kinds of TrustedIssuerConfig.Kind.
const (
	kindOIDC       = "oidc"
	kindKubernetes = "kubernetes"
	kindSPIFFE     = "spiffe"
)

// Bounds of the trusted issuers and federated credentials.
const (
	maxTrustedIssuers       = 64
	maxFederatedCredentials = 20 // Entra's bound of one application's
	maxSubjectLength        = 2048
	defaultTokenLifetime    = 2 * time.Hour
	defaultClockSkew        = 30 * time.Second
	defaultKeysGrace        = time.Hour
	defaultAssertionAge     = time.Hour
	defaultAPIServer        = "https://kubernetes.default.svc"
	defaultPodToken         = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	defaultPodCA            = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// trustedIssuerFile is the shape of a trustedIssuers object of the file.
func (ti *TrustedIssuerConfig) file() object {
	return object{
		{"issuer", &ti.Issuer},
		{"kind", &ti.Kind},
		{"trustDomain", &ti.TrustDomain},
		{"jwksUri", &ti.JWKSURI},
		{"bundleEndpoint", &ti.BundleEndpoint},
		{"bundleFile", &ti.BundleFile},
		{"inCluster", &ti.InCluster},
		{"apiServer", &ti.APIServer},
		{"tokenFile", &ti.TokenFile},
		{"caFile", &ti.CAFile},
		{"audience", &ti.Audience},
		{"maxTokenLifetimeSeconds", seconds{&ti.MaxTokenLifetime}},
		{"clockSkewSeconds", seconds{&ti.ClockSkew}},
		{"keysGraceSeconds", seconds{&ti.KeysGrace}},
		{"jwtBearerGrant", &ti.JWTBearerGrant},
		{"scopes", &ti.Scopes},
	}
}

func (fc *FederatedCredential) file() object {
	return object{{"issuer", &fc.Issuer}, {"subject", &fc.Subject}}
}

// trustedIssuer is a checked TrustedIssuerConfig.
type trustedIssuer struct {
	id          string // its Issuer, or "spiffe://" and its trust domain
	kind        string
	iss         string // the iss its tokens carry; "" for a spiffe issuer that sets none
	trustDomain string // spiffe
	audience    []string
	maxLifetime time.Duration
	skew        time.Duration
	grace       time.Duration
	grant       bool
	scopes      scope.Set // the grant's cap
	source      keySource
}

// keySource is where a trusted issuer's keys come from, as the
// configuration says: plain data, whose files New and Reload read (a
// CA) or each refresh reads (a bundle, a pod's token).
type keySource struct {
	discovery string // an issuer whose discovery document names the JWKS
	url       string // a JWKS, a SPIFFE bundle (bundle), or a cluster's JWKS (tokenFile)
	file      string // a SPIFFE bundle file, from Config.Dir
	bundle    bool   // url or file holds a SPIFFE bundle (use "jwt-svid")
	tokenFile string // in-cluster: the pod's token, sent as a bearer token
	caFile    string // the CAs of url's TLS; "" the system's
	// The CA file's content, read by New and Reload (loadTrust): part of
	// the source, so that a CA changed is a new source.
	ca []byte
}

// trust is the trusted issuers of a configuration, compiled.
type trust struct {
	issuers []*trustedIssuer          // in the configuration's order
	byID    map[string]*trustedIssuer // by id
	byIss   map[string]*trustedIssuer // by the iss their tokens carry
	byTD    map[string]*trustedIssuer // spiffe, by trust domain
	grants  bool                      // one of them takes the JWT bearer grant
	loopJWK bool                      // a client's jwksUri may be plain HTTP on loopback
}

// compileTrust checks d's trusted issuers, d's defaults applied.
func (k *compiler) compileTrust() (*trust, error) {
	d := &k.d
	t := &trust{byID: map[string]*trustedIssuer{}, byIss: map[string]*trustedIssuer{}, byTD: map[string]*trustedIssuer{},
		loopJWK: d.ClientAssertions.AllowLoopbackJWKS}
	audDef := []string{d.Issuer + tokenPath, d.Issuer}
	if len(d.TrustedIssuers) > maxTrustedIssuers {
		return nil, fieldErr("trustedIssuers", "more than %d", maxTrustedIssuers)
	}
	for i, tc := range d.TrustedIssuers {
		f := fmt.Sprintf("trustedIssuers[%d]", i)
		ti, err := k.trustedIssuer(f, tc, audDef)
		if err != nil {
			return nil, err
		}
		switch {
		case t.byID[ti.id] != nil:
			return nil, fieldErr(f, "%q is trusted twice", ti.id)
		case ti.iss != "" && t.byIss[ti.iss] != nil:
			return nil, fieldErr(f+".issuer", "%q is another trusted issuer's", ti.iss)
		}
		t.byID[ti.id] = ti
		if ti.iss != "" {
			t.byIss[ti.iss] = ti
		}
		if ti.trustDomain != "" {
			t.byTD[ti.trustDomain] = ti
		}
		t.grants = t.grants || ti.grant
		t.issuers = append(t.issuers, ti)
	}
	return t, nil
}

// trustedIssuer checks one trusted issuer, f naming it.
func (k *compiler) trustedIssuer(f string, tc TrustedIssuerConfig, audDef []string) (*trustedIssuer, error) {
	ti := &trustedIssuer{kind: tc.Kind, iss: tc.Issuer, id: tc.Issuer, audience: slices.Clone(tc.Audience),
		maxLifetime: tc.MaxTokenLifetime, skew: tc.ClockSkew, grace: tc.KeysGrace, grant: tc.JWTBearerGrant}
	switch tc.Kind {
	case kindOIDC, kindKubernetes:
		if tc.Issuer == "" {
			return nil, fieldErr(f+".issuer", "required for the kind %q", tc.Kind)
		}
		if tc.TrustDomain != "" {
			return nil, fieldErr(f+".trustDomain", "only for the kind \"spiffe\"")
		}
	case kindSPIFFE:
		if err := checkTrustDomain(tc.TrustDomain); err != nil {
			return nil, fieldErr(f+".trustDomain", "%v", err)
		}
		ti.trustDomain, ti.id = tc.TrustDomain, "spiffe://"+tc.TrustDomain
	default:
		return nil, fieldErr(f+".kind", `want "oidc", "kubernetes" or "spiffe", got %q`, tc.Kind)
	}
	if tc.Issuer != "" {
		if err := checkFetchURL(tc.Issuer, true); err != nil {
			return nil, fieldErr(f+".issuer", "%v", err)
		}
	}
	src := &ti.source
	n := 0
	for _, set := range []bool{tc.JWKSURI != "", tc.BundleEndpoint != "", tc.BundleFile != "", tc.InCluster} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, fieldErr(f, "set at most one of jwksUri, bundleEndpoint, bundleFile and inCluster")
	case (tc.BundleEndpoint != "" || tc.BundleFile != "") && tc.Kind != kindSPIFFE:
		return nil, fieldErr(f, "bundleEndpoint and bundleFile are for the kind \"spiffe\"")
	case tc.InCluster && tc.Kind != kindKubernetes:
		return nil, fieldErr(f+".inCluster", "for the kind \"kubernetes\"")
	case (tc.APIServer != "" || tc.TokenFile != "") && !tc.InCluster:
		return nil, fieldErr(f, "apiServer and tokenFile go with inCluster")
	case n == 0 && tc.Issuer == "":
		return nil, fieldErr(f, "no key source: set bundleEndpoint, bundleFile or jwksUri, or issuer (its discovery)")
	}
	src.caFile = tc.CAFile
	switch {
	case tc.JWKSURI != "":
		src.url = tc.JWKSURI
	case tc.BundleEndpoint != "":
		src.url, src.bundle = tc.BundleEndpoint, true
	case tc.BundleFile != "":
		src.file, src.bundle = tc.BundleFile, true
	case tc.InCluster:
		api := tc.APIServer
		if api == "" {
			api = defaultAPIServer
		}
		src.url = strings.TrimSuffix(api, "/") + "/openid/v1/jwks"
		src.tokenFile = tc.TokenFile
		if src.tokenFile == "" {
			src.tokenFile = defaultPodToken
		}
		if src.caFile == "" {
			src.caFile = defaultPodCA
		}
	default:
		src.discovery = tc.Issuer
	}
	if src.url != "" {
		if err := checkFetchURL(src.url, true); err != nil {
			return nil, fieldErr(f, "the key source: %v", err)
		}
	}
	if len(ti.audience) == 0 {
		ti.audience = audDef
	}
	for i, a := range ti.audience {
		if a == "" {
			return nil, fieldErr(fmt.Sprintf("%s.audience[%d]", f, i), "empty")
		}
	}
	for _, b := range []struct {
		field      string
		d          *time.Duration
		def, most  time.Duration
		mostInText string
	}{
		{"maxTokenLifetimeSeconds", &ti.maxLifetime, defaultTokenLifetime, 24 * time.Hour, "86400 (a day)"},
		{"clockSkewSeconds", &ti.skew, defaultClockSkew, 5 * time.Minute, "300"},
		{"keysGraceSeconds", &ti.grace, defaultKeysGrace, 24 * time.Hour, "86400 (a day)"},
	} {
		if err := validateSeconds(f, b.field, *b.d); err != nil {
			return nil, err
		}
		if *b.d > b.most {
			return nil, fieldErr(f+"."+b.field, "at most %s", b.mostInText)
		}
		if *b.d == 0 {
			*b.d = b.def
		}
	}
	switch {
	case tc.JWTBearerGrant && len(tc.Scopes) == 0:
		return nil, fieldErr(f+".scopes", "required with jwtBearerGrant: what its tokens may be exchanged for")
	case !tc.JWTBearerGrant && len(tc.Scopes) > 0:
		return nil, fieldErr(f+".scopes", "only with jwtBearerGrant")
	}
	if len(tc.Scopes) > 0 {
		set, err := k.scopes(f, tc.Scopes)
		if err != nil {
			return nil, err
		}
		ti.scopes = set
	}
	return ti, nil
}

// checkFetchURL refuses a URL the issuer would fetch that is not an
// absolute https URL without userinfo or fragment; plain http only for a
// loopback host, when loopback allows it.
func checkFetchURL(raw string, loopback bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Fragment != "" || u.Opaque != "":
		return fmt.Errorf("want an absolute https URL, got %q", raw)
	case u.User != nil:
		return fmt.Errorf("a URL with a user name or password (userinfo) would reach the logs: give none")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback && isLoopbackHost(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("plain http only for a loopback host (127.0.0.1, [::1], localhost): want https, got %q", raw)
	}
	return fmt.Errorf("want an https URL, got %q", raw)
}
