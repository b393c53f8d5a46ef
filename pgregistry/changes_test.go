package pgregistry_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// bulk registers n clients by SQL, one transaction, and bumps the
// generation once: clients "bulk-0" and on, with the secret "bulk".
func bulk(t testing.TB, u string, n int) {
	t.Helper()
	exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes)
		SELECT 'client', 'bulk-' || i, '{"scopes": ["pd_AdminWebApi"]}', $2 FROM generate_series(0, $1 - 1) AS i`, n, []string{secret.HashSHA256("bulk").String()})
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1`)
}

// TestChangesAreAppliedAsChanges: once loaded, a replica applies each
// change as a change (the rows changed since its generation, and the
// tombstones of those removed), on every replica, for a change made by
// the administration API, by SQL with its notification, and by SQL
// without one (found by the reconcile); two changes at once are each
// seen; a replica whose generation is older than the tombstones kept
// loads whole.
func TestChangesAreAppliedAsChanges(t *testing.T) {
	_, u := newDatabase(t)
	bulk(t, u, 500)
	fast := func(c *pgregistry.Config) { c.Reconcile = 200 * time.Millisecond }
	a, b := newReplicaConfig(t, u, fast), newReplicaConfig(t, u, fast)
	for _, r := range []*replica{a, b} {
		if st := r.reg.Status(); st.Clients != 500 || st.Changes != 0 {
			t.Fatalf("the first load: %+v, want 500 clients, loaded whole", st)
		}
	}
	// Through the administration API, two at once.
	var wg sync.WaitGroup
	for _, id := range []string{"one", "two"} {
		wg.Go(func() {
			if x := a.admin(t, http.MethodPost, "/clients", fmt.Sprintf(`{"clientId": %q, "scopes": ["pd_AdminWebApi"], "secretHashes": [%q]}`, id, secret.HashSHA256("bulk").String())); x.status != 201 {
				t.Errorf("create %s: %d %s", id, x.status, x.raw)
			}
		})
	}
	wg.Wait()
	a.admin(t, http.MethodDelete, "/clients/bulk-7", "")
	a.admin(t, http.MethodPost, "/clients/bulk-8/disable", "")
	gen := a.reg.Status().Generation
	b.waitGeneration(t, gen, 5*time.Second)
	for _, r := range []*replica{a, b} {
		for id, want := range map[string]int{"one": 200, "two": 200, "bulk-7": 401, "bulk-8": 401, "bulk-9": 200} {
			if x := r.token(t, id, "bulk", "scope", scope.AdminWebAPI); x.status != want {
				t.Errorf("%s: %d, want %d", id, x.status, want)
			}
		}
		if st := r.reg.Status(); st.Clients != 500 || st.Changes == 0 {
			t.Errorf("after the changes: %+v, want 500 clients served (two added, two gone) and loads as changes", st)
		}
	}
	// By SQL with no notification: the reconcile finds it.
	exec(t, u, `UPDATE idsauth_registrations SET disabled = false WHERE id = 'bulk-8'`)
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1`)
	changes := b.reg.Status().Changes
	b.waitGeneration(t, gen+1, 5*time.Second)
	if x := b.token(t, "bulk-8", "bulk", "scope", scope.AdminWebAPI); x.status != 200 {
		t.Errorf("enabled by SQL, found by the reconcile: %d", x.status)
	}
	if b.reg.Status().Changes != changes+1 {
		t.Errorf("the reconcile's load was whole")
	}
	// Older than the tombstones kept: whole.
	exec(t, u, `UPDATE idsauth_generation SET pruned = generation + 1, generation = generation + 2; NOTIFY idsauth_registry, '1000000'`)
	changes = a.reg.Status().Changes
	a.waitGeneration(t, gen+3, 5*time.Second)
	if a.reg.Status().Changes != changes {
		t.Errorf("a replica older than the tombstones kept loaded a change")
	}
}

// TestTombstonesArePrunedOncePassed: the tombstones of removed clients
// are kept until every replica that said what it serves within the hour
// has passed them, then pruned, up to the generation recorded as pruned.
func TestTombstonesArePrunedOncePassed(t *testing.T) {
	_, u := newDatabase(t)
	fast := func(c *pgregistry.Config) { c.Reconcile = 100 * time.Millisecond }
	a, b := newReplicaConfig(t, u, fast), newReplicaConfig(t, u, fast)
	a.admin(t, http.MethodPost, "/clients", `{"clientId": "doomed", "scopes": ["pd_AdminWebApi"]}`)
	a.admin(t, http.MethodDelete, "/clients/doomed", "")
	b.waitGeneration(t, a.reg.Status().Generation, 5*time.Second)
	// A replica that said long ago what it served holds nothing back.
	exec(t, u, `INSERT INTO idsauth_replicas (replica, generation, seen_at) VALUES ('gone', 0, now() - interval '2 hours')`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows := query(t, u, `SELECT (SELECT count(*) FROM idsauth_removed), (SELECT pruned FROM idsauth_generation), (SELECT generation FROM idsauth_generation)`)
		if rows[0][0].(int64) == 0 && rows[0][1].(int64) == rows[0][2].(int64) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tombstones, pruned, generation: %v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAChangeReadThatFailsIsReadAgain: a change is read in one round
// trip, its transaction begun and committed in it; when a statement of
// it fails (here the table of tombstones is gone), nothing of it is
// applied, and once the table is back the replica reads what it missed
// as a change.
func TestAChangeReadThatFailsIsReadAgain(t *testing.T) {
	_, u := newDatabase(t)
	bulk(t, u, 10)
	a := newReplicaConfig(t, u, func(c *pgregistry.Config) { c.Reconcile = 100 * time.Millisecond })
	gen := a.reg.Status().Generation
	exec(t, u, `ALTER TABLE idsauth_removed RENAME TO idsauth_removed_away`)
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1`)
	exec(t, u, `SELECT pg_notify('idsauth_registry', (SELECT generation FROM idsauth_generation)::text)`)
	deadline := time.Now().Add(5 * time.Second)
	for a.reg.Status().Err == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no failed load without the tombstones: %+v", a.reg.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a.reg.Status().Generation != gen {
		t.Fatalf("a failed read moved the generation: %+v", a.reg.Status())
	}
	exec(t, u, `ALTER TABLE idsauth_removed_away RENAME TO idsauth_removed`)
	changes := a.reg.Status().Changes
	exec(t, u, `UPDATE idsauth_registrations SET disabled = true, generation = (SELECT generation + 1 FROM idsauth_generation) WHERE id = 'bulk-3'`)
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1`)
	exec(t, u, `SELECT pg_notify('idsauth_registry', (SELECT generation FROM idsauth_generation)::text)`)
	a.waitGeneration(t, gen+2, 5*time.Second)
	if x := a.token(t, "bulk-3", "bulk", "scope", scope.AdminWebAPI); x.status != 401 {
		t.Errorf("bulk-3, disabled: %d", x.status)
	}
	if st := a.reg.Status(); st.Changes == changes || st.Err != nil {
		t.Errorf("after the tombstones came back: %+v, want a change applied as a change", st)
	}
}
