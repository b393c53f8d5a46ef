package pgregistry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestMigrateIsIdempotent: Migrate brings a database from nothing to the
// schema's version once; again, it changes nothing; a registry on a
// database not migrated says so and serves the file's clients.
func TestMigrateIsIdempotent(t *testing.T) {
	pg := newPG(t)
	u := pg.NewDatabase(t)
	fresh := pg.NewDatabase(t)
	ctx := context.Background()
	for i, want := range [][2]int{{0, pgregistry.SchemaVersion}, {pgregistry.SchemaVersion, pgregistry.SchemaVersion}} {
		from, to, err := pgregistry.Migrate(ctx, u)
		if err != nil || from != want[0] || to != want[1] {
			t.Fatalf("migrate %d: %d to %d, %v; want %d to %d", i+1, from, to, err, want[0], want[1])
		}
	}
	if rows := query(t, u, `SELECT count(*) FROM idsauth_schema`); rows[0][0].(int64) != pgregistry.SchemaVersion {
		t.Fatalf("idsauth_schema: %v", rows)
	}
	r := newReplicaNoWait(t, fresh)
	deadline := time.Now().Add(10 * time.Second)
	for r.reg.Status().Err == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := r.reg.Status(); !errors.Is(st.Err, pgregistry.ErrSchema) || st.Loaded || !strings.Contains(st.Err.Error(), "idsauth migrate") {
		t.Fatalf("a database not migrated: %+v", st)
	}
	if a := r.token(t, "file-client", fileSecret, "scope", scope.AdminWebAPI); a.status != 200 {
		t.Fatalf("the file's client: %d", a.status)
	}
	if a := r.admin(t, http.MethodGet, "/clients", ""); a.status != 503 || !strings.Contains(a.raw, "idsauth migrate") {
		t.Fatalf("the administration API on a database not migrated: %d %s", a.status, a.raw)
	}
}

// TestAdministration: through the administration API, with the
// operator's token: a client created gets a secret, returned once, of
// which only the sha256 hash is stored, and a token with it at once; it
// is listed and read without hashes; updated, disabled (refused, its
// reference tokens inactive), enabled, its secret rotated (the previous
// one kept, then not), and deleted. Each change is one audit row and one
// log line with who (the token's client_id), from where, what, and never
// the secret.
func TestAdministration(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	created := r.admin(t, http.MethodPost, "/clients", `{"clientId": "reports", "scopes": ["reports.read"], "accessTokenType": "reference"}`)
	plain, _ := created.body["secret"].(string)
	if created.status != 201 || plain == "" || created.body["secrets"] != 1.0 || created.body["disabled"] != false || created.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %s", created.status, created.raw)
	}
	stored := query(t, u, `SELECT config::text, secret_hashes FROM idsauth_registrations WHERE id = 'reports'`)
	if h := stored[0][1].([]any); len(h) != 1 || h[0] != secret.HashSHA256(plain).String() || strings.Contains(stored[0][0].(string), plain) {
		t.Fatalf("stored: %v", stored)
	}
	tok := r.token(t, "reports", plain, "scope", "reports.read")
	if tok.status != 200 || tok.body["access_token"] == nil {
		t.Fatalf("the created client's token: %d %s", tok.status, tok.raw)
	}
	if a := r.admin(t, http.MethodGet, "/clients", ""); a.status != 200 || len(a.body["clients"].([]any)) != 1 || strings.Contains(a.raw, "sha256") {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	if a := r.admin(t, http.MethodGet, "/clients/reports", ""); a.status != 200 || a.body["clientId"] != "reports" || strings.Contains(a.raw, "sha256") {
		t.Fatalf("get: %d %s", a.status, a.raw)
	}
	if a := r.admin(t, http.MethodPut, "/clients/reports", `{"scopes": ["reports.read", "pd_AdminWebApi"], "accessTokenType": "reference"}`); a.status != 200 {
		t.Fatalf("update: %d %s", a.status, a.raw)
	}
	tok = r.token(t, "reports", plain, "scope", scope.AdminWebAPI)
	ref, _ := tok.body["access_token"].(string)
	if tok.status != 200 || ref == "" {
		t.Fatalf("a scope added by update: %d %s", tok.status, tok.raw)
	}
	introspect := func() map[string]any {
		a := do(t, http.MethodPost, r.issuerURL()+"/connect/introspect", basic("file-api", "file-api-secret"), "application/x-www-form-urlencoded", "token="+ref)
		return a.body
	}
	// file-api holds pd_AdminWebApi, which the update gave the client.
	if m := introspect(); m["active"] != true {
		t.Fatalf("the reference token before disable: %v", m)
	}
	if a := r.admin(t, http.MethodPost, "/clients/reports/disable", ""); a.status != 200 || a.body["disabled"] != true {
		t.Fatalf("disable: %d %s", a.status, a.raw)
	}
	if a := r.token(t, "reports", plain); a.status != 401 {
		t.Fatalf("a disabled client: %d", a.status)
	}
	if m := introspect(); m["active"] != false {
		t.Fatalf("a disabled client's reference token: %v", m)
	}
	if a := r.admin(t, http.MethodPost, "/clients/reports/enable", ""); a.status != 200 || a.body["disabled"] != false {
		t.Fatalf("enable: %d %s", a.status, a.raw)
	}
	rot := r.admin(t, http.MethodPost, "/clients/reports/rotate-secret", "")
	second, _ := rot.body["secret"].(string)
	if rot.status != 200 || second == "" || second == plain || rot.body["secrets"] != 2.0 {
		t.Fatalf("rotate: %d %s", rot.status, rot.raw)
	}
	for _, s := range []string{plain, second} {
		if a := r.token(t, "reports", s, "scope", "reports.read"); a.status != 200 {
			t.Fatalf("after a rotation that keeps the previous secret: %d", a.status)
		}
	}
	rot = r.admin(t, http.MethodPost, "/clients/reports/rotate-secret", `{"keepPrevious": false}`)
	third, _ := rot.body["secret"].(string)
	if rot.status != 200 || rot.body["secrets"] != 1.0 {
		t.Fatalf("rotate without the previous: %d %s", rot.status, rot.raw)
	}
	if a := r.token(t, "reports", second, "scope", "reports.read"); a.status != 401 {
		t.Fatalf("the previous secret after a rotation that drops it: %d", a.status)
	}
	if a := r.token(t, "reports", third, "scope", "reports.read"); a.status != 200 {
		t.Fatalf("the new secret: %d", a.status)
	}
	if a := r.admin(t, http.MethodDelete, "/clients/reports", ""); a.status != 204 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	if a := r.admin(t, http.MethodGet, "/clients/reports", ""); a.status != 404 {
		t.Fatalf("get after delete: %d", a.status)
	}
	if a := r.token(t, "reports", third, "scope", "reports.read"); a.status != 401 {
		t.Fatalf("a deleted client: %d", a.status)
	}
	audit := query(t, u, `SELECT actor, address, action, target, coalesce(detail::text, '') FROM idsauth_audit ORDER BY id`)
	var actions []string
	for _, row := range audit {
		actions = append(actions, row[2].(string))
		if row[0] != "operator" || row[1] != "127.0.0.1" || row[3] != "reports" {
			t.Errorf("audit row %v: want the operator, 127.0.0.1, reports", row)
		}
		for _, s := range []string{plain, second, third, "sha256:"} {
			if strings.Contains(row[4].(string), s) {
				t.Errorf("audit row %v holds a secret or a hash", row)
			}
		}
	}
	if got := strings.Join(actions, " "); got != "create update disable enable rotate-secret rotate-secret delete" {
		t.Errorf("audit: %s", got)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, `"msg":"idsauth registry: changed"`); n != 7 {
		t.Errorf("%d change lines logged, want 7:\n%s", n, logs)
	}
	for _, s := range []string{plain, second, third} {
		if strings.Contains(logs, s) {
			t.Errorf("a secret is in the log")
		}
	}
}

