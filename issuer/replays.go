package issuer

import (
	"errors"
	"log/slog"
	"time"

	"github.com/idsauth/idsauth/limit"
)

// remember records subject's one-time ID (an assertion's jti, a DPoP
// proof's) until until, in the limiter store when it is a
// limit.ReplayStore (shared by the replicas), else in the issuer's own
// cache. It reports whether the ID is fresh, or why no token may be
// issued now: no room to remember it, or a store that cannot answer.
func (iss *Issuer) remember(q *request, subject, id string, until time.Time) (bool, *refusal) {
	rs := iss.sharedReplays()
	if rs == nil {
		fresh, full := iss.replays.Add(subject, id, until, q.now)
		if fresh && full > 0 {
			return false, replayFull(full, "the assertion replay cache is full (clientAssertions.replayCacheBytes)")
		}
		return fresh, nil
	}
	// Each replica accepts an assertion until exp plus the leeway by its
	// own clock; the shared store keeps the jti a leeway longer, so that
	// replicas whose clocks differ by up to that much still refuse it.
	fresh, err := rs.Remember(q.ctx, limit.Replay{Subject: subject, ID: id, Until: until.Add(assertionLeeway), Now: q.now})
	var full *limit.Refusal
	switch {
	case err == nil:
		return fresh, nil
	case errors.As(err, &full):
		return false, replayFull(full.RetryAfter, "the limiter store has no room to remember the assertion's jti")
	}
	iss.storeFailed(storeRemember, q.now, "idsauth issuer: the limiter store cannot remember an assertion's jti", slog.String("error", err.Error()))
	return false, &refusal{id: replaysDown, why: "the limiter store cannot remember the assertion's jti"}
}

func replayFull(wait time.Duration, why string) *refusal {
	return &refusal{id: replaysFull, retry: max(1, int((wait+time.Second-1)/time.Second)), why: why}
}

// sharedReplays is the limiter store when it remembers jtis too.
func (iss *Issuer) sharedReplays() limit.ReplayStore {
	rs, _ := iss.store.(limit.ReplayStore)
	return rs
}
