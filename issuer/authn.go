package issuer

import (
	"errors"
	"log/slog"
	"time"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
)

// authenticate finds who is asking by the credentials read (a secret or a
// signed assertion): a client or, at introspection, an API resource. It
// is the one authentication of the three endpoints. Each attempt is
// charged to the failure budgets before anything is verified (see
// Limits), given back when it succeeds; an unknown client costs the work
// of a wrong secret, or of a wrong key, and a failure is held to the
// failure floor.
func (iss *Issuer) authenticate(q *request) (*client, *refusal) {
	st := q.st
	cl, subject := q.principal()
	q.who.addr = q.addr
	if cl != nil {
		q.who.client = cl.id
	}
	if q.certAuth {
		return iss.authenticateCert(q, cl, subject)
	}
	start := time.Now()
	var repeat repeatAttempt
	if !q.asserted {
		// Hashed for the table only when this client failed from this
		// address within the window: a right secret computes no HMAC.
		var against []secret.Hash // an unknown subject's: none
		if cl != nil {
			against = cl.hashes
		}
		repeat = st.repeats.Attempt(subject, against, q.secret, q.addr)
		if repeat.Repeated(q.now) {
			// The same secret failed for this client from this address
			// within the window: the caller learns nothing new, so it is
			// answered as it was, held to the failure floor, and neither
			// checked nor charged again (see repeatBytes). It takes no
			// turn among the bcrypt checks: repeats cost nothing to send,
			// and a turn costs the callers behind it their wait.
			st.verifier.HoldFailure(q.ctx, start)
			return nil, &refusal{id: badCredentials, why: "the same secret already failed from this address; not charged again"}
		}
	}
	res, no := iss.reserve(q, subject)
	if no != nil {
		return nil, no
	}
	if q.federated {
		return iss.authenticateFederated(q, cl, res)
	}
	if !q.asserted {
		var hashes []secret.Hash // none for an unknown one: the same work, no match
		if cl != nil {
			hashes = cl.hashes
		}
		if !st.verifier.Verify(q.ctx, hashes, q.secret) {
			res.Failed()
			// Only a check that ran to its end is remembered: one cut
			// short by the request's end (waiting for a bcrypt turn, say)
			// proved nothing, and the right secret must not be taken for
			// a repeat.
			if q.ctx.Err() == nil {
				repeat.Failed(q.now.Add(st.budget.Window))
			}
			return nil, refuse(badCredentials)
		}
		res.Succeeded()
		return cl, nil
	}
	start = time.Now()
	cl = iss.clientKeys(q, cl) // a jwksUri client's, fetched
	jti, until, owed, err := st.checkAssertion(q.assertion, q.id, cl, q.now)
	if err == nil {
		fresh, no := iss.remember(q, subject, jti, until)
		if no != nil {
			res.Succeeded() // the key was right: nothing to charge, nor to pad
			return nil, no
		}
		if fresh {
			res.Succeeded()
			return cl, nil
		}
		err = assertionRefused("assertion jti already used")
	}
	st.pad(q.assertion, owed) // a refusal does a wrong key's signature work
	res.Failed()
	st.verifier.HoldFailure(q.ctx, start)
	return nil, &refusal{id: badCredentials, why: err.Error()}
}

// principal returns the client that q's credentials name or, at
// introspection, the API resource (nil when none is registered), and its
// subject in the failure budgets and the replay memory.
func (q *request) principal() (*client, string) {
	if q.endpoint == introspectionEndpoint {
		return q.st.apiByID(q.id), apiSubject(q.id)
	}
	return q.st.client(q.id), q.id
}

// apiByID returns the credentials of the API resource id, or nil.
func (st *state) apiByID(id string) *client {
	if a := st.apis[id]; a != nil {
		return a.client
	}
	return nil
}

// apiSubject is the failure limiter's subject for an API resource's
// name: apart from the clients', so that an API and a client of one name
// spend separate budgets.
func apiSubject(name string) string { return "\x00api:" + name }

// repeatBytes is the memory of the table in which the token endpoint
// remembers, for the failure window, which secrets failed for which
// client from which address (16 bytes each, as a keyed hash: never the
// secret), and a quarter of it again for the filter by which a client
// that failed nothing from its address skips the hash. The same secret
// failing again from the same address within the window (x/oauth2's
// AuthStyleAutoDetect sends each secret twice, and a misconfigured client
// runs again and again) is answered as it was, 401 invalid_client held to
// the failure floor, without a check or a charge to any budget: it tells
// the caller nothing new. A new secret, or one from another address, is
// checked and charged as ever; a full table forgets the oldest failures,
// which are then charged again, so fullness never makes a guess free.
// Each configuration has its own table (a reload may make a failed secret
// right), and each process: a secret repeated at N replicas sharing a
// store is charged at most N times per window.
const repeatBytes = 64 << 10

// reserve takes one failure from the budgets of subject and q's address
// before its credentials are checked (see Limits): a 429 when a budget is
// spent, a 503 when the limiter's store cannot answer.
func (iss *Issuer) reserve(q *request, subject string) (limit.Reservation, *refusal) {
	res, err := q.st.limiter.Reserve(q.ctx, limit.Request{Subject: subject, Address: q.addr, Budget: q.st.budget, Now: q.now})
	if err == nil {
		return res, nil
	}
	var spent *limit.Refusal
	if errors.As(err, &spent) {
		return nil, &refusal{id: tooManyFailures, retry: spent.RetryAfterSeconds(), limit: spent.Limit}
	}
	iss.storeFailed(storeReserve, q.now, "idsauth issuer: the failure limiter's store cannot answer", slog.String("error", err.Error()))
	return nil, refuse(limiterDown)
}
