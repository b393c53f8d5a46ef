package pgregistry_test

import (
	"context"
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
