package issuer_test

import (
	"errors"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
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
