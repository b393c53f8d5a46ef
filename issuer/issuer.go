package issuer

import (
	"context"
	"crypto"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// The last Reload's configuration, compiled, applied with the
	// registered clients (registered.go).
	file fileState
	// The last SetRegistered's API resources, and the registered clients
	// left out since, which a Reload tries again beside those it serves.
	registeredAPIs []APIResourceConfig
	leftOut        []ClientConfig
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

	// remote holds the key sets fetched for trusted issuers and jwksUri
	// clients, for the issuer's life (federation_keys.go).
	remote remoteKeys

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
	authorizePath  = "/connect/authorize" // with Config.MCPClients alone
	discoveryPath  = "/.well-known/openid-configuration"
	jwksPath       = discoveryPath + "/jwks"
)

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
	case ok && path == authorizePath && st.mcpClients:
		refuseAuthorization(w)
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

// Reload checks cfg (as Validate does), reads its key files and, only if
// all is well, makes it the issuer's configuration: keys, clients and
// limits change at once for every request that starts after it returns,
// and introspection answers about tokens issued before by the clients as
// they are now (a removed client's are inactive there), also when the
// introspection began before Reload returned and answers after. On error
// nothing changes. The failure limiter's memory of failed
// attempts is kept while the limits stay the same; the jtis of used
// client assertions are always kept until they expire, whatever the new
// ClientAssertions.ReplayCacheBytes.
//
// To rotate the signing key without a failed request, in one reload: give
// the current key a RetireAt, and add the new key with a PublishAt, and a
// SignAt at least ValidatorRefresh + JWKSMaxAge later (see KeyConfig for
// the rules). Without times, in three: add the new key
// after the current one and reload (it is published); once validators
// have fetched the JWKS again, move it first and reload (it signs); once
// the old key's last token has expired, remove it and reload.
func (iss *Issuer) Reload(cfg *Config) error {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	now := iss.now()
	base, sets, err := iss.compile(cfg, now)
	if err != nil {
		return err
	}
	file := fileState{cfg: cfg.clone(), st: base, sets: sets}
	// The registered clients served now, and those left out, checked
	// against the new configuration.
	regs := slices.Clone(iss.leftOut)
	if cur := iss.st.Load(); cur != nil {
		cur.table.each(func(_ []byte, flags byte, body []byte) bool {
			if flags&flagFile == 0 {
				if e, err := decodeEntry(body); err == nil {
					regs = append(regs, e.Config)
				}
			}
			return true
		})
	}
	ids := make([]string, len(cfg.Clients))
	for i, cc := range cfg.Clients {
		ids[i] = cc.ClientID
	}
	st, left, out, err := iss.build(file, regs, iss.registeredAPIs, ids)
	if err != nil {
		return err
	}
	iss.apply(st, sets, now)
	iss.file, iss.leftOut = file, out
	if ids := st.selfSignedStopped(); len(ids) > 0 {
		iss.logger.Warn("idsauth issuer: these clients authenticate with a self-signed certificate (certificateThumbprints), which the TLS server refuses at the handshake unless it is among its CAs; discovery does not list self_signed_tls_client_auth",
			slog.Any("clients", ids))
	}

	for _, err := range left {
		iss.logger.Warn("idsauth issuer: a registered client or API resource is left out: it does not fit this configuration", slog.String("error", err.Error()))
	}
	iss.warnIDs(cfg)
	return nil
}

// warnIDs logs each client ID and API resource name of cfg that a
// registry could not hold (checkRegisteredID): it is served, but a
// terminal, a log reader or a URL path may take it for something else.
func (iss *Issuer) warnIDs(cfg *Config) {
	warn := func(field string, err error) {
		iss.logger.Warn("idsauth issuer: an ID of the configuration file is outside the rule of registered IDs (printable ASCII, not ., .. or /): it is served; consider renaming it",
			slog.String("field", field), slog.String("error", err.Error()))
	}
	for i, cc := range cfg.Clients {
		if err := checkRegisteredID(cc.ClientID); err != nil {
			warn(fmt.Sprintf("clients[%d].clientId", i), err)
		}
	}
	for i, ac := range cfg.APIResources {
		if err := checkRegisteredID(ac.Name); err != nil {
			warn(fmt.Sprintf("apiResources[%d].name", i), err)
		}
	}
}

