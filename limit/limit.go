// Package limit holds the failure limits of the issuer's token endpoint and
// of middleware.SCIMAuth ([the contract] §2 and §4): Config, one type for
// both, sets the budgets of failed authentications and how a client's
// address is found; a Store keeps the budgets. Memory, the default, keeps
// them in one process; a Store of your own, such as the Redis store of the
// module github.com/idsauth/idsauth/redisstore, lets several replicas
// enforce one budget.
//
// Three budgets are kept, each refilling evenly over Budget.Window:
//
//   - per address: every failure from one address, whatever it aimed at;
//   - per subject (a client ID or a tenant): failures from any address;
//   - per subject and address: whether that address has failed for that
//     subject within the window, or gave its right secret within
//     Budget.Trust.
//
// A Store implements exactly these rules, atomically for each call:
//
//   - Reserve takes one failure from the address's budget, and refuses
//     (Address) when it is spent.
//   - An address trusted for the subject (it gave the right secret within
//     Budget.Trust and has not failed for it since) is not charged to the
//     subject, however many requests it has in flight.
//   - Otherwise one failure is taken from the subject's budget and the
//     address is marked as failing for the subject for the window; when
//     the subject's budget is spent, an address not marked may still try
//     once (and is marked), and a marked one is refused (SubjectAddress).
//   - Succeeded gives the reservation back and trusts the address for the
//     subject for Budget.Trust; Failed keeps it, and ends that trust.
//   - The budgets' time never goes back. A reading behind the latest time
//     the store gave counts as that time, unless the wall clock was
//     stepped back: then the store's time carries on from where it was,
//     running ahead of the readings by the step. Memory counts a reading
//     that has a monotonic clock reading (time.Now's) on it, which no step
//     moves; one without is a step when it is more than a minute
//     behind. The Redis store reads Redis's TIME in one atomic script, so
//     any reading behind is a step. So a clock stepped back by an hour
//     neither refuses everyone who asked in the hour it repeats for the
//     hour, nor forgives a spent budget.
//
// So the subject's own caller, who knows the secret, is never locked out
// by somebody else's failures, while the secrets verified for one subject
// per window stay bounded by its budget plus one per failing address.
//
// [the contract]: https://github.com/idsauth/idsauth/blob/main/docs/CONTRACT.md
package limit

import (
	"context"
	"errors"
	"time"
)

// Store keeps the budgets. Implementations are safe for concurrent use.
// The issuer and SCIMAuth call Reserve before they verify a secret, and
// exactly one of the reservation's Succeeded or Failed after.
type Store interface {
	// Reserve takes one failure from the budgets of r.Subject and
	// r.Address, before a secret is verified. It returns a Reservation,
	// or a *Refusal when a budget is spent, or another error when the
	// store cannot decide (wrap ErrUnavailable): the caller then refuses
	// the attempt without verifying it. ctx carries the request's values;
	// a store should keep charging a request that has ended (see
	// context.WithoutCancel) and bound its own wait.
	Reserve(ctx context.Context, r Request) (Reservation, error)
}

// Reservation is a budget taken for one verification. Exactly one of
// Succeeded or Failed is called on it, once.
type Reservation interface {
	// Succeeded gives the reservation back: the secret was right, so
	// nothing is charged, and the address is trusted for the subject for
	// Budget.Trust.
	Succeeded()
	// Failed keeps the reservation: the failure stays charged, and an
	// address that was trusted for the subject no longer is.
	Failed()
}

// Request is one authentication about to be verified.
type Request struct {
	// Subject is what the secret is for: a client ID or a SCIM tenant.
	// It is the requester's text (bounded in length by the caller), so a
	// store must not keep it verbatim: hash it.
	Subject string
	// Address is the client's address, normalised by the caller (no port,
	// IPv6 by its /64).
	Address string
	// Budget is the budgets to enforce; the caller's configuration, so a
	// reload applies at once.
	Budget Budget
	// Now is the caller's clock (zero: time.Now). A store shared by
	// several processes may use one clock of its own instead, so that
	// they agree. Every caller of one store that uses Now must read the
	// same clock: time.Now, whose monotonic reading no step of the wall
	// clock moves, or one clock of their own; two clocks more than
	// a minute apart would each take the other's readings for steps.
	Now time.Time
}

// Budget sets the budgets of one Request: the caller's configuration
// (Config.Budget), so that a reload applies at once. Every field must be
// positive: a Store answers a request with another with an error (see
// Check). A failure is charged as time (Window/PerAddress,
// Window/PerSubject) and refills at that pace, so a changed budget
// applies at once to new charges.
type Budget struct {
	PerSubject int           // failures per subject per window, from any address
	PerAddress int           // failures per address per window, for any subject
	Window     time.Duration // over which a budget refills evenly
	// Trust is how long an address that gave a subject's right secret
	// stays trusted for it: it may keep trying while others have spent
	// the subject's budget, until it fails once. Config.Budget sets a day.
	Trust time.Duration
}

var errBudget = errors.New("limit: every field of a Budget must be positive")

// Check returns an error unless every field of b is positive: what a
// Store answers to such a budget.
func (b Budget) Check() error {
	if b.PerSubject <= 0 || b.PerAddress <= 0 || b.Window <= 0 || b.Trust <= 0 {
		return errBudget
	}
	return nil
}

// steppedBack is how far behind the latest time Memory gave a reading
// without a monotonic clock reading must be for Memory to take the wall
// clock as stepped back (see the rules above): far more than one reading
// lags another while requests wait. A lag taken for a step would move the
// clock ahead, and refill budgets early.
const steppedBack = time.Minute

// Limit names the budget that refused a request.
type Limit string

// The budgets that refuse.
const (
	Address        Limit = "address"         // the address failed too often
	SubjectAddress Limit = "subject+address" // the subject's budget is spent and this address failed for it
)

// Refusal is Reserve's error when a budget is spent, and Remember's
// (Limit Replays) when it has no room for an ID.
type Refusal struct {
	Limit      Limit         // which budget
	RetryAfter time.Duration // until the request would be reserved
}

func (r *Refusal) Error() string {
	if r.Limit == Replays {
		return "limit: no room to remember another ID (replays), retry after " + r.RetryAfter.String()
	}
	return "limit: too many failed attempts (" + string(r.Limit) + "), retry after " + r.RetryAfter.String()
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least
// 1, for a Retry-After header.
func (r *Refusal) RetryAfterSeconds() int {
	return max(1, int((r.RetryAfter+time.Second-1)/time.Second))
}

// ErrUnavailable is wrapped by a Store's error when it cannot decide (its
// backend is down or too slow) and refuses the attempt: the issuer answers
// 503 temporarily_unavailable, SCIMAuth a 503 SCIM error, both with
// Retry-After: 1, and no secret is verified.
var ErrUnavailable = errors.New("limit: the failure limiter's store cannot answer")
