package issuer

import (
	"context"
	"crypto"
	"crypto/rsa"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/clientip"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/keyerr"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/logevery"
	"github.com/idsauth/idsauth/internal/replay"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/observe"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// Issuer is an OAuth 2.0 client_credentials token issuer. It is an
// http.Handler serving, under the path of its issuer URL (say "/ids"):
//
//	POST /ids/connect/token                         the token endpoint
//	POST /ids/connect/introspect                    introspection (RFC 7662), for API resources
//	POST /ids/connect/revocation                    revocation (RFC 7009), for clients
//	GET  /ids/.well-known/openid-configuration      the discovery document
//	GET  /ids/.well-known/openid-configuration/jwks the signing keys
//
// It is also an accesstoken.VersionedKeySource, so an accesstoken.Validator in
// the same process checks its tokens without HTTP. It is safe for concurrent use;
// Reload swaps its configuration without dropping a request, and a key
// schedule (see KeyConfig) switches keys at its instants without one.
type Issuer struct {
	st atomic.Pointer[state] // the first span of the key schedule

	mu        sync.Mutex // serializes Reload and SetRegistered
	ephemeral *keys.Key  // made once, kept across reloads
	version   uint64     // the last key set version given out
	// The last Reload's configuration, compiled, and the last
	// SetRegistered's clients and API resources: each is applied with the
	// other (registered.go).
	file       fileState
	registered registered
	// epochs is the record of the epochs of clients whose configuration
	// gives none (epochs.go).
	epochs epochs

	// Set by New's options, for the issuer's life.
	logger   *slog.Logger
	now      func() time.Time
	verifier *secret.Verifier // shared with others; nil: one of its own
	observer observe.Observer // WithObserver's, then with the refusal log (New)
	issuedTo observe.Observer // WithObserver's only: the refusal log ignores tokens issued
	store    limit.Store      // nil: a limit.Memory of the configuration's
	// handshakeVerifies: the TLS server refuses client certificates
	// outside its CAs (WithHandshakeVerification).
	handshakeVerifies bool

	// replays remembers the jtis of accepted client assertions, for the
	// issuer's life. Reload resizes it in place, not a copy, so that a jti
	// accepted by a request still on the old configuration is in the
	// cache the requests on the new one read. Nil when the store
	// remembers them (see WithLimiterStore).
	replays *replay.Cache

	// tokens keeps the grants of reference tokens, for the issuer's life
	// (WithTokenStore, or a tokenstore.Memory of its own).
	tokens tokenstore.Store
	// storeLogged holds back, for each operation, the Error lines of a
	// token store that failed it (storeFailed).
	storeLogged [numStoreOps]logevery.Limiter
}

// authMethods are how a client (or an API resource) authenticates at the
// token, introspection and revocation endpoints, as discovery lists them.
var authMethods = []string{"client_secret_basic", "client_secret_post", "private_key_jwt"}

// The endpoints' paths under the issuer URL, CONTRACT.md §2 and §3.
const (
	tokenPath      = "/connect/token"
	introspectPath = "/connect/introspect"
	revocationPath = "/connect/revocation"
	discoveryPath  = "/.well-known/openid-configuration"
	jwksPath       = discoveryPath + "/jwks"
)

// state is everything a configuration decides, swapped whole on Reload.
// There is one per span of the key schedule, from the span current at
// the Reload on, each with the keys of its span and the rest shared.
type state struct {
	issuer string
	prefix string // URL path of the issuer, without a trailing slash
	keySet        // this span's
	spans  []*state
	// The configuration's key schedule, and its report for KeySchedule.
	plan     keyPlan
	schedule []ScheduledKey

	clients  map[string]*client
	apis     map[string]*apiResource // by name: who may introspect
	apiOrder []*apiResource          // the same, in the configuration's order
	// identityServer is the identityserver profile (Config.Profile).
	identityServer bool
	tokenPrefixes  map[*client]*tokenPrefix // this span's, made by reload
	scopeArray     bool
	discovery      []byte
	cacheHeader    string
	maxBody        int64  // Config.MaxBodyBytes
	maxBodyText    string // the same, for its refusal
	addrs          clientip.Resolver
	budget         limit.Budget
	repeats        *repeatTable // secrets that failed; this configuration's, for a reload may make one right
	// Kept across reloads while their settings stay.
	limiterCfg  limiterConfig
	limiter     limit.Store
	verifierCfg secret.VerifierConfig
	verifier    *secret.Verifier
	// private_key_jwt: see assertion.go.
	assertionLifetime time.Duration
	keyPad            map[string]int // signature checks per alg
	dummies           map[string]crypto.PublicKey
	rsaDummies        map[int]*rsa.PublicKey // by modulus size in bytes
	replayBytes       int                    // the size of the issuer's replay cache
	// DPoP (dpop.go).
	dpopWindow time.Duration // how old a proof may be; the nonce period
	dpopNonces bool          // each span's keySet has its nonces
	mtls       mtlsState     // mutual TLS (mtls.go)
	// The latest span of this configuration's schedule known to have
	// begun: the one current at its Reload, or a later one, logged when
	// found. Shared by its spans; a reload makes its own, so a request
	// still on the old configuration moves only the old one's.
	announced *atomic.Pointer[state]
	// Whether a request has shown the issuer mounted at another path than
	// its URL's, logged once per configuration.
	misMounted *atomic.Bool
}

// keySet is what one span of the key schedule publishes and signs with.
type keySet struct {
	from    time.Time // when the span starts; zero: since ever
	signer  *keys.Key
	method  jwt.SigningMethod
	header  string // the signer's encoded JWS header
	byKID   map[string]*keys.Key
	jwks    []byte
	version uint64       // KeysVersion: the same for the same keys
	nonces  *dpop.Nonces // DPoP nonces, from the signer; nil when off
}

// at returns the span of the key schedule that holds t: the last one
// starting at or before it (or the first, for a clock gone back).
func (st *state) at(t time.Time) *state {
	for i := len(st.spans) - 1; i > 0; i-- {
		if !t.Before(st.spans[i].from) {
			return st.spans[i]
		}
	}
	return st.spans[0]
}

// current returns the span of the key schedule that holds the issuer's
// now, without reading the clock when there is one span.
func (iss *Issuer) current() *state {
	st := iss.st.Load()
	if len(st.spans) == 1 {
		return st
	}
	sp := st.at(iss.now())
	if last := st.announced.Load(); sp.from.After(last.from) && st.announced.CompareAndSwap(last, sp) {
		iss.announce(sp)
	}
	return sp
}

// announce logs, once, that span sp of the key schedule has begun: when
// the first request or key look-up finds it current, which is after its
// instant when nothing came at the instant, or at a reload when nothing
// found it before. A request that reads the
// clock just before the instant, served after the line, does not log
// the span before it again: spans are announced in order only.
func (iss *Issuer) announce(sp *state) {
	published := slices.Sorted(maps.Keys(sp.byKID))
	iss.logger.Info("idsauth issuer: the key schedule moved on", slog.Time("from", sp.from),
		slog.String("signing_kid", sp.signer.KID), slog.Any("published_kids", published))
}

// limiterConfig is what a new limit.Memory is made for: while it stays,
// Reload keeps the one it has.
type limiterConfig struct {
	budget limit.Budget
	bytes  int
}

// New checks cfg (as Validate does), reads its key files and returns an
// Issuer serving it. The options hold for the issuer's life: Reload
// changes the configuration only.
func New(cfg *Config, opts ...Option) (*Issuer, error) {
	iss := &Issuer{logger: defaultLogger, now: time.Now}
	for _, opt := range opts {
		opt(iss)
	}
	if iss.tokens == nil {
		iss.tokens = &tokenstore.Memory{}
	}
	iss.issuedTo = iss.observer
	iss.observer = observe.Multi(iss.observer, refusalLog{iss.logger})
	if err := iss.Reload(cfg); err != nil {
		return nil, err
	}
	return iss, nil
}

// URL returns the issuer URL: the "iss" of its tokens.
func (iss *Issuer) URL() string { return iss.st.Load().issuer }

// TokenURL returns the token endpoint's URL.
func (iss *Issuer) TokenURL() string { return iss.st.Load().issuer + tokenPath }

// JWKSURL returns the URL of the published key set.
func (iss *Issuer) JWKSURL() string { return iss.st.Load().issuer + jwksPath }

// KeyIDs returns the key IDs the issuer publishes now; the first one
// signs.
func (iss *Issuer) KeyIDs() []string {
	st := iss.current()
	ids := []string{st.signer.KID}
	for kid := range st.byKID {
		if kid != st.signer.KID {
			ids = append(ids, kid)
		}
	}
	slices.Sort(ids[1:])
	return ids
}

// ServeHTTP serves the token, introspection and revocation endpoints,
// the discovery document and the JWKS, and 404 for any other path.
func (iss *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := iss.current()
	path, ok := strings.CutPrefix(r.URL.Path, st.prefix)
	switch {
	case ok && path == tokenPath:
		iss.token(w, r, st)
	case ok && path == introspectPath:
		iss.introspect(w, r, st)
	case ok && path == revocationPath:
		iss.revoke(w, r, st)
	case ok && path == discoveryPath:
		serveDocument(w, r, st.discovery, st.cacheHeader)
	case ok && path == jwksPath:
		serveDocument(w, r, st.jwks, st.cacheHeader)
	default:
		if !ok {
			iss.warnMisMounted(r, st)
		}
		http.NotFound(w, r)
	}
}

// warnMisMounted logs, once per configuration, a request for one of the
// issuer's endpoints under another path than its URL's: the issuer is
// mounted where its URL does not say (a mux pattern of another prefix,
// http.StripPrefix, a proxy that removes a prefix), and every request
// would get a bare 404. Any other path is a plain 404, never logged, so
// that probing paths writes nothing: the one line a configuration can
// cause names the path the request had (cut to 200 bytes, without its
// query) and the one the issuer expects.
func (iss *Issuer) warnMisMounted(r *http.Request, st *state) {
	var endpoint string
	for _, e := range []string{tokenPath, jwksPath, discoveryPath} {
		if strings.HasSuffix(r.URL.Path, e) {
			endpoint = e
			break
		}
	}
	if endpoint == "" || !st.misMounted.CompareAndSwap(false, true) {
		return
	}
	got := r.URL.Path
	if len(got) > 200 {
		got = got[:200] + "..."
	}
	iss.logger.Warn("idsauth issuer: a request for an endpoint under another path than the issuer URL's: is the issuer mounted where its URL says? (logged once per configuration)",
		slog.String("path", got), slog.String("expected", st.prefix+endpoint), slog.String("issuer", st.issuer))
}

// VerificationKeys returns the public key named kid among the keys the
// issuer publishes now, if it is for alg. With KeysVersion it makes
// *Issuer an accesstoken.VersionedKeySource, for a validator in the same
// process.
func (iss *Issuer) VerificationKeys(_ context.Context, kid, alg string) ([]crypto.PublicKey, error) {
	k, ok := iss.current().byKID[kid]
	if !ok {
		return nil, keyerr.ErrUnknownKey
	}
	if alg != k.Alg {
		return nil, keyerr.ErrAlgorithm
	}
	return []crypto.PublicKey{k.Public()}, nil
}

// KeysVersion changes whenever the published keys change, by a reload or
// at an instant of the key schedule, so that a validator's cache drops
// tokens of a key that is gone.
func (iss *Issuer) KeysVersion() uint64 { return iss.current().version }