// apply makes st, whose clients are all known, with the key sets of its
// schedule's spans from the one current at now on, the issuer's state:
// the limiter and verifier it keeps, the jtis it remembers, the versions
// of its key sets. Nothing in it fails: whatever can (a key file, a check,
// a DPoP nonce key) failed in compile, before the verifier is primed, the
// replay cache resized or a version given out, which are the issuer's.
func (iss *Issuer) apply(st *state, sets []keySet, now time.Time) {
	old := iss.st.Load()
	// The guards of this change: the stores kept while their settings
	// stay, a table of repeated failures of its own.
	g := *st.guards
	switch {
	case iss.store != nil:
		g.limiter = iss.store
	case old != nil && old.limiterCfg == g.limiterCfg:
		g.limiter = old.limiter
	default:
		g.limiter = &limit.Memory{MaxBytes: g.limiterCfg.bytes}
	}
	if old != nil { // its failures are keyed by the secrets they were checked against
		g.repeats = old.repeats
	} else {
		g.repeats = newRepeatTable(repeatBytes)
	}
	switch {
	case iss.verifier != nil:
		g.verifier = iss.verifier
	case old != nil && old.verifierCfg == g.verifierCfg:
		g.verifier = old.verifier
	default:
		g.verifier = secret.NewVerifier(g.verifierCfg)
	}
	st.guards = &g
	st.verifier.Prime(slices.Collect(maps.Values(st.shapes))...)
	switch {
	case iss.sharedReplays() != nil: // the store remembers the jtis
	case iss.replays == nil:
		iss.replays = replay.New(st.replayBytes)
	default:
		iss.replays.Resize(st.replayBytes, now)
	}
	// A version names one key set for the issuer's life: the span current
	// now keeps its version if its keys stay, and a version is never
	// given to another span, so that a token cached under it was verified
	// by one of its keys.
	var cur *state
	if old != nil {
		cur = old.at(now)
	}
	kr := *st.keyring // this change's spans, and what of them was announced
	st.keyring = &kr
	kr.spans = make([]*state, len(sets))
	for i, ks := range sets {
		switch {
		case i == 0 && cur != nil && string(cur.jwks) == string(ks.jwks):
			ks.version = cur.version
		case i > 0 && string(sets[i-1].jwks) == string(ks.jwks):
			ks.version = sets[i-1].version
		default:
			iss.version++
			ks.version = iss.version
		}
		sets[i] = ks
		sp := *st
		sp.keySet = ks
		kr.spans[i] = &sp
	}
	kr.announced = new(atomic.Pointer[state])
	kr.announced.Store(kr.spans[0]) // current now: a reload is no move of the schedule
	iss.st.Store(kr.spans[0])
	iss.remote.keep(st)
	if old != nil && kr.spans[0].from.After(old.announced.Load().from) {
		iss.announce(kr.spans[0]) // a switch that nothing found before the reload
	}
}

// compile checks cfg and reads its keys (the one place key files are
// read), and returns the key sets of the schedule's spans from the one
// current at now on, with their DPoP nonces, without versions. It is
// all of Reload that can fail, and changes nothing of the issuer's but
// its ephemeral key, made once.
func (iss *Issuer) compile(cfg *Config, now time.Time) (*state, []keySet, error) {
	st, err := cfg.compileParts()
	if err != nil {
		return nil, nil, err
	}
	if err := st.loadClientKeys(cfg); err != nil {
		return nil, nil, err
	}
	if st.mtls.pool, err = cfg.MTLS.loadCAs(cfg.Dir); err != nil {
		return nil, nil, err
	}
	if err := st.trust.load(cfg.Dir); err != nil {
		return nil, nil, err
	}
	st.mtls.verified = iss.handshakeVerifies
	ks, err := iss.signingKeys(cfg)
	if err != nil {
		return nil, nil, err
	}
	st.schedule = st.plan.schedule(ks)
	sets, err := st.plan.keySets(ks, now, st.proofs)
	if err != nil {
		return nil, nil, err
	}
	return st, sets, nil
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
