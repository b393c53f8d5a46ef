package pgregistry_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/idsauth/idsauth/secret"
)

// TestRedTeamComeBackSequences: sequences of the administration API that
// the rule of epochs might miss. A disable, an update while disabled and
// an enable end the tokens of before; two rotations keeping the previous
// secret leave the first secret dropped and, as documented, its tokens
// alive (only a client left with none of its secrets is a new one).
func TestRedTeamComeBackSequences(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	sec := r.create(t, "seq", `, "accessTokenType": "reference"`)
	jwtSec := r.create(t, "seq-jwt", "")
	before := []string{r.accessToken(t, "seq", sec), r.accessToken(t, "seq-jwt", jwtSec)}
	for _, id := range []string{"seq", "seq-jwt"} {
		for _, step := range []struct{ method, path, body string }{
			{http.MethodPost, "/clients/" + id + "/disable", ""},
			{http.MethodPut, "/clients/" + id, `{"scopes": ["pd_AdminWebApi"], "accessTokenLifetime": 600}`},
			{http.MethodPost, "/clients/" + id + "/enable", ""},
		} {
			if a := r.admin(t, step.method, step.path, step.body); a.status != 200 {
				t.Fatalf("%s %s: %d %s", step.method, step.path, a.status, a.raw)
			}
		}
	}
	for _, tok := range before {
		if r.introspectAt(t, tok) {
			t.Errorf("disabled, updated, enabled: %.12s... is active", tok)
		}
	}
	// Two rotations keeping the previous secret.
	mid := r.accessToken(t, "seq-jwt", jwtSec)
	for range 2 {
		if a := r.admin(t, http.MethodPost, "/clients/seq-jwt/rotate-secret", ""); a.status != 200 {
			t.Fatalf("rotate: %d %s", a.status, a.raw)
		}
	}
	if a := r.token(t, "seq-jwt", jwtSec, "scope", "pd_AdminWebApi"); a.status != 401 {
		t.Errorf("the first secret, dropped by the second rotation, still gets tokens: %d", a.status)
	}
	if !r.introspectAt(t, mid) {
		t.Errorf("two rotations keeping the previous secret ended a token: the documented rule changed")
	}
}

// TestRedTeamConcurrentAdministrators: two administrators at once. Of
// creates of one ID under ASCII case folding, one wins and the others get
// 409; disables and enables racing leave, once the client is enabled
// again after any disable, the tokens of before inactive.
func TestRedTeamConcurrentAdministrators(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	ids := []string{"race", "RACE", "Race", "rAce", "raCe", "racE", "RAce", "raCE"}
	status := make([]int, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			status[i] = r.admin(t, http.MethodPost, "/clients", fmt.Sprintf(`{"clientId": %q, "scopes": ["pd_AdminWebApi"]}`, id)).status
		})
	}
	wg.Wait()
	created := 0
	for i, st := range status {
		switch st {
		case 201:
			created++
		case 409:
		default:
			t.Errorf("create %q: %d", ids[i], st)
		}
	}
	if created != 1 {
		t.Errorf("%d of %d creates of one ID under case folding succeeded: %v", created, len(ids), status)
	}

	sec := r.create(t, "flip", "")
	before := r.accessToken(t, "flip", sec)
	for w := range 2 {
		wg.Go(func() {
			for i := range 10 {
				verb := []string{"disable", "enable"}[(i+w)%2]
				if a := r.admin(t, http.MethodPost, "/clients/flip/"+verb, ""); a.status != 200 {
					t.Errorf("%s: %d %s", verb, a.status, a.raw)
				}
			}
		})
	}
	wg.Wait()
	r.admin(t, http.MethodPost, "/clients/flip/enable", "")
	if r.introspectAt(t, before) {
		t.Error("after racing disables and enables, enabled again: the token of before is active")
	}
	if !r.introspectAt(t, r.accessToken(t, "flip", sec)) {
		t.Error("a token issued after is inactive")
	}
}

// TestRedTeamRowOutsideTheEpochRule: a row whose epoch was written by
// hand outside what a JWT carries (the trigger disabled) is left out,
// named, and the other rows are served. A negative one stopped every
// load ("the database does not answer"): no change reached any replica.
func TestRedTeamRowOutsideTheEpochRule(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	sec := r.create(t, "fine", "")
	for _, c := range []struct {
		id    string
		epoch int64
	}{{"negative", -1}, {"huge", 1 << 53}} {
		exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', $1, '{"scopes": ["pd_AdminWebApi"]}', $2)`, c.id, []string{secret.HashSHA256("x").String()})
		exec(t, u, fmt.Sprintf(`ALTER TABLE idsauth_registrations DISABLE TRIGGER idsauth_registration_epoch; UPDATE idsauth_registrations SET epoch = %d WHERE id = '%s'; ALTER TABLE idsauth_registrations ENABLE TRIGGER idsauth_registration_epoch`, c.epoch, c.id))
	}
	gen := r.reg.Status().Generation
	r.admin(t, http.MethodPost, "/clients/fine/disable", "")
	r.admin(t, http.MethodPost, "/clients/fine/enable", "")
	r.waitGeneration(t, gen+2, 5e9)
	if st := r.reg.Status(); st.Left != 2 || st.Clients != 1 || !st.Up {
		t.Errorf("status %+v: want fine served, two left out", st)
	}
	r.accessToken(t, "fine", sec)
	for _, id := range []string{"negative", "huge"} {
		if !strings.Contains(r.logs.String(), fmt.Sprintf(`clients (\"%s\").epoch`, id)) {
			t.Errorf("%s is not named in the log:\n%s", id, r.logs)
		}
	}
}

// TestRedTeamRenamedByHand: a row renamed by SQL (the API never renames)
// and renamed back is another registration for the tokens of before: the
// trigger kept its epoch, and they came back to life.
func TestRedTeamRenamedByHand(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	sec := r.create(t, "named", "")
	before := r.accessToken(t, "named", sec)
	gen := r.reg.Status().Generation
	for i, sql := range []string{
		`UPDATE idsauth_registrations SET id = 'renamed' WHERE id = 'named'`,
		`UPDATE idsauth_registrations SET id = 'named' WHERE id = 'renamed'`,
	} {
		exec(t, u, sql)
		exec(t, u, fmt.Sprintf(`UPDATE idsauth_generation SET generation = generation + 1; NOTIFY idsauth_registry, '%d'`, gen+int64(i)+1))
		r.waitGeneration(t, gen+int64(i)+1, 5e9)
	}
	if r.introspectAt(t, before) {
		t.Error("renamed and renamed back by hand: the token of before is active")
	}
	if !r.introspectAt(t, r.accessToken(t, "named", sec)) {
		t.Error("a token issued after is inactive")
	}
}
