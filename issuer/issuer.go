package issuer

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
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
	"github.com/idsauth/idsauth/internal/replay"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
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

	// Set by New's options, for the issuer's life.
	logger   *slog.Logger
	now      func() time.Time
	verifier *secret.Verifier // shared with others; nil: one of its own
	observer observe.Observer // WithObserver's, then with the refusal log (New)
	store    limit.Store      // nil: a limit.Memory of the configuration's
}

// The endpoints' paths under the issuer URL, CONTRACT.md §2 and §3.
const (
	tokenPath     = "/connect/token"
	discoveryPath = "/.well-known/openid-configuration"
	jwksPath      = discoveryPath + "/jwks"
)

// state is everything a configuration decides, swapped whole on Reload.
type state struct {
	issuer      string
	prefix      string // URL path of the issuer, without a trailing slash
	signer      *keys.Key
	method      jwt.SigningMethod
	byKID       map[string]*keys.Key
	clients     map[string]*client
	scopeArray  bool
	discovery   []byte
	jwks        []byte
	cacheHeader string
	limits      Limits
	addrs       clientip.Resolver
	budget      limit.Budget
	// Kept across reloads while their settings stay.
	limiterCfg  limiterConfig
	limiter     limit.Store
	verifierCfg secret.VerifierConfig
	verifier    *secret.Verifier
	// private_key_jwt: see assertion.go.
	assertionLifetime time.Duration
	keyPad            map[string]int // signature checks per alg
	dummies           map[string]crypto.PublicKey
	replayBytes       int
	replay            *replay.Cache // kept across reloads; nil when the store remembers
}

// limiterConfig is what a new limit.Memory is made for: while it stays,
// Reload keeps the one it has.
type limiterConfig struct {
	budget limit.Budget
	bytes  int
}

// Option configures what an Issuer keeps for its whole life, whatever
// configuration it is given: see WithLogger, WithClock, WithObserver,
// WithVerifier and WithLimiterStore.
type Option func(*Issuer)

// WithLogger sets the logger of the issuer's lines: refused token
// requests, a signing failure, the ephemeral key's warning. No line holds
// a secret or a token. Without it (or with nil) the issuer logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(iss *Issuer) {
		if l != nil {
			iss.logger = l
		}
	}
}

// WithClock sets the issuer's clock, for tests. Without it (or with nil)
// it is time.Now.
func WithClock(now func() time.Time) Option {
	return func(iss *Issuer) {
		if now != nil {
			iss.now = now
		}
	}
}

// WithVerifier makes the issuer check client secrets with v instead of a
// Verifier of its own, so that one bound on concurrent bcrypt checks and
// one failure floor cover the issuer and SCIMAuth together (give
// middleware.SCIMLimits.Verifier the same v). The issuer primes v with its
// clients' hashes on every load. The configuration's
// limits.failureFloorMillis and limits.maxConcurrentSlowHashes do not
// apply then: v's own settings do.
func WithVerifier(v *secret.Verifier) Option {
	return func(iss *Issuer) { iss.verifier = v }
}

// WithLimiterStore sets where the failure limiter keeps its budgets, for
// the issuer's life: give the replicas of one issuer one shared store
// (such as the Redis store of github.com/idsauth/idsauth/redisstore), so
// that they enforce one budget per client and per address between them.
// The configuration's limits still set the budgets, passed with each
// request; limits.limiterMaxBytes does not apply. Without it (or with nil)
// the issuer keeps a limit.Memory of limits.limiterMaxBytes, which Reload
// keeps while the limits stay the same.
//
// When the store is also a limit.ReplayStore (limit.Memory and the Redis
// store are), it remembers the jti of each accepted client assertion too,
// so that replicas sharing it accept an assertion once between them;
// clientAssertions.replayCacheBytes does not apply then. Otherwise each
// issuer remembers them in a cache of its own.
//
// When the store cannot answer (an error other than a *limit.Refusal),
// the token request is answered 503 temporarily_unavailable with
// Retry-After and no secret is checked, and no token is issued for an
// assertion whose jti it cannot remember: whether a store fails so or
// falls back to limits and memory of its own is the store's choice.
func WithLimiterStore(s limit.Store) Option {
	return func(iss *Issuer) {
		if s != nil {
			iss.store = s
		}
	}
}

