package issuer

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/keys"
)

// keyTimes are a key's publishAt, signAt and retireAt; a zero time is
// not set.
type keyTimes struct{ publish, sign, retire time.Time }

// keyPlan is when each key of a configuration is published and signs:
// the spans between the instants its times name, in order, adjacent
// spans differing. Key indexes are those of Config.Keys (or 0, the
// ephemeral key).
type keyPlan struct {
	times []keyTimes
	spans []planSpan
}

type planSpan struct {
	from      time.Time // zero: since ever
	published []int     // in the order of the configuration
	signer    int       // -1: none, before the first key signs
}

// after reports whether t, zero meaning since ever, is at or after x, zero
// meaning not set (since ever).
func after(t, x time.Time) bool { return x.IsZero() || (!t.IsZero() && !t.Before(x)) }

func (k keyTimes) published(t time.Time) bool {
	return after(t, k.publish) && (k.retire.IsZero() || t.IsZero() || t.Before(k.retire))
}

func (k keyTimes) maySign(t time.Time) bool { return k.published(t) && after(t, k.sign) }

// keyPlan checks the schedule the keys' times make (see KeyConfig): c
// has its defaults, and its other fields are checked.
func (c *Config) keyPlan() (keyPlan, error) {
	if len(c.Keys) == 0 { // the ephemeral key: signs, always
		return keyPlan{times: make([]keyTimes, 1), spans: []planSpan{{published: []int{0}}}}, nil
	}
	var p keyPlan
	for i, kc := range c.Keys {
		kt := keyTimes{publish: kc.PublishAt.UTC(), sign: kc.SignAt.UTC(), retire: kc.RetireAt.UTC()}
		switch {
		case !kt.sign.IsZero() && kt.sign.Before(kt.publish):
			return p, fieldErr(fmt.Sprintf("keys[%d].signAt", i), "before publishAt")
		case !kt.retire.IsZero() && !kt.retire.After(kt.publish):
			return p, fieldErr(fmt.Sprintf("keys[%d].retireAt", i), "not after publishAt")
		case !kt.retire.IsZero() && !kt.retire.After(kt.sign):
			return p, fieldErr(fmt.Sprintf("keys[%d].retireAt", i), "not after signAt")
		}
		p.times = append(p.times, kt)
	}
	p.spans = evaluate(p.times)
	// Bounded so that no sum overflows: 2^32 s is over a century.
	const most = (1 << 32) * time.Second
	ahead := min(c.ValidatorRefresh, most) + min(c.JWKSMaxAge, most)
	var live time.Duration // the longest token lifetime
	for _, cc := range c.Clients {
		live = max(live, min(cc.AccessTokenLifetime, most))
	}
	return p, p.validate(ahead, live)
}

// evaluate returns the spans of the schedule: it evaluates it since ever
// and at each instant the times name.
func evaluate(ts []keyTimes) []planSpan {
	instants := []time.Time{{}}
	for _, kt := range ts {
		for _, t := range []time.Time{kt.publish, kt.sign, kt.retire} {
			if !t.IsZero() {
				instants = append(instants, t)
			}
		}
	}
	slices.SortFunc(instants, time.Time.Compare)
	instants = slices.CompactFunc(instants, time.Time.Equal)
	var out []planSpan
	for _, t := range instants {
		sp := planSpan{from: t, signer: -1}
		for i, kt := range ts {
			if kt.published(t) {
				sp.published = append(sp.published, i)
			}
			if kt.maySign(t) && (sp.signer < 0 || kt.sign.After(ts[sp.signer].sign)) {
				sp.signer = i
			}
		}
		if n := len(out); n > 0 && out[n-1].signer == sp.signer && slices.Equal(out[n-1].published, sp.published) {
			continue
		}
		out = append(out, sp)
	}
	return out
}

// validate refuses a plan in which a key signs less than ahead after it is
// published, no key signs at some instant after the first one does, a key
// retires less than live after it last signs, or a key signs again after
// another took over.
func (p keyPlan) validate(ahead, live time.Duration) error {
	for _, sp := range p.spans {
		if sp.signer < 0 {
			continue
		}
		kt := p.times[sp.signer]
		if kt.publish.IsZero() || sp.from.Sub(kt.publish) >= ahead {
			continue
		}
		field := fmt.Sprintf("keys[%d].signAt", sp.signer)
		if kt.sign.IsZero() {
			field = fmt.Sprintf("keys[%d].publishAt", sp.signer)
		}
		return fieldErr(field, "the key signs from %s, %v after its publishAt: validators need validatorRefreshSeconds + jwksMaxAgeSeconds = %v to fetch it first",
			utc(sp.from), sp.from.Sub(kt.publish), ahead)
	}
	first := slices.IndexFunc(p.spans, func(sp planSpan) bool { return sp.signer >= 0 })
	if first < 0 { // cannot be, with times in order
		return fieldErr("keys", "no key ever signs")
	}
	for j := first + 1; j < len(p.spans); j++ {
		if p.spans[j].signer < 0 {
			return fieldErr(fmt.Sprintf("keys[%d].retireAt", p.spans[j-1].signer), "no key signs from %s, when this one retires", utc(p.spans[j].from))
		}
	}
	for i, kt := range p.times {
		firstSpan := slices.IndexFunc(p.spans, func(sp planSpan) bool { return sp.signer == i })
		if firstSpan < 0 {
			continue
		}
		last := firstSpan
		for j := firstSpan + 1; j < len(p.spans); j++ {
			switch {
			case p.spans[j].signer == i && last != j-1:
				return fieldErr(fmt.Sprintf("keys[%d]", i), "signs again from %s, after keys[%d] took over", utc(p.spans[j].from), p.spans[last+1].signer)
			case p.spans[j].signer == i:
				last = j
			}
		}
		if kt.retire.IsZero() || last+1 == len(p.spans) {
			continue
		}
		stops := p.spans[last+1].from
		if until := stops.Add(live); kt.retire.Before(until) {
			return fieldErr(fmt.Sprintf("keys[%d].retireAt", i), "its tokens live until %s (it signs until %s, and accessTokenLifetime is up to %v): retire it then or later",
				utc(until), utc(stops), live)
		}
	}
	return nil
}

