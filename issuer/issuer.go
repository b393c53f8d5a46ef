package issuer

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/keyerr"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/limiter"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Issuer is an OAuth 2.0 client_credentials token issuer. It is an
// http.Handler serving, under the path of its issuer URL (say "/ids"):
//
//	POST /ids/connect/token                         the token endpoint
//	GET  /ids/.well-known/openid-configuration      the discovery document
//	GET  /ids/.well-known/openid-configuration/jwks the signing keys
//
// It is also a middleware.VersionedKeySource, so a middleware.Validator in
// the same process checks its tokens without HTTP. It is safe for concurrent use;
// Reload swaps its configuration without dropping a request.
type Issuer struct {
	st      atomic.Pointer[state]
	version atomic.Uint64 // counts key set changes

	mu        sync.Mutex // serializes Reload
	ephemeral *keys.Key  // made once, kept across reloads

	logger *slog.Logger
	now    func() time.Time
}

// state is everything a configuration decides, swapped whole on Reload.
type state struct {
	issuer      string
	prefix      string // URL path of the issuer, without a trailing slash
	tokenPath   string
	discPath    string
	jwksPath    string
	signer      *keys.Key
	method      jwt.SigningMethod
	byKID       map[string]*keys.Key
	clients     map[string]*client
	scopeArray  bool
	defaultAud  []string
	discovery   []byte
	jwks        []byte
	cacheHeader string
	limits      Limits
	addrs       clientip.Resolver
	// Kept across reloads while their settings stay.
	limiterCfg  limiter.Config
	limiter     *limiter.Limiter
	verifierCfg secret.VerifierConfig
	verifier    *secret.Verifier
}

// New returns an Issuer for cfg, which it validates first.
func New(cfg *Config) (*Issuer, error) {
	iss := &Issuer{
		logger: cfg.Logger,
		now:    cfg.Now,
	}
	if iss.logger == nil {
		iss.logger = slog.New(slog.DiscardHandler)
	}
	if iss.now == nil {
		iss.now = time.Now
	}
	if err := iss.Reload(cfg); err != nil {
		return nil, err
	}
	return iss, nil
}

// Reload validates cfg and, only if it is valid, makes it the issuer's
// configuration: keys, clients and limits change at once for every
// request that starts after it returns. On error nothing changes.
//
// To rotate the signing key without a failed request: add the new key
// after the current one and reload (it is published); once validators
// have fetched the JWKS again, move it first and reload (it signs); once
// the old key's last token has expired, remove it and reload.
func (iss *Issuer) Reload(cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	st, err := iss.compile(cfg)
	if err != nil {
		return err
	}
	old := iss.st.Load()
	if old != nil && old.limiterCfg == st.limiterCfg {
		st.limiter = old.limiter
	} else {
		st.limiter = limiter.New(st.limiterCfg)
	}
	if old != nil && old.verifierCfg == st.verifierCfg {
		st.verifier = old.verifier
	} else {
		st.verifier = secret.NewVerifier(st.verifierCfg)
	}
	subjects := make([][]secret.Hash, 0, len(st.clients))
	for _, cl := range st.clients {
		subjects = append(subjects, cl.hashes)
	}
	st.verifier.Prime(subjects...)
	// Swap first, then bump: a validation that read the new version has
	// also read the new keys, so no token of a removed key is cached under
	// it.
	iss.st.Store(st)
	if old == nil || string(old.jwks) != string(st.jwks) {
		iss.version.Add(1)
	}
	return nil
}

