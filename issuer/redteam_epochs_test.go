package issuer_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/tokenstore"
)

// TestRedTeamEpochBeyondJSON: an Epoch of 2^53 or more (a registry
// sequence moved by hand) cannot be carried exactly by a JWT, whose
// reader refuses it: such a client's JWTs were issued and then answered
// inactive, while its reference tokens worked. It is left out, named.
func TestRedTeamEpochBeyondJSON(t *testing.T) {
	s := newServer(t, withReference)
	if err := s.iss.SetRegistered(epochClients("p", 1<<53-1), nil); err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokensOf(t, s, "p") {
		if !activeAt(t, s, tok) {
			t.Errorf("a token under the epoch 2^53-1 is inactive: %.12s...", tok)
		}
	}
	for _, e := range []uint64{1 << 53, 1<<63 + 5} {
		err := s.iss.SetRegistered(epochClients("p", e), nil)
		var re *issuer.RegistrationError
		if !errors.As(err, &re) || re.Err.Field != `clients ("ep").epoch` {
			t.Errorf("epoch %d: %v, want ep left out for its epoch", e, err)
		}
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("ep", "p")); a.status != 401 {
			t.Errorf("epoch %d: a token issued: %d %s", e, a.status, a.raw)
		}
	}
}

// TestRedTeamNewRegistrationGetsItsShare: a client whose leaked secret
// filled its share of the memory token store (a quarter) with reference
// tokens is registered again under a new secret (a new epoch). Its old
// grants are dead, yet they were charged to its ID: the new registration
// got 503 for every reference token until they expired, up to a day. A
// share is a registration's: the new one gets tokens at once, while the
// dead grants still count against the store as a whole.
func TestRedTeamNewRegistrationGetsItsShare(t *testing.T) {
	store := &tokenstore.Memory{MaxBytes: 8 << 10}
	s := newServer(t, withReference, issuer.WithTokenStore(store))
	ask := func(pass string) answer {
		return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("ep-ref", pass))
	}
	if err := s.iss.SetRegistered(epochClients("leaked", 1), nil); err != nil {
		t.Fatal(err)
	}
	full := false
	for range 100 {
		a := ask("leaked")
		if a.status == http.StatusServiceUnavailable {
			full = true
			break
		}
		if a.status != 200 {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	}
	if !full {
		t.Fatal("the share was never reached")
	}
	if err := s.iss.SetRegistered(epochClients("new", 2), nil); err != nil {
		t.Fatal(err)
	}
	if a := ask("new"); a.status != 200 {
		t.Errorf("the client registered again, after the leaked one filled its share: %d %s", a.status, a.raw)
	}
	if a := ask("leaked"); a.status != 401 {
		t.Errorf("the leaked secret: %d %s", a.status, a.raw)
	}
}
