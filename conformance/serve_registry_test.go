package conformance

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const operatorSecret = "operator-secret"

// registryDeployment is a deployment whose file holds "reporting" and
// the administrator "operator" (scope idsauth_admin, audience
// ISSUER/admin), whose issuer URL is http://addr/ids, and whose
// clientStore is the PostgreSQL at the URL in $IDSAUTH_PG_URL, reconciled
// every minute: a change reaches another replica by LISTEN/NOTIFY alone.
func registryDeployment(t *testing.T, addr string) (*deployment, string) {
	t.Helper()
	d := newDeployment(t, "reporting")
	path := filepath.Join(d.dir, "idsauth.json")
	iss := "http://" + addr + "/ids"
	editConfig(t, path, func(cfg map[string]any) {
		cfg["issuer"] = iss
		cfg["scopes"] = []string{"idsauth_admin"}
		cfg["clients"] = append(cfg["clients"].([]any), map[string]any{"clientId": "operator", "secretHashes": []string{secret.HashSHA256(operatorSecret).String()},
			"scopes": []string{"idsauth_admin"}, "audience": []string{iss + "/admin"}})
		cfg["apiResources"] = []map[string]any{{"name": "api", "secretHashes": []string{secret.HashSHA256("api-secret").String()}, "scopes": []string{"pd_AdminWebApi"}}}
		cfg["clientStore"] = map[string]any{"postgres": map[string]any{"urlEnv": "IDSAUTH_PG_URL", "reconcileSeconds": 60}}
	})
	return d, path
}

