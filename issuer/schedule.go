package issuer

import (
	"fmt"
	"slices"
	"time"

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
	return p, p.check(ahead, live)
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

// check refuses a plan in which a key signs less than ahead after it is
// published, no key signs at some instant after the first one does, a key
// retires less than live after it last signs, or a key signs again after
// another took over.
func (p keyPlan) check(ahead, live time.Duration) error {
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
