package pgregistry_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// The file's clients of every replica: the operator, who administers the
// registry, and a plain client.
const (
	operatorSecret = "operator-secret"
	fileSecret     = "file-secret"
)

// newDatabase returns the URL of a migrated database of the test's own,
// on a cluster started for it.
func newDatabase(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	pg := pgtest.Start(t)
	u := pg.NewDatabase(t)
	if _, _, err := pgregistry.Migrate(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return pg, u
}

// replica is one issuer with its registry, served on loopback.
type replica struct {
	srv  *httptest.Server
	iss  *issuer.Issuer
	reg  *pgregistry.Registry
	logs *testlog.Buffer
}

func (r *replica) issuerURL() string { return r.srv.URL + "/ids" }

// newReplica serves an issuer whose file holds the operator (scope
// idsauth_admin, audience {issuer}/admin) and "file-client", with a
// registry on the database at dbURL.
func newReplica(t *testing.T, dbURL string, edit func(*issuer.Config)) *replica {
	t.Helper()
	r := newReplicaWith(t, dbURL, edit)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.reg.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// newReplicaNoWait is newReplica without waiting for the first load.
func newReplicaNoWait(t *testing.T, dbURL string) *replica {
	t.Helper()
	return newReplicaWith(t, dbURL, nil)
}

func newPG(t *testing.T) *pgtest.Server { return pgtest.Start(t) }

func newReplicaWith(t *testing.T, dbURL string, edit func(*issuer.Config), opts ...issuer.Option) *replica {
	t.Helper()
	return newReplicaOf(t, dbURL, edit, nil, opts...)
}

// newReplicaConfig is newReplica with the registry's Config edited.
func newReplicaConfig(t testing.TB, dbURL string, regEdit func(*pgregistry.Config)) *replica {
	t.Helper()
	r := newReplicaOf(t, dbURL, nil, regEdit)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.reg.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

func newReplicaOf(t testing.TB, dbURL string, edit func(*issuer.Config), regEdit func(*pgregistry.Config), opts ...issuer.Option) *replica {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	logs, logger := testlog.New()
	cfg := &issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true,
		Scopes:       []string{pgregistry.AdminScope, "reports.read"},
		Clients: []issuer.ClientConfig{
			{ClientID: "operator", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()}, Scopes: []string{pgregistry.AdminScope}, Audience: []string{srv.URL + "/ids/admin"}},
			{ClientID: "file-client", SecretHashes: []string{secret.HashSHA256(fileSecret).String()}, Scopes: []string{scope.AdminWebAPI}},
		},
		APIResources: []issuer.APIResourceConfig{{Name: "file-api", SecretHashes: []string{secret.HashSHA256("file-api-secret").String()}, Scopes: []string{scope.AdminWebAPI}}},
	}
	if edit != nil {
		edit(cfg)
	}
	iss, err := issuer.New(cfg, append([]issuer.Option{issuer.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rc := pgregistry.Config{URL: dbURL, Issuer: iss, Logger: logger, Reconcile: time.Minute}
	if regEdit != nil {
		regEdit(&rc)
	}
	reg, err := pgregistry.New(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	mux.Handle("/ids/", iss)
	mux.Handle("/ids/admin/", reg)
	return &replica{srv: srv, iss: iss, reg: reg, logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, method, u, auth, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func basic(id, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(pass)))
}

// token asks r's token endpoint for a token of client id.
func (r *replica) token(t *testing.T, id, pass string, kv ...string) answer {
	t.Helper()
	v := url.Values{"grant_type": {"client_credentials"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return do(t, http.MethodPost, r.issuerURL()+"/connect/token", basic(id, pass), "application/x-www-form-urlencoded", v.Encode())
}

// admin calls the administration API at path with the operator's token.
func (r *replica) admin(t *testing.T, method, path, body string) answer {
	t.Helper()
	tok := r.token(t, "operator", operatorSecret, "scope", pgregistry.AdminScope)
	at, _ := tok.body["access_token"].(string)
	if at == "" {
		t.Fatalf("the operator's token: %d %s", tok.status, tok.raw)
	}
	return do(t, method, r.issuerURL()+"/admin"+path, "Bearer "+at, "application/json", body)
}

// waitGeneration waits until r has loaded generation gen or a later one,
// polling at most deadline, and returns how many polls it took.
func (r *replica) waitGeneration(t *testing.T, gen int64, deadline time.Duration) int {
	t.Helper()
	end := time.Now().Add(deadline)
	for n := 1; ; n++ {
		if r.reg.Status().Generation >= gen {
			return n
		}
		if time.Now().After(end) {
			t.Fatalf("generation %d not loaded after %d polls (at %d)", gen, n, r.reg.Status().Generation)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// exec runs a statement on the database at u.
func exec(t testing.TB, u, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// query runs a query on the database at u and returns its rows.
func query(t *testing.T, u, sql string, args ...any) [][]any {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