// freeAddr is a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// command runs the idsauth command with env and returns its exit status,
// standard output and standard error.
func command(t *testing.T, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// pollToken asks base for a token of id until the answer's status is
// want, for up to a second, and returns how many requests it took.
func pollToken(t *testing.T, base, id, pass string, want int) int {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for n := 1; ; n++ {
		status, _ := postForm(t, base, "token", id, pass, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}})
		if status == want {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s's token request still answered %d after %d requests in a second, want %d", base, id, status, n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeReplicasShareTheClientRegistry: migrate (twice: the second
// changes nothing) and check-config on a real PostgreSQL; two serve
// processes on it; a client added with "idsauth clients add" through one
// gets a token from the other within a second, and disabled through the
// other's administration API, both refuse it within a second and answer
// its reference token inactive; rotated and removed by the command;
// /readyz ready, then ready and degraded (200) while PostgreSQL is down,
// when the registered clients still get tokens and the administration
// API answers 503; and not one line of either log holds a secret.
func TestServeReplicasShareTheClientRegistry(t *testing.T) {
	pg := pgtest.Start(t)
	env := []string{"IDSAUTH_PG_URL=" + pg.NewDatabase(t)}
	addrA := freeAddr(t)
	_, path := registryDeployment(t, addrA)
	issuerURL := "http://" + addrA + "/ids"

	for i, want := range []string{"schema migrated from version 0 to 3", "schema at version 3: nothing to do"} {
		if code, out, errOut := command(t, env, "", "migrate", "-config", path); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("migrate %d: %d %q %s, want %q", i+1, code, out, errOut, want)
		}
	}
	if code, out, errOut := command(t, env, "", "check-config", path); code != 0 || !strings.Contains(out, "Client registry (idsauth serve): PostgreSQL ($IDSAUTH_PG_URL), generation 0: 0 registered clients") {
		t.Fatalf("check-config: %d\n%s%s", code, out, errOut)
	}
	a := start(t, env, "-addr", addrA, "-ops-addr", "127.0.0.1:0", "-config", path)
	b := start(t, env, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	admin := []string{"-issuer", issuerURL, "-admin-id", "operator"}
	adminEnv := append(env, "IDSAUTH_ADMIN_SECRET="+operatorSecret)

	code, out, errOut := command(t, adminEnv, "", append(append([]string{"clients", "add"}, admin...), "-scope", scope.AdminWebAPI, "-reference", "billing")...)
	plain := strings.TrimPrefix(strings.TrimSpace(out[strings.Index(out, "secret: "):]), "secret: ")
	if code != 0 || !strings.Contains(out, "billing registered") || plain == "" {
		t.Fatalf("clients add: %d %q %s", code, out, errOut)
	}
	t.Logf("the other replica issued the new client's token at request %d", pollToken(t, b.base, "billing", plain, 200))
	_, m := postForm(t, b.base, "token", "billing", plain, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}})
	ref, _ := m["access_token"].(string)
	if code, out, _ := command(t, adminEnv, "", append([]string{"clients", "list"}, admin...)...); code != 0 || !strings.Contains(out, "billing") || !strings.Contains(out, "enabled") {
		t.Fatalf("clients list: %d %q", code, out)
	}

	// A client of a certificate gets no secret unless asked.
	thumb := `{"scopes": ["pd_AdminWebApi"], "certificateThumbprints": ["` + strings.Repeat("0f", 32) + `"]}`
	for _, c := range []struct {
		id     string
		flags  []string
		secret bool
	}{{"certy", nil, false}, {"certy-asked", []string{"-generate-secret"}, true}} {
		code, out, errOut := command(t, adminEnv, thumb, append(append(append([]string{"clients", "add"}, admin...), c.flags...), "-json", "-", c.id)...)
		if code != 0 || strings.Contains(out, "secret: ") != c.secret {
			t.Errorf("clients add %s %v: %d %q %s, want a secret: %v", c.id, c.flags, code, out, errOut, c.secret)
		}
	}
	// IDs stored before the rule of IDs, by SQL: printed escaped, so that
	// a line end cannot forge a row, and reached by remove.
	sqlExec(t, env[0][len("IDSAUTH_PG_URL="):], `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES
		('client', E'forged\nROW\tenabled', '{"scopes": ["pd_AdminWebApi"]}', '{}'), ('client', '..', '{"scopes": ["pd_AdminWebApi"]}', '{}')`)
	if code, out, _ := command(t, adminEnv, "", append([]string{"clients", "list"}, admin...)...); code != 0 || !strings.Contains(out, `"forged\nROW\tenabled"`) || strings.Contains(out, "\nROW") {
		t.Errorf("clients list of an ID with a line end: %d %q", code, out)
	}
	for _, id := range []string{"..", "forged\nROW\tenabled"} {
		if code, out, errOut := command(t, adminEnv, "", append(append([]string{"clients", "remove"}, admin...), id)...); code != 0 || !strings.Contains(out, " removed") {
			t.Errorf("clients remove %q: %d %q %s", id, code, out, errOut)
		}
	}

	// Disabled through the other replica's administration API.
	_, tok := postForm(t, b.base, "token", "operator", operatorSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {"idsauth_admin"}})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/ids/admin/clients/billing/disable", nil)
	req.Header.Set("Authorization", fmt.Sprint("Bearer ", tok["access_token"]))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("disable through the other replica: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, r := range []*running{b, a} {
		t.Logf("%s refused the disabled client at request %d", r.base, pollToken(t, r.base, "billing", plain, 401))
		if _, m := postForm(t, r.base, "introspect", "api", "api-secret", url.Values{"token": {ref}}); m["active"] != false || len(m) != 1 {
			t.Errorf("%s: the disabled client's reference token: %v", r.base, m)
		}
	}
	for _, verb := range []string{"enable", "rotate-secret"} {
		if code, out, errOut := command(t, adminEnv, "", append(append([]string{"clients", verb}, admin...), "billing")...); code != 0 {
			t.Fatalf("clients %s: %d %q %s", verb, code, out, errOut)
		} else if verb == "rotate-secret" {
			second := strings.TrimSpace(strings.TrimPrefix(out, "secret: "))
			pollToken(t, b.base, "billing", second, 200)
			pollToken(t, b.base, "billing", plain, 200) // the previous one, kept
		}
	}

	// PostgreSQL down: ready, degraded; the registered client is served
	// from the snapshot; the administration API answers 503.
	if got, body := readyzBody(t, a); got != 200 || body != "ready\n" {
		t.Fatalf("/readyz: %d %q", got, body)
	}
	pg.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, body := readyzBody(t, a)
		if got == 200 && strings.HasPrefix(body, "ready, degraded: the client registry (PostgreSQL) does not answer") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with PostgreSQL down: %d %q", got, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pollToken(t, a.base, "billing", plain, 200)
	if code, _, errOut := command(t, adminEnv, "", append(append([]string{"clients", "remove"}, admin...), "billing")...); code != 1 || !strings.Contains(errOut, "503") {
		t.Fatalf("clients remove with PostgreSQL down: %d %s", code, errOut)
	}
	pg.Restart(t)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if got, body := readyzBody(t, a); got == 200 && body == "ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz stayed degraded after PostgreSQL came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, out, errOut := command(t, adminEnv, "", append(append([]string{"clients", "remove"}, admin...), "billing")...); code != 0 {
		t.Fatalf("clients remove: %d %q %s", code, out, errOut)
	}
	pollToken(t, b.base, "billing", plain, 401)
	for _, r := range []*running{a, b} {
		for _, l := range r.log() {
			if strings.Contains(l, plain) || strings.Contains(l, operatorSecret) || strings.Contains(l, pg.Password) {
				t.Errorf("a log line holds a secret: %s", l)
			}
		}
	}
	if l := a.waitLog(t, `"msg":"idsauth registry: changed"`, `"action":"create"`); !strings.Contains(l, `"actor":"operator"`) || !strings.Contains(l, `"address":"127.0.0.1"`) {
		t.Errorf("the change's log line: %s", l)
	}
}

