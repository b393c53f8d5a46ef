package issuer

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/replay"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

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
	st, left, err := file.withRegistered(iss.registered)
	if err != nil {
		return err
	}
	ids := make([]string, len(cfg.Clients))
	for i, cc := range cfg.Clients {
		ids[i] = cc.ClientID
	}
	iss.renew(iss.st.Load(), st, ids)
	iss.apply(st, sets, now)
	iss.file = file
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
	switch {
	case iss.store != nil:
		st.limiter = iss.store
	case old != nil && old.limiterCfg == st.limiterCfg:
		st.limiter = old.limiter
	default:
		st.limiter = &limit.Memory{MaxBytes: st.limiterCfg.bytes}
	}
	st.repeats = newRepeatTable(repeatBytes)
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
	for _, api := range st.apis {
		subjects = append(subjects, api.hashes)
	}
	st.verifier.Prime(subjects...)
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
	spans := make([]*state, len(sets))
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
		sp.tokenPrefixes = sp.makePrefixes()
		spans[i] = &sp
	}
	announced := new(atomic.Pointer[state])
	announced.Store(spans[0]) // current now: a reload is no move of the schedule
	misMounted := new(atomic.Bool)
	for _, sp := range spans {
		sp.spans, sp.announced, sp.misMounted = spans, announced, misMounted
	}
	iss.st.Store(spans[0])
	if old != nil && spans[0].from.After(old.announced.Load().from) {
		iss.announce(spans[0]) // a switch that nothing found before the reload
	}
}

// compile checks cfg and reads its keys (the one place key files are
// read), and returns the key sets of the schedule's spans from the one
// current at now on, with their DPoP nonces, without versions. It is
// all of Reload that can fail, and changes nothing of the issuer's but
// its ephemeral key, made once.
func (iss *Issuer) compile(cfg *Config, now time.Time) (*state, []keySet, error) {
	st, err := cfg.check()
	if err != nil {
		return nil, nil, err
	}
	if err := st.loadClientKeys(cfg); err != nil {
		return nil, nil, err
	}
	if st.mtls.pool, err = cfg.MTLS.loadCAs(cfg.Dir); err != nil {
		return nil, nil, err
	}
	ks := make([]*keys.Key, 0, len(cfg.Keys))
	for i, kc := range cfg.Keys {
		k, err := kc.load(cfg.Dir)
		if err != nil {
			return nil, nil, causeErr(fmt.Sprintf("keys[%d]", i), err)
		}
		if slices.ContainsFunc(ks, func(o *keys.Key) bool { return o.KID == k.KID }) {
			return nil, nil, fieldErr(fmt.Sprintf("keys[%d]", i), "the same key is listed twice")
		}
		ks = append(ks, k)
	}
	if cfg.EphemeralKey {
		if iss.ephemeral == nil {
			k, err := keys.Generate("ES256")
			if err != nil {
				return nil, nil, err
			}
			iss.ephemeral = k
		}
		iss.logger.Warn("idsauth issuer: NO SIGNING KEY CONFIGURED; using an ephemeral ES256 key that dies with this process. Development only: tokens stop validating at restart.",
			slog.String("kid", iss.ephemeral.KID))
		ks = []*keys.Key{iss.ephemeral}
	}
	st.schedule = st.plan.schedule(ks)
	spans := st.plan.spans
	first := len(spans) - 1
	for first > 0 && now.Before(spans[first].from) {
		first--
	}
	if spans[first].signer < 0 {
		return nil, nil, fieldErr("keys", "no key signs yet at %s (the issuer's clock); the first one signs from %s", utc(now), utc(spans[first+1].from))
	}
	sets := make([]keySet, 0, len(spans)-first)
	for _, sp := range spans[first:] {
		signer := ks[sp.signer]
		set := keySet{from: sp.from, signer: signer, method: jwt.GetSigningMethod(signer.Alg), header: encodedHeader(signer), byKID: make(map[string]*keys.Key, len(sp.published))}
		doc := struct {
			Keys []keys.JWK `json:"keys"`
		}{}
		for _, i := range sp.published {
			set.byKID[ks[i].KID] = ks[i]
			doc.Keys = append(doc.Keys, ks[i].PublicJWK())
		}
		if set.jwks, err = json.Marshal(doc); err != nil {
			return nil, nil, err
		}
		if st.dpopNonces {
			if set.nonces, err = noncesOf(signer, st.dpopWindow); err != nil {
				return nil, nil, fmt.Errorf("issuer: the DPoP nonce key: %w", err)
			}
		}
		sets = append(sets, set)
	}
	st.mtls.verified = iss.handshakeVerifies
	if st.discovery, err = st.discoveryDocument(); err != nil {
		return nil, nil, err
	}
	if ids := st.selfSignedStopped(); len(ids) > 0 {
		iss.logger.Warn("idsauth issuer: these clients authenticate with a self-signed certificate (certificateThumbprints), which the TLS server refuses at the handshake unless it is among its CAs; discovery does not list self_signed_tls_client_auth",
			slog.Any("clients", ids))
	}
	return st, sets, nil
}