// TestAdministrationRefusesBadInput: 400 naming the field (as the file
// names it), 409 for a clash, 404 for an unknown client, 401 and 403
// without the operator's token; none of them writes anything.
func TestAdministrationRefusesBadInput(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	if a := r.admin(t, http.MethodPost, "/clients", `{"clientId": "taken", "scopes": ["reports.read"]}`); a.status != 201 {
		t.Fatalf("%d %s", a.status, a.raw)
	}
	bcrypt, _ := secret.HashBcrypt("x", 4)
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"unknown scope", "POST", "/clients", `{"clientId": "a", "scopes": ["nope"]}`, 400, "scopes[0]"},
		{"no scope", "POST", "/clients", `{"clientId": "a"}`, 400, "scopes"},
		{"misspelt field", "POST", "/clients", `{"clientId": "a", "scope": ["reports.read"]}`, 400, "(body)"},
		{"wrong type", "POST", "/clients", `{"clientId": "a", "scopes": "reports.read"}`, 400, "scopes"},
		{"no ID", "POST", "/clients", `{"scopes": ["reports.read"]}`, 400, "clientId"},
		{"lifetime too long", "POST", "/clients", `{"clientId": "a", "scopes": ["reports.read"], "accessTokenLifetime": 86401}`, 400, "accessTokenLifetime"},
		{"key file", "POST", "/clients", `{"clientId": "a", "scopes": ["reports.read"], "publicKeys": [{"file": "a.pem"}]}`, 400, "publicKeys[0].file"},
		{"bcrypt hash", "POST", "/clients", fmt.Sprintf(`{"clientId": "a", "scopes": ["reports.read"], "secretHashes": [%q]}`, bcrypt), 400, "secretHashes[0]"},
		{"plain secret", "POST", "/clients", `{"clientId": "a", "scopes": ["reports.read"], "secretHashes": ["hunter2"]}`, 400, "secretHashes[0]"},
		{"the admin scope", "POST", "/clients", `{"clientId": "a", "scopes": ["idsauth_admin"]}`, 400, "scopes[0]"},
		{"the admin scope, an API resource", "POST", "/apiresources", `{"name": "a-api", "secretHashes": ["sha256:LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ"], "scopes": ["reports.read", "idsauth_admin"]}`, 400, "scopes[1]"},
		{"a member twice", "POST", "/clients", `{"clientId": "a", "scopes": ["reports.read"], "Scopes": ["pd_AdminWebApi"]}`, 400, "(body)"},
		{"not an object", "POST", "/clients", `["a"]`, 400, "(body)"},
		{"two values", "POST", "/clients", `{"clientId": "a", "scopes": ["reports.read"]} {}`, 400, "(body)"},
		{"a file client", "POST", "/clients", `{"clientId": "file-client", "scopes": ["reports.read"]}`, 409, "clientId"},
		{"registered already", "POST", "/clients", `{"clientId": "taken", "scopes": ["reports.read"]}`, 409, ""},
		{"secrets by update", "PUT", "/clients/taken", `{"scopes": ["reports.read"], "secretHashes": []}`, 400, "secretHashes"},
		{"renamed by update", "PUT", "/clients/taken", `{"clientId": "other", "scopes": ["reports.read"]}`, 400, "clientId"},
		{"update unknown", "PUT", "/clients/nobody", `{"scopes": ["reports.read"]}`, 404, ""},
		{"disable unknown", "POST", "/clients/nobody/disable", ``, 404, ""},
		{"rotate unknown", "POST", "/clients/nobody/rotate-secret", ``, 404, ""},
		{"rotate, bad body", "POST", "/clients/taken/rotate-secret", `{"keep": true}`, 400, "keepPrevious"},
		{"delete unknown", "DELETE", "/clients/nobody", ``, 404, ""},
		{"an API resource without scopes", "POST", "/apiresources", `{"name": "x-api"}`, 400, "scopes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := r.admin(t, c.method, c.path, c.body)
			if a.status != c.status || (c.field != "" && a.body["field"] != c.field) {
				t.Errorf("%d %s, want %d naming %q", a.status, a.raw, c.status, c.field)
			}
		})
	}
	// Without the operator's token.
	if a := do(t, "GET", r.issuerURL()+"/admin/clients", "", "", ""); a.status != 401 {
		t.Errorf("without a token: %d", a.status)
	}
	tok := r.token(t, "file-client", fileSecret, "scope", scope.AdminWebAPI)
	if a := do(t, "GET", r.issuerURL()+"/admin/clients", "Bearer "+tok.body["access_token"].(string), "", ""); a.status != 401 && a.status != 403 {
		t.Errorf("a token of another client: %d", a.status)
	}
	if rows := query(t, u, `SELECT count(*) FROM idsauth_audit`); rows[0][0].(int64) != 1 {
		t.Errorf("%v audit rows, want the one create", rows)
	}
	if rows := query(t, u, `SELECT generation FROM idsauth_generation`); rows[0][0].(int64) != 1 {
		t.Errorf("generation %v, want 1", rows)
	}
}

