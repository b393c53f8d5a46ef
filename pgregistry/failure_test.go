package pgregistry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
)

// TestReplicasFollowEachOther: two replicas on one database: a client
// created through one gets a token from the other, and, disabled through
// the other, is refused by both, its reference tokens inactive on both,
// each as soon as the notification is loaded (polled within a second,
// counted).
func TestReplicasFollowEachOther(t *testing.T) {
	_, u := newDatabase(t)
	a, b := newReplica(t, u, nil), newReplica(t, u, nil)
	created := a.admin(t, http.MethodPost, "/clients", `{"clientId": "shared", "scopes": ["pd_AdminWebApi"], "accessTokenType": "reference"}`)
	plain, _ := created.body["secret"].(string)
	if created.status != 201 {
		t.Fatalf("%d %s", created.status, created.raw)
	}
	gen := a.reg.Status().Generation
	t.Logf("the other replica loaded the creation after %d polls", b.waitGeneration(t, gen, time.Second))
	tok := b.token(t, "shared", plain, "scope", scope.AdminWebAPI)
	ref, _ := tok.body["access_token"].(string)
	if tok.status != 200 || ref == "" {
		t.Fatalf("a token from the other replica: %d %s", tok.status, tok.raw)
	}
	if a := b.admin(t, http.MethodPost, "/clients/shared/disable", ""); a.status != 200 {
		t.Fatalf("disable: %d %s", a.status, a.raw)
	}
	t.Logf("the first replica loaded the disable after %d polls", a.waitGeneration(t, b.reg.Status().Generation, time.Second))
	for _, r := range []*replica{a, b} {
		if got := r.token(t, "shared", plain, "scope", scope.AdminWebAPI); got.status != 401 {
			t.Errorf("a disabled client at %s: %d", r.srv.URL, got.status)
		}
		ans, err := r.iss.IntrospectToken(context.Background(), "file-api", ref)
		if err != nil || string(ans) != "{\"active\":false}\n" {
			t.Errorf("its reference token at %s: %s %v", r.srv.URL, ans, err)
		}
	}
}