// New checks cfg (as Validate does), reads its key files and returns an
// Issuer serving it. The options hold for the issuer's life: Reload
// changes the configuration only.
func New(cfg *Config, opts ...Option) (*Issuer, error) {
	iss := &Issuer{logger: slog.New(slog.DiscardHandler), now: time.Now}
	for _, opt := range opts {
		opt(iss)
	}
	iss.observer = observe.Multi(iss.observer, refusalLog{iss.logger})
	if err := iss.Reload(cfg); err != nil {
		return nil, err
	}
	return iss, nil
}

// Reload checks cfg (as Validate does), reads its key files and, only if
// all is well, makes it the issuer's configuration: keys, clients and
// limits change at once for every request that starts after it returns.
// On error nothing changes. The failure limiter's memory of failed
// attempts is kept while the limits stay the same.
//
// To rotate the signing key without a failed request: add the new key
// after the current one and reload (it is published); once validators
// have fetched the JWKS again, move it first and reload (it signs); once
// the old key's last token has expired, remove it and reload.
func (iss *Issuer) Reload(cfg *Config) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	st, err := iss.compile(cfg)
	if err != nil {
		return err
	}
	old := iss.st.Load()
	switch {
	case iss.store != nil:
		st.limiter = iss.store
	case old != nil && old.limiterCfg == st.limiterCfg:
		st.limiter = old.limiter
	default:
		st.limiter = limit.NewMemory(st.limiterCfg.bytes)
	}
	switch {
	case iss.verifier != nil:
		st.verifier = iss.verifier
	case old != nil && old.verifierCfg == st.verifierCfg:
		st.verifier = old.verifier
	default:
		st.verifier = secret.NewVerifier(st.verifierCfg)
	}
	subjects := make([][]secret.Hash, 0, len(st.clients))
	for _, cl := range st.clients {
		subjects = append(subjects, cl.hashes)
	}
	st.verifier.Prime(subjects...)
	switch {
	case iss.sharedReplays() != nil: // the store remembers the jtis
	case old == nil:
		st.replay = replay.New(st.replayBytes)
	case old.replayBytes == st.replayBytes:
		st.replay = old.replay
	default:
		st.replay = old.replay.Resized(st.replayBytes, iss.now())
	}
	// Swap first, then bump: a validation that read the new version has
	// also read the new keys, so no token of a removed key is cached under
	// it.
	iss.st.Store(st)
	if old == nil || string(old.jwks) != string(st.jwks) {
		iss.version.Add(1)
	}
	return nil
}

// compile checks cfg and reads its keys: the one place key files are
// read.
func (iss *Issuer) compile(cfg *Config) (*state, error) {
	st, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if err := st.loadClientKeys(cfg); err != nil {
		return nil, err
	}
	ks := make([]*keys.Key, 0, len(cfg.Keys))
	for i, kc := range cfg.Keys {
		k, err := kc.load(cfg.Dir)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("keys[%d]", i), "%v", err)
		}
		if slices.ContainsFunc(ks, func(o *keys.Key) bool { return o.KID == k.KID }) {
			return nil, fieldErr(fmt.Sprintf("keys[%d]", i), "the same key is listed twice")
		}
		ks = append(ks, k)
	}
	if cfg.EphemeralKey {
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
	st.signer = ks[0]
	st.method = jwt.GetSigningMethod(ks[0].Alg)
	st.byKID = make(map[string]*keys.Key, len(ks))
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
		"issuer":                                st.issuer,
		"token_endpoint":                        st.issuer + tokenPath,
		"jwks_uri":                              st.issuer + jwksPath,
		"grant_types_supported":                 []string{"client_credentials"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "private_key_jwt"},
		"scopes_supported":                      scope.All(),
		"response_types_supported":              []string{"token"},
		"token_endpoint_auth_signing_alg_values_supported": keys.AssertionAlgs,
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// URL returns the issuer URL: the "iss" of its tokens.
func (iss *Issuer) URL() string { return iss.st.Load().issuer }

// TokenURL returns the token endpoint's URL.
func (iss *Issuer) TokenURL() string { return iss.st.Load().issuer + tokenPath }

// JWKSURL returns the URL of the published key set.
func (iss *Issuer) JWKSURL() string { return iss.st.Load().issuer + jwksPath }

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
	path, ok := strings.CutPrefix(r.URL.Path, st.prefix)
	switch {
	case ok && path == tokenPath:
		iss.token(w, r, st)
	case ok && path == discoveryPath:
		serveDocument(w, r, st.discovery, st.cacheHeader)
	case ok && path == jwksPath:
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
