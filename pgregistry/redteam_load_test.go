package pgregistry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// slowWriter writes into a testlog.Buffer after a pause, as a log sink
// that is slow for a moment (a full pipe, a disk) does.
type slowWriter struct{ b *testlog.Buffer }

func (w slowWriter) Write(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return w.b.Write(p)
}

var _ io.Writer = slowWriter{}

// TestRedTeamLeftOutIsLoggedBeforeTheLoadIsPublished: once WaitLoaded
// returns (or Status shows the generation), the lines naming the
// registrations left out by that load are written. They were written
// after: a reader of the log right after the load (a test, an operator's
// script) missed them, and TestLoadLeavesOutWhatTheAPIRefuses failed now
// and then.
func TestRedTeamLeftOutIsLoggedBeforeTheLoadIsPublished(t *testing.T) {
	_, u := newDatabase(t)
	exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', 'sql-unknown', '{"scopes": ["nope"]}', $1)`, []string{secret.HashSHA256("x").String()})
	logs := &testlog.Buffer{}
	iss, err := issuer.New(&issuer.Config{Issuer: "https://ids.example/ids", EphemeralKey: true, Scopes: []string{pgregistry.AdminScope},
		Clients: []issuer.ClientConfig{{ClientID: "file-client", SecretHashes: []string{secret.HashSHA256(fileSecret).String()}, Scopes: []string{scope.AdminWebAPI}}}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := pgregistry.New(context.Background(), pgregistry.Config{URL: u, Issuer: iss, Reconcile: time.Minute,
		Logger: slog.New(slog.NewJSONHandler(slowWriter{logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `clients (\"sql-unknown\").scopes[0]`) {
		t.Errorf("the load is published, and the registration it left out is not logged yet:\n%s", logs)
	}
}

// TestRowsThatAreNoObject: configurations written by hand that are JSON
// but no object (an array, a string, a number, null), or an object of a
// wrong type, are each left out with their error, and the rows around
// them served: the load decodes the rows as one list, and a row that is
// no object must not change what the list holds.
func TestRowsThatAreNoObject(t *testing.T) {
	_, u := newDatabase(t)
	h := []string{secret.HashSHA256("x").String()}
	for i, cfg := range []string{`{"scopes": ["pd_AdminWebApi"]}`, `[{"scopes": ["pd_AdminWebApi"]}]`, `"{}"`, `1`, `null`, ` {"scopes": 5}`, "\n {\"scopes\": [\"pd_AdminWebApi\"]}"} {
		exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', $1, $2, $3)`, fmt.Sprint("row-", i), cfg, h)
	}
	r := newReplica(t, u, nil)
	st := r.reg.Status()
	if st.Clients != 2 || st.Left != 5 {
		t.Fatalf("served %d clients, left out %d; want 2 and 5", st.Clients, st.Left)
	}
	for _, id := range []string{"row-0", "row-6"} {
		if tok := r.token(t, id, "x", "scope", scope.AdminWebAPI); tok.status != 200 {
			t.Errorf("%s: %d %s", id, tok.status, tok.raw)
		}
	}
	for _, id := range []string{"row-1", "row-2", "row-3", "row-4", "row-5"} {
		if !strings.Contains(r.logs.String(), `clients (\"`+id+`\")`) {
			t.Errorf("%s is not logged as left out:\n%s", id, r.logs)
		}
	}
}