func (iss *Issuer) compile(cfg *Config) (*state, error) {
	u, err := url.Parse(cfg.Issuer) // checked by Validate
	if err != nil {
		return nil, err
	}
	ks := cfg.keys
	if len(ks) == 0 {
		if iss.ephemeral == nil {
			k, err := keys.Generate("ES256")
			if err != nil {
				return nil, err
			}
			iss.ephemeral = k
		}
		iss.logger.Warn("idsauth issuer: NO SIGNING KEY CONFIGURED; using an ephemeral ES256 key that dies with this process. Development only: tokens stop validating at restart.",
			slog.String("kid", iss.ephemeral.KID))
		ks = []*keys.Key{iss.ephemeral}
	}
	issuerURL := strings.TrimSuffix(cfg.Issuer, "/")
	prefix := strings.TrimSuffix(u.Path, "/")
	st := &state{
		issuer:     issuerURL,
		prefix:     prefix,
		tokenPath:  prefix + "/connect/token",
		discPath:   prefix + "/.well-known/openid-configuration",
		jwksPath:   prefix + "/.well-known/openid-configuration/jwks",
		signer:     ks[0],
		method:     jwt.GetSigningMethod(ks[0].Alg),
		byKID:      make(map[string]*keys.Key, len(ks)),
		clients:    cfg.clients,
		scopeArray: cfg.ScopeFormat == "array",
		defaultAud: []string{issuerURL + "/resources"},
		limits:     cfg.Limits.withDefaults(),
	}
	l := st.limits
	trusted, _ := clientip.ParsePrefixes(l.TrustedProxies) // checked by Validate
	st.addrs = clientip.Resolver{Header: l.TrustedProxyHeader, Trusted: trusted}
	st.limiterCfg = limiter.Config{
		PerSubject: l.FailedAttemptsPerClient,
		PerAddress: l.FailedAttemptsPerAddress,
		Window:     time.Duration(l.FailureWindowSeconds) * time.Second,
		MaxBytes:   l.LimiterMaxBytes,
	}
	st.verifierCfg = secret.VerifierConfig{
		MaxConcurrentSlow: l.MaxConcurrentSlowHashes,
		FailureFloor:      time.Duration(l.FailureFloorMillis) * time.Millisecond,
	}
	maxAge := cfg.JWKSMaxAgeSeconds
	if maxAge == 0 {
		maxAge = 300
	}
	st.cacheHeader = "public, max-age=" + strconv.Itoa(maxAge)
	set := struct {
		Keys []keys.JWK `json:"keys"`
	}{}
	for _, k := range ks {
		st.byKID[k.KID] = k
		set.Keys = append(set.Keys, k.PublicJWK())
	}
	if st.jwks, err = json.Marshal(set); err != nil {
		return nil, err
	}
	st.discovery, err = json.Marshal(map[string]any{
		"issuer":                                issuerURL,
		"token_endpoint":                        issuerURL + "/connect/token",
		"jwks_uri":                              issuerURL + "/.well-known/openid-configuration/jwks",
		"grant_types_supported":                 []string{"client_credentials"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"scopes_supported":                      scope.All(),
		"response_types_supported":              []string{"token"},
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// URL returns the issuer URL: the "iss" of its tokens.
func (iss *Issuer) URL() string { return iss.st.Load().issuer }

// TokenURL returns the token endpoint's URL.
func (iss *Issuer) TokenURL() string { return iss.st.Load().issuer + "/connect/token" }

// JWKSURL returns the URL of the published key set.
func (iss *Issuer) JWKSURL() string {
	return iss.st.Load().issuer + "/.well-known/openid-configuration/jwks"
}

// KeyIDs returns the key IDs the issuer publishes; the first one signs.
func (iss *Issuer) KeyIDs() []string {
	st := iss.st.Load()
	ids := []string{st.signer.KID}
	for kid := range st.byKID {
		if kid != st.signer.KID {
			ids = append(ids, kid)
		}
	}
	slices.Sort(ids[1:])
	return ids
}

// ServeHTTP serves the token endpoint, the discovery document and the
// JWKS, and 404 for any other path.
func (iss *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := iss.st.Load()
	switch r.URL.Path {
	case st.tokenPath:
		iss.token(w, r, st)
	case st.discPath:
		serveDocument(w, r, st.discovery, st.cacheHeader)
	case st.jwksPath:
		serveDocument(w, r, st.jwks, st.cacheHeader)
	default:
		http.NotFound(w, r)
	}
}

func serveDocument(w http.ResponseWriter, r *http.Request, body []byte, cache string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// VerificationKeys returns the public key named kid among the keys the
// issuer publishes now, if it is for alg. With KeysVersion it makes
// *Issuer a middleware.VersionedKeySource, for a validator in the same
// process.
func (iss *Issuer) VerificationKeys(_ context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	k, ok := iss.st.Load().byKID[kid]
	if !ok {
		return nil, keyerr.ErrUnknownKey
	}
	if alg != k.Alg {
		return nil, keyerr.ErrAlgorithm
	}
	return []crypto.PublicKey{k.Public()}, nil
}

// KeysVersion changes whenever a reload changes the published keys, so
// that a validator's cache drops tokens of a key that is gone.
func (iss *Issuer) KeysVersion() uint64 { return iss.version.Load() }

// newJTI returns 128 random bits, base64url.
func newJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sign makes an access token for cl with the granted scopes (RFC 9068).
func (st *state) sign(cl *client, granted []string, now time.Time) (string, error) {
	aud := cl.audience
	if len(aud) == 0 {
		aud = st.defaultAud
	}
	var sc any = strings.Join(granted, " ")
	if st.scopeArray {
		sc = granted
	}
	claims := accessClaims{
		Issuer:    st.issuer,
		Subject:   cl.id,
		ClientID:  cl.id,
		Audience:  aud,
		Scope:     sc,
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expires:   now.Add(cl.lifetime).Unix(),
		ID:        newJTI(),
	}
	tok := &jwt.Token{
		Header: map[string]any{"alg": st.signer.Alg, "typ": "at+jwt", "kid": st.signer.KID},
		Claims: claims,
		Method: st.method,
	}
	s, err := tok.SignedString(st.signer.Private)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return s, nil
}

// accessClaims is the claim set of an access token, in a fixed order.
type accessClaims struct {
	Issuer    string   `json:"iss"`
	Subject   string   `json:"sub"`
	ClientID  string   `json:"client_id"`
	Audience  []string `json:"aud"`
	Scope     any      `json:"scope"`
	IssuedAt  int64    `json:"iat"`
	NotBefore int64    `json:"nbf"`
	Expires   int64    `json:"exp"`
	ID        string   `json:"jti"`
}

func (c accessClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Expires, 0)), nil
}
func (c accessClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c accessClaims) GetNotBefore() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.NotBefore, 0)), nil
}
func (c accessClaims) GetIssuer() (string, error)             { return c.Issuer, nil }
func (c accessClaims) GetSubject() (string, error)            { return c.Subject, nil }
func (c accessClaims) GetAudience() (jwt.ClaimStrings, error) { return c.Audience, nil }
