package issuer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
)

// TestReplicasWithOneStoreShareOneBudget: two issuers given one store by
// WithLimiterStore enforce one budget between them: failures for a client
// split across both lock its address out at the client's budget, and the
// client's right secret from another address still gets its token on
// either. (The Redis store's tests do the same across processes' worth of
// issuers.)
func TestReplicasWithOneStoreShareOneBudget(t *testing.T) {
	store := &limit.Memory{MaxBytes: 64 << 10}
	limits := func(c *issuer.Config) {
		c.Limits = limit.Config{FailedAttemptsPerSubject: 4, FailedAttemptsPerAddress: 50, TrustedProxyHeader: "X-Forwarded-For"}
	}
	replicas := []*server{newServer(t, limits, issuer.WithLimiterStore(store)), newServer(t, limits, issuer.WithLimiterStore(store))}
	var statuses []int
	for i := range 8 {
		attack := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", fmt.Sprint("guess-", i), "scope", scope.AdminWebAPI)
		statuses = append(statuses, post(t, replicas[i%2].tokenURL(), formType, attack, "X-Forwarded-For", "203.0.113.9").status)
	}
	if fmt.Sprint(statuses) != "[401 401 401 401 429 429 429 429]" {
		t.Fatalf("8 wrong secrets split across two replicas: %v, want the budget of 4 then 429", statuses)
	}
	right := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI)
	for i := range 4 {
		if a := post(t, replicas[i%2].tokenURL(), formType, right, "X-Forwarded-For", "198.51.100.7"); a.status != 200 {
			t.Fatalf("the right secret from another address on replica %d: %d %s", i%2+1, a.status, a.raw)
		}
	}
}

// unavailable is a store that cannot answer, as a shared store whose
// backend is down and that fails closed.
type unavailable struct{}

func (unavailable) Reserve(context.Context, limit.Request) (limit.Reservation, error) {
	return nil, fmt.Errorf("%w: down for the test", limit.ErrUnavailable)
}

// TestUnavailableStoreRefusesWithoutVerifying: when the store cannot
// answer, every token request, the right secret's too, gets 503
// temporarily_unavailable with Retry-After, and no secret is checked.
func TestUnavailableStoreRefusesWithoutVerifying(t *testing.T) {
	s := newServer(t, nil, issuer.WithLimiterStore(unavailable{}))
	before := issuer.VerifierCounts(s.iss)
	for _, pass := range []string{adminSecret, "guess"} {
		a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", pass, "scope", scope.AdminWebAPI))
		if a.status != 503 || a.body["error"] != "temporarily_unavailable" || a.header.Get("Retry-After") != "1" {
			t.Fatalf("%d %v %s", a.status, a.header, a.raw)
		}
	}
	if after := issuer.VerifierCounts(s.iss); after != before {
		t.Fatalf("secrets were checked: %+v, then %+v", before, after)
	}
	if logs := s.logs.String(); !strings.Contains(logs, "down for the test") || strings.Contains(logs, adminSecret) {
		t.Fatalf("the log should name the store's error and no secret:\n%s", logs)
	}
}

// sharedIssuer is the issuer URL of replicas behind one name: an
// assertion addressed to one is addressed to all.
const sharedIssuer = "https://ids.example/ids"

// replicasOn returns two issuers serving sharedIssuer with opts.
func replicasOn(t *testing.T, opts ...issuer.Option) []*server {
	edit := func(c *issuer.Config) {
		c.Issuer = sharedIssuer
		withMachineClients(c)
		c.Limits.TrustedProxyHeader = "X-Forwarded-For"
	}
	return []*server{newServer(t, edit, opts...), newServer(t, edit, opts...)}
}