// utc formats an instant of the schedule.
func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ScheduledKey is when one signing key of the configuration is published
// and signs, as Issuer.KeySchedule reports it. A zero From time means
// since ever, a zero Until time forever.
type ScheduledKey struct {
	KID string
	Alg string

	PublishedFrom, PublishedUntil time.Time

	// Signs reports whether the key signs at any instant, and SignsFrom
	// and SignsUntil when.
	Signs                 bool
	SignsFrom, SignsUntil time.Time
}

// KeySchedule returns the signing keys of the configuration, in its
// order, with when each is published and signs. Which key signs now is
// the first of KeyIDs.
func (iss *Issuer) KeySchedule() []ScheduledKey { return slices.Clone(iss.st.Load().schedule) }

// schedule reports p for its keys ks.
func (p keyPlan) schedule(ks []*keys.Key) []ScheduledKey {
	out := make([]ScheduledKey, len(ks))
	for i, k := range ks {
		kt := p.times[i]
		sk := ScheduledKey{KID: k.KID, Alg: k.Alg, PublishedFrom: kt.publish, PublishedUntil: kt.retire}
		for j, sp := range p.spans {
			if sp.signer != i {
				continue
			}
			if !sk.Signs {
				sk.Signs, sk.SignsFrom = true, sp.from
			}
			sk.SignsUntil = time.Time{}
			if j+1 < len(p.spans) {
				sk.SignsUntil = p.spans[j+1].from
			}
		}
		out[i] = sk
	}
	return out
}

// noncesOf makes a span's DPoP nonces of period window, keyed from its
// signing key's private bytes: secret, the same at every replica of a
// configuration, and new with each signing key (a client then gets
// use_dpop_nonce once). It fails for a key in code whose private half
// does not validate, which compile then refuses.
func noncesOf(signer *keys.Key, window time.Duration) (*dpop.Nonces, error) {
	der, err := x509.MarshalPKCS8PrivateKey(signer.Private)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, der)
	m.Write([]byte("idsauth DPoP nonce key"))
	return &dpop.Nonces{Key: m.Sum(nil), Period: window}, nil
}

// signingKeys reads the signing keys of cfg, checked, or makes the
// ephemeral one (once for the issuer's life) when cfg says so.
func (iss *Issuer) signingKeys(cfg *Config) ([]*keys.Key, error) {
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
		return []*keys.Key{iss.ephemeral}, nil
	}
	ks := make([]*keys.Key, 0, len(cfg.Keys))
	for i, kc := range cfg.Keys {
		k, err := kc.load(cfg.Dir)
		if err != nil {
			return nil, causeErr(fmt.Sprintf("keys[%d]", i), err)
		}
		if slices.ContainsFunc(ks, func(o *keys.Key) bool { return o.KID == k.KID }) {
			return nil, fieldErr(fmt.Sprintf("keys[%d]", i), "the same key is listed twice")
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// keySets returns the key sets of p's spans from the one current at now
// on, with their DPoP nonces when pr asks for them, without versions
// (apply gives them); ks are the keys p's indexes name.
func (p keyPlan) keySets(ks []*keys.Key, now time.Time, pr *proofs) ([]keySet, error) {
	spans := p.spans
	first := len(spans) - 1
	for first > 0 && now.Before(spans[first].from) {
		first--
	}
	if spans[first].signer < 0 {
		return nil, fieldErr("keys", "no key signs yet at %s (the issuer's clock); the first one signs from %s", utc(now), utc(spans[first+1].from))
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
		var err error
		if set.jwks, err = json.Marshal(doc); err != nil {
			return nil, err
		}
		if pr.dpopNonces {
			if set.nonces, err = noncesOf(signer, pr.dpopWindow); err != nil {
				return nil, fmt.Errorf("issuer: the DPoP nonce key: %w", err)
			}
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// validate checks what can be known of the key without reading its file.
func (kc KeyConfig) validate() error {
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
		path, data, err := readFile(dir, kc.File)
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