// TestLoadLeavesOutWhatTheAPIRefuses: a registration written around the
// administration API (by SQL) that holds idsauth_admin, or that the
// issuer's configuration refuses, is left out of the snapshot and logged;
// the others are served.
func TestLoadLeavesOutWhatTheAPIRefuses(t *testing.T) {
	_, u := newDatabase(t)
	hash := secret.HashSHA256("sql-secret").String()
	for id, config := range map[string]string{
		"sql-admin":    `{"scopes": ["idsauth_admin"], "audience": ["x"]}`,
		"sql-unknown":  `{"scopes": ["nope"]}`,
		"sql-misspelt": `{"scope": ["pd_AdminWebApi"]}`,
		"sql-good":     `{"scopes": ["pd_AdminWebApi"]}`,
	} {
		exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', $1, $2, $3)`, id, config, []string{hash})
	}
	r := newReplica(t, u, nil)
	if st := r.reg.Status(); st.Clients != 1 || st.Left != 3 {
		t.Fatalf("status: %+v, want 1 client served and 3 left out", st)
	}
	for id, want := range map[string]int{"sql-admin": 401, "sql-unknown": 401, "sql-misspelt": 401, "sql-good": 200} {
		sc := scope.AdminWebAPI
		if id == "sql-admin" {
			sc = pgregistry.AdminScope
		}
		if a := r.token(t, id, "sql-secret", "scope", sc); a.status != want {
			t.Errorf("%s: %d, want %d", id, a.status, want)
		}
	}
	for _, want := range []string{`clients (\"sql-admin\").scopes[0]: idsauth_admin`, `clients (\"sql-unknown\").scopes[0]`, `clients (\"sql-misspelt\")`} {
		if !strings.Contains(r.logs.String(), want) {
			t.Errorf("no log line with %s:\n%s", want, r.logs)
		}
	}
}
