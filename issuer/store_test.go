package issuer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
	store := limit.NewMemory(64 << 10)
	limits := func(c *issuer.Config) {
		c.Limits = issuer.Limits{FailedAttemptsPerClient: 4, FailedAttemptsPerAddress: 50, TrustedProxyHeader: "X-Forwarded-For"}
	}
	replicas := []*server{newServer(t, limits, issuer.WithLimiterStore(store)), newServer(t, limits, issuer.WithLimiterStore(store))}
	attack := form("grant_type", "client_credentials", "client_id", "admin", "client_secret", "guess", "scope", scope.AdminWebAPI)
	var statuses []int
	for i := range 8 {
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