// TestReplicasWithOneStoreRefuseAReplay: two issuers given one
// limit.ReplayStore (issue 17) remember jtis in it: an assertion that got
// a token at one is refused at the other (and at the first) as a reused
// jti is, a fresh one gets a token at either.
func TestReplicasWithOneStoreRefuseAReplay(t *testing.T) {
	replicas := replicasOn(t, issuer.WithLimiterStore(&limit.Memory{MaxBytes: 64 << 10}))
	for first := range 2 {
		as := assertionForm(assertionFor(t, signerKey(), "signer", sharedIssuer+"/connect/token", nil, nil), "scope", scope.AdminWebAPI)
		if a := post(t, replicas[first].tokenURL(), formType, as); a.status != 200 {
			t.Fatalf("a fresh assertion at replica %d: %d %s", first+1, a.status, a.raw)
		}
		for _, i := range []int{1 - first, first} {
			a := post(t, replicas[i].tokenURL(), formType, as, "X-Forwarded-For", "203.0.113.9")
			if a.status != 401 || a.body["error"] != "invalid_client" || a.body["error_description"] != "client authentication failed" {
				t.Fatalf("replayed at replica %d after a token at replica %d: %d %s", i+1, first+1, a.status, a.raw)
			}
		}
	}
}

// budgetsOnly is a store that keeps budgets and no jtis: it wraps a
// ReplayStore and hides its Remember.
type budgetsOnly struct{ limit.Store }

// TestStoreWithoutRememberLeavesTheJtisToTheIssuer: with a store that is
// not a limit.ReplayStore, each issuer remembers the jtis in its own
// cache, as without a store.
func TestStoreWithoutRememberLeavesTheJtisToTheIssuer(t *testing.T) {
	s := newServer(t, withMachineClients, issuer.WithLimiterStore(budgetsOnly{&limit.Memory{MaxBytes: 64 << 10}}))
	as := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI)
	if a := post(t, s.tokenURL(), formType, as); a.status != 200 {
		t.Fatalf("first use: %d %s", a.status, a.raw)
	}
	if n := issuer.ReplayLive(s.iss); n != 1 {
		t.Fatalf("the issuer's own cache holds %d jtis, want 1", n)
	}
	if a := post(t, s.tokenURL(), formType, as); a.status != 401 {
		t.Fatalf("replayed: %d %s", a.status, a.raw)
	}
}

// cannotRemember keeps budgets in a limit.Memory and answers every
// Remember with err: a shared store that is full, or that cannot reach
// its backend and fails closed.
type cannotRemember struct {
	*limit.Memory
	err error
}

func (c cannotRemember) Remember(context.Context, limit.Replay) (bool, error) { return false, c.err }

// TestStoreThatCannotRememberIssuesNothing: a valid assertion whose jti
// the store has no room for gets 429 slow_down with the store's
// Retry-After; one the store cannot answer for gets 503
// temporarily_unavailable, logged; neither gets a token, nor is charged
// to the client's budget.
func TestStoreThatCannotRememberIssuesNothing(t *testing.T) {
	for _, c := range []struct {
		name        string
		err         error
		status      int
		code, retry string
	}{
		{"full", &limit.Refusal{Limit: limit.Replays, RetryAfter: 90 * time.Second}, 429, "slow_down", "90"},
		{"unavailable", fmt.Errorf("%w: down for the test", limit.ErrUnavailable), 503, "temporarily_unavailable", "1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(cfg *issuer.Config) { withMachineClients(cfg); cfg.Limits.FailedAttemptsPerSubject = 2 },
				issuer.WithLimiterStore(cannotRemember{&limit.Memory{MaxBytes: 64 << 10}, c.err}))
			for range 4 {
				as := assertionForm(assertionFor(t, signerKey(), "signer", s.tokenURL(), nil, nil), "scope", scope.AdminWebAPI)
				a := post(t, s.tokenURL(), formType, as)
				if a.status != c.status || a.body["error"] != c.code || a.header.Get("Retry-After") != c.retry || a.body["access_token"] != nil {
					t.Fatalf("%d %v %s, want %d %s with Retry-After %s", a.status, a.header, a.raw, c.status, c.code, c.retry)
				}
			}
			if c.status == 503 && !strings.Contains(s.logs.String(), "down for the test") {
				t.Fatalf("the log should name the store's error:\n%s", s.logs)
			}
		})
	}
}
