package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scimerr"
	"github.com/idsauth/idsauth/secret"
)

// callFrom is call with the client address in X-Forwarded-For.
func callFrom(t *testing.T, url, authz, addr string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", authz)
	req.Header.Set("X-Forwarded-For", addr)
	return doAnswer(t, req)
}

func wantSCIM429(t *testing.T, a answer) {
	t.Helper()
	var body struct {
		Schemas []string
		Status  string
	}
	if a.status != 429 || a.header.Get("Content-Type") != scimerr.ContentType || json.Unmarshal([]byte(a.body), &body) != nil ||
		body.Status != "429" || len(body.Schemas) != 1 || body.Schemas[0] != scimerr.Schema {
		t.Fatalf("want a SCIM 429 error, got %d %s", a.status, a.body)
	}
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After = %q", a.header.Get("Retry-After"))
	}
}

// A flood of wrong tokens from one address ends in 429; the tenant's right
// token from another address is still admitted, and so is a wrong token
// from a third address (it is answered 401, not slowed).
func TestSCIMAuthLimitsFailures(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	srv := scimServer(t, tenants, middleware.SCIMConfig{Limits: limit.Config{
		FailedAttemptsPerSubject: 5, FailedAttemptsPerAddress: 50, TrustedProxyHeader: "X-Forwarded-For",
	}})
	counts := map[int]int{}
	for i := range 200 {
		a := callFrom(t, scimURL(srv, "acme"), "Bearer guess-"+strconv.Itoa(i), "203.0.113.9")
		counts[a.status]++
		switch {
		case i < 5:
			wantSCIM401(t, a)
		default:
			wantSCIM429(t, a)
		}
	}
	if counts[401] != 5 || counts[429] != 195 {
		t.Fatalf("answers = %v", counts)
	}
	for range 10 {
		if a := callFrom(t, scimURL(srv, "acme"), "Bearer acme-token", "198.51.100.7"); a.status != 200 {
			t.Fatalf("the tenant's right token from another address got %d %s", a.status, a.body)
		}
	}
	wantSCIM401(t, callFrom(t, scimURL(srv, "acme"), "Bearer guess", "192.0.2.1"))
	// The attacker's address stays refused, even with the right token.
	wantSCIM429(t, callFrom(t, scimURL(srv, "acme"), "Bearer acme-token", "203.0.113.9"))
	// Unknown tenants share the address budget: no way around it.
	for i := range 60 {
		a := callFrom(t, scimURL(srv, "tenant-"+strconv.Itoa(i)), "Bearer guess", "198.51.100.99")
		if (i < 50) != (a.status == 401) {
			t.Fatalf("unknown tenant %d: %d", i, a.status)
		}
	}
}

// However many arrive at once, at most the tenant's budget of bcrypt
// checks runs; an unknown tenant burns none and waits for the floor like
// a wrong token.
func TestSCIMAuthReservesBeforeVerifying(t *testing.T) {
	bc, err := secret.HashBcrypt("short", 4)
	if err != nil {
		t.Fatal(err)
	}
	tenants := tenantsOf(t, "acme", bc)
	v := secret.NewVerifier(secret.VerifierConfig{})
	srv := scimServer(t, tenants, middleware.SCIMConfig{Limits: limit.Config{FailedAttemptsPerSubject: 5}, Verifier: v})
	if v.Floor() <= 0 {
		t.Fatal("the tenants' bcrypt hash did not set a failure floor")
	}
	statuses := make(chan int, 64)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 64 {
		wg.Go(func() {
			<-start
			statuses <- call(t, scimURL(srv, "acme"), "Bearer guess").status
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	c := v.Counts()
	if c.Slow > 5 || counts[401] != int(c.Slow) || counts[429] != 64-int(c.Slow) || c.Floors != c.Slow {
		t.Fatalf("64 concurrent guesses: answers %v, counts %+v; want at most 5 bcrypt checks, each held to the floor", counts, c)
	}
	before := v.Counts()
	wantSCIM401(t, call(t, scimURL(srv, "nobody"), "Bearer guess"))
	after := v.Counts()
	if after.Slow != before.Slow || after.Floors != before.Floors+1 || after.Fast-before.Fast != uint64(secret.MinComparisons) {
		t.Fatalf("an unknown tenant: before %+v after %+v; want no bcrypt, the same fast work, the floor", before, after)
	}
}

// Two SCIMAuth middlewares given one Store enforce one budget: failures
// split across both lock the address out at the tenant's budget, and the
// tenant's right token from another address is admitted by either.
func TestSCIMAuthReplicasShareAStore(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	cfg := middleware.SCIMConfig{Limits: limit.Config{
		FailedAttemptsPerSubject: 4, TrustedProxyHeader: "X-Forwarded-For",
	}, Store: &limit.Memory{MaxBytes: 64 << 10}}
	replicas := []*httptest.Server{scimServer(t, tenants, cfg), scimServer(t, tenants, cfg)}
	for i := range 8 {
		a := callFrom(t, scimURL(replicas[i%2], "acme"), "Bearer guess", "203.0.113.9")
		if i < 4 {
			wantSCIM401(t, a)
		} else {
			wantSCIM429(t, a)
		}
	}
	for i := range 4 {
		if a := callFrom(t, scimURL(replicas[i%2], "acme"), "Bearer acme-token", "198.51.100.7"); a.status != 200 {
			t.Fatalf("the right token from another address: %d %s", a.status, a.body)
		}
	}
}

// unavailable is a store that cannot answer, as a shared store whose
// backend is down and that fails closed.
type unavailable struct{}

func (unavailable) Reserve(context.Context, limit.Request) (limit.Reservation, error) {
	return nil, fmt.Errorf("%w: down for the test", limit.ErrUnavailable)
}

// When the store cannot answer, every request, the right token's too, gets
// a 503 SCIM error with Retry-After, no token is checked, and the reject
// hook is told why.
func TestSCIMAuthUnavailableStoreRefusesWithoutVerifying(t *testing.T) {
	tenants := tenantsOf(t, "acme", secret.HashSHA256("acme-token"))
	v := secret.NewVerifier(secret.VerifierConfig{})
	var reasons []error
	srv := scimServer(t, tenants, middleware.SCIMConfig{
		Store:    unavailable{},
		Verifier: v,
		OnReject: func(_ *http.Request, status int, reason error) { reasons = append(reasons, reason) },
	})
	for _, tok := range []string{"acme-token", "guess"} {
		a := call(t, scimURL(srv, "acme"), "Bearer "+tok)
		var body struct{ Schemas []string }
		if a.status != 503 || a.header.Get("Content-Type") != scimerr.ContentType || a.header.Get("Retry-After") != "1" ||
			json.Unmarshal([]byte(a.body), &body) != nil || len(body.Schemas) != 1 {
			t.Fatalf("%d %v %s", a.status, a.header, a.body)
		}
	}
	if c := v.Counts(); c != (secret.Counts{}) {
		t.Fatalf("tokens were checked: %+v", c)
	}
	if len(reasons) != 2 || !errors.Is(reasons[0], limit.ErrUnavailable) {
		t.Fatalf("reject reasons = %v", reasons)
	}
}