// TestDatabaseDown: with PostgreSQL stopped, a replica serves its last
// snapshot (the registered client still gets tokens), says it is not up
// (Status, logged once), and the administration API answers 503 with
// Retry-After, writing nothing, logged once per 10 s; when PostgreSQL returns, the registry
// reconnects, loads, and a change goes through.
func TestDatabaseDown(t *testing.T) {
	pg, u := newDatabase(t)
	r := newReplicaWith(t, u, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.reg.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	created := r.admin(t, http.MethodPost, "/clients", `{"clientId": "kept", "scopes": ["pd_AdminWebApi"]}`)
	plain, _ := created.body["secret"].(string)
	pg.Stop()
	waitFor(t, "the registry to find the database gone", func() bool { return !r.reg.Status().Up })
	if got := r.token(t, "kept", plain, "scope", scope.AdminWebAPI); got.status != 200 {
		t.Fatalf("a registered client with the database down: %d %s", got.status, got.raw)
	}
	for range 10 {
		a := r.admin(t, http.MethodPost, "/clients", `{"clientId": "lost", "scopes": ["pd_AdminWebApi"]}`)
		if a.status != 503 || a.header.Get("Retry-After") == "" || a.body["error"] != "temporarily_unavailable" {
			t.Fatalf("the administration API with the database down: %d %s", a.status, a.raw)
		}
	}
	if n := strings.Count(r.logs.String(), "an administration request failed"); n != 1 {
		t.Errorf("10 administration requests refused 503 within 10 s logged %d lines, want 1", n)
	}
	if st := r.reg.Status(); !st.Loaded || st.Up || st.Err == nil || st.Clients != 1 {
		t.Fatalf("status with the database down: %+v", st)
	}
	pg.Restart(t)
	waitFor(t, "the registry to find the database back", func() bool { return r.reg.Status().Up })
	if a := r.admin(t, http.MethodPost, "/clients", `{"clientId": "after", "scopes": ["pd_AdminWebApi"]}`); a.status != 201 {
		t.Fatalf("a change once the database is back: %d %s", a.status, a.raw)
	}
	if rows := query(t, u, `SELECT id FROM idsauth_registrations ORDER BY id`); fmt.Sprint(rows) != "[[after] [kept]]" {
		t.Fatalf("registrations: %v (the refused change wrote nothing)", rows)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, "the database does not answer: the issuer serves its last snapshot"); n != 1 {
		t.Errorf("the database's absence logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "the database answers again") {
		t.Errorf("its return is not logged")
	}
}

// TestPasswordNeverShows: the database URL's password is in no error and
// no log line: a wrong password, a malformed URL, a server down.
func TestPasswordNeverShows(t *testing.T) {
	pg := pgtest.Start(t)
	good := pg.NewDatabase(t)
	const pw = "Sup3r-Secret-Pa55"
	wrong := strings.Replace(good, pg.Password, pw, 1)
	ctx := context.Background()
	if _, _, err := pgregistry.Migrate(ctx, wrong); err == nil || strings.Contains(err.Error(), pw) {
		t.Fatalf("Migrate with a wrong password: %v", err)
	}
	// pgx masks a password in its own error "at best": one holding an
	// "@" shows through it (its tail is taken for the host).
	for _, bad := range []string{"postgres://idsauth:" + pw + "@127.0.0.1:notaport/db", "host=127.0.0.1 password=" + pw + " port=x",
		"postgres://idsauth:x@" + pw + "@127.0.0.1:notaport/db"} {
		if _, _, err := pgregistry.Migrate(ctx, bad); err == nil || strings.Contains(err.Error(), pw) {
			t.Errorf("Migrate with a malformed URL: %v", err)
		}
		iss := testIssuer(t)
		if _, err := pgregistry.New(ctx, pgregistry.Config{URL: bad, Issuer: iss}); err == nil || strings.Contains(err.Error(), pw) {
			t.Errorf("New with a malformed URL: %v", err)
		}
	}
	r := newReplicaNoWait(t, wrong)
	waitFor(t, "the registry to fail", func() bool { return r.reg.Status().Err != nil })
	if err := r.reg.Status().Err; strings.Contains(err.Error(), pw) || strings.Contains(r.logs.String(), pw) {
		t.Fatalf("the password shows: %v\n%s", err, r.logs)
	}
	pg.Stop()
	down := newReplicaNoWait(t, strings.Replace(good, pg.Password, pw, 1))
	waitFor(t, "the registry to fail", func() bool { return down.reg.Status().Err != nil })
	if strings.Contains(down.reg.Status().Err.Error(), pw) || strings.Contains(down.logs.String(), pw) {
		t.Fatal("the password shows")
	}
}

func testIssuer(t testing.TB) *issuer.Issuer {
	iss, err := issuer.New(&issuer.Config{Issuer: "https://host.example/ids", EphemeralKey: true}, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

// waitFor polls cond for up to 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallerHangsUp: an administration request whose caller hangs up
// while the database is slow is no outage: nothing is logged as one.
func TestCallerHangsUp(t *testing.T) {
	pg, u := newDatabase(t)
	r := newReplica(t, u, nil)
	tok := r.token(t, "operator", operatorSecret, "scope", pgregistry.AdminScope)
	at, _ := tok.body["access_token"].(string)
	if err := syscall.Kill(pg.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pg.PID(), syscall.SIGCONT) //nolint:errcheck // resumed below too
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.issuerURL()+"/admin/clients", nil)
	req.Header.Set("Authorization", "Bearer "+at)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("an answer while PostgreSQL is stopped: %d", resp.StatusCode)
	}
	time.Sleep(300 * time.Millisecond) // the handler sees the hang-up and answers into nothing
	if err := syscall.Kill(pg.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if a := r.admin(t, http.MethodGet, "/clients", ""); a.status != 200 {
		t.Fatalf("once PostgreSQL runs again: %d %s", a.status, a.raw)
	}
	if strings.Contains(r.logs.String(), "an administration request failed") {
		t.Errorf("a caller who hung up was logged as the database not answering:\n%s", r.logs)
	}
}