// readyzBody is /readyz's status and body.
func readyzBody(t *testing.T, r *running) (int, string) {
	t.Helper()
	resp, err := http.Get(r.ops + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// sqlExec runs statements on the database at u.
func sqlExec(t *testing.T, u, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}

// TestServeStartsWhilePostgreSQLIsDown: a replica started while its
// PostgreSQL is down listens at once, before the registry has asked the
// database twice (counted by a stand-in on PostgreSQL's port that
// accepts and hangs up), answers /readyz 503 "not loaded yet" as
// DEPLOYMENT.md promises, and serves the file's clients meanwhile; once
// PostgreSQL is back it loads the registered clients, says so in its log,
// turns ready and serves them.
func TestServeStartsWhilePostgreSQLIsDown(t *testing.T) {
	pg := pgtest.Start(t)
	env := []string{"IDSAUTH_PG_URL=" + pg.NewDatabase(t)}
	addrA := freeAddr(t)
	d, path := registryDeployment(t, addrA)
	if code, out, errOut := command(t, env, "", "migrate", "-config", path); code != 0 {
		t.Fatalf("migrate: %d %q %s", code, out, errOut)
	}
	a := start(t, env, "-addr", addrA, "-ops-addr", "127.0.0.1:0", "-config", path)
	code, out, errOut := command(t, append(env, "IDSAUTH_ADMIN_SECRET="+operatorSecret), "", "clients", "add", "-issuer", "http://"+addrA+"/ids", "-admin-id", "operator", "-scope", scope.AdminWebAPI, "billing")
	plain := strings.TrimPrefix(strings.TrimSpace(out[strings.Index(out, "secret: "):]), "secret: ")
	if code != 0 || plain == "" {
		t.Fatalf("clients add: %d %q %s", code, out, errOut)
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()

	pg.Stop()
	standIn, err := net.Listen("tcp", pg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	go func() {
		for {
			c, err := standIn.Accept()
			if err != nil {
				return
			}
			asked.Add(1)
			c.Close()
		}
	}()
	b := start(t, env, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	if n := asked.Load(); n > 2 {
		t.Errorf("the registry had asked the database %d times before serve listened: it waited for it", n)
	} else {
		t.Logf("serve listened when the registry had asked the database %d time(s)", n)
	}
	if got, body := readyzBody(t, b); got != 503 || !strings.Contains(body, "the client registry (PostgreSQL) has not been loaded yet") {
		t.Errorf("/readyz with PostgreSQL down at start: %d %q", got, body)
	}
	if status, _ := postForm(t, b.base, "token", "reporting", d.secrets["reporting"], url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}); status != 200 {
		t.Errorf("a client of the file with PostgreSQL down at start: %d", status)
	}
	if status, _ := postForm(t, b.base, "token", "billing", plain, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}); status != 401 {
		t.Errorf("a registered client, not loaded yet: %d", status)
	}

	standIn.Close()
	pg.Restart(t)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if got, body := readyzBody(t, b); got == 200 && body == "ready\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("/readyz after PostgreSQL came back: %d %q", got, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pollToken(t, b.base, "billing", plain, 200)
	if l := b.waitLog(t, `"msg":"registered clients in PostgreSQL"`); !strings.Contains(l, `"clients":1`) {
		t.Errorf("the load's log line: %s", l)
	}
}

// TestCommandsOverTLSFromTheEnvironment: against a serve over TLS whose
// CA is not the system's, "idsauth clients" trusts it with -cacert as
// "idsauth token" does (without it: an unknown authority), and both read
// the issuer from IDSAUTH_ISSUER; "idsauth token -cert" sends the secret
// of IDSAUTH_CLIENT_SECRET, the default variable, as it sends one of
// -secret-env, for a client that binds its tokens to its certificate.
func TestCommandsOverTLSFromTheEnvironment(t *testing.T) {
	pg := pgtest.Start(t)
	env := []string{"IDSAUTH_PG_URL=" + pg.NewDatabase(t)}
	main := freePort(t)
	d, path := registryDeployment(t, "127.0.0.1:"+main)
	write := func(name string, data []byte) string {
		p := filepath.Join(d.dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := certtest.NewCA(t, "idsauth")
	server, batch := ca.Server(t), ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "batch"}})
	caFile := write("ca.pem", certtest.PEM(ca.Cert.Raw))
	serverFile, serverKey := write("server.pem", certtest.PEM(server.Leaf.Raw)), write("server-key.pem", certtest.KeyPEM(t, server))
	batchFile, batchKey := write("batch.pem", certtest.PEM(batch.Leaf.Raw)), write("batch-key.pem", certtest.KeyPEM(t, batch))
	issuerURL := "https://127.0.0.1:" + main + "/ids"
	editConfig(t, path, func(cfg map[string]any) {
		cfg["issuer"] = issuerURL
		cfg["clients"] = append(cfg["clients"].([]any), map[string]any{"clientId": "batch", "secretHashes": []string{secret.HashSHA256("batch-secret").String()},
			"certificateBoundTokens": true, "scopes": []string{scope.AdminWebAPI}})
		cfg["clients"].([]any)[1].(map[string]any)["audience"] = []string{issuerURL + "/admin"} // the operator's
	})
	if code, out, errOut := command(t, env, "", "migrate", "-config", path); code != 0 {
		t.Fatalf("migrate: %d %q %s", code, out, errOut)
	}
	start(t, env, "-addr", "127.0.0.1:"+main, "-ops-addr", "127.0.0.1:0", "-config", path, "-tls-cert", serverFile, "-tls-key", serverKey, "-client-auth", "request")
	adminEnv := append(env, "IDSAUTH_ISSUER="+issuerURL, "IDSAUTH_ADMIN_ID=operator", "IDSAUTH_ADMIN_SECRET="+operatorSecret)

	if code, _, errOut := command(t, adminEnv, "", "clients", "list"); code != 1 || !strings.Contains(errOut, "certificate signed by unknown authority") {
		t.Fatalf("clients list without -cacert: %d %s", code, errOut)
	}
	code, out, errOut := command(t, adminEnv, "", "clients", "add", "-cacert", caFile, "-scope", scope.AdminWebAPI, "billing")
	plain := strings.TrimPrefix(strings.TrimSpace(out[max(strings.Index(out, "secret: "), 0):]), "secret: ")
	if code != 0 || !strings.Contains(out, "billing registered") || plain == "" {
		t.Fatalf("clients add -cacert: %d %q %s", code, out, errOut)
	}
	clientEnv := []string{"IDSAUTH_ISSUER=" + issuerURL, "IDSAUTH_CLIENT_SECRET=" + plain}
	var tok string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) { // loaded by this replica when add returns; a second at most elsewhere
		code, out, errOut := command(t, clientEnv, "", "token", "-cacert", caFile, "-client-id", "billing", "-scope", scope.AdminWebAPI)
		if tok = strings.TrimSpace(out); code == 0 && tok != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token, the issuer from IDSAUTH_ISSUER: %d %q %s", code, out, errOut)
		}
	}
	code, out, errOut = command(t, []string{"IDSAUTH_ISSUER=" + issuerURL, "IDSAUTH_CLIENT_SECRET=batch-secret"}, "",
		"token", "-cacert", caFile, "-client-id", "batch", "-scope", scope.AdminWebAPI, "-cert", batchFile, "-key", batchKey, "-decode")
	if want := `"x5t#S256": "` + clientcert.Thumbprint(batch.Leaf.Raw) + `"`; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("token -cert with IDSAUTH_CLIENT_SECRET: %d %s %s, want %s", code, out, errOut, want)
	}
}
