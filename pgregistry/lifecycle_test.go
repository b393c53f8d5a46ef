package pgregistry_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// introspectAt returns whether file-api's introspection at r answers tok
// active.
func (r *replica) introspectAt(t *testing.T, tok string) bool {
	t.Helper()
	a := do(t, http.MethodPost, r.issuerURL()+"/connect/introspect", basic("file-api", "file-api-secret"), "application/x-www-form-urlencoded", url.Values{"token": {tok}}.Encode())
	if a.status != 200 {
		t.Fatalf("introspection: %d %s", a.status, a.raw)
	}
	return a.body["active"] == true
}

// create registers a client of pd_AdminWebApi and returns its secret.
func (r *replica) create(t *testing.T, id, extra string) string {
	t.Helper()
	a := r.admin(t, http.MethodPost, "/clients", fmt.Sprintf(`{"clientId": %q, "scopes": ["pd_AdminWebApi"]%s}`, id, extra))
	if a.status != 201 {
		t.Fatalf("create %s: %d %s", id, a.status, a.raw)
	}
	s, _ := a.body["secret"].(string)
	return s
}

// accessToken returns a token of id with pass, or fails.
func (r *replica) accessToken(t *testing.T, id, pass string) string {
	t.Helper()
	a := r.token(t, id, pass, "scope", scope.AdminWebAPI)
	tok, _ := a.body["access_token"].(string)
	if a.status != 200 || tok == "" {
		t.Fatalf("token of %s: %d %s", id, a.status, a.raw)
	}
	return tok
}

// TestTokensStayDeadThroughTheRegistry: the sequence after a leaked
// secret (disable, rotate-secret dropping the previous ones, enable)
// leaves the tokens issued before it inactive, JWT and reference, at both
// replicas, while a token issued just after, in the same second, is
// active; so does removing a client and registering its ID again; a
// rotation that keeps the previous secret ends nothing. (Issue 39: they
// came back to life.)
func TestTokensStayDeadThroughTheRegistry(t *testing.T) {
	_, u := newDatabase(t)
	shared := sharedIssuer(t)
	r1, r2 := newReplica(t, u, shared), newReplica(t, u, shared)
	sec := map[string]string{"leak": r1.create(t, "leak", ""), "leak-ref": r1.create(t, "leak-ref", `, "accessTokenType": "reference"`)}
	r2.waitGeneration(t, r1.reg.Status().Generation, 5e9)
	var before []string
	for id, s := range sec {
		before = append(before, r1.accessToken(t, id, s))
	}
	check := func(when string, toks []string, want bool) {
		t.Helper()
		r2.waitGeneration(t, r1.reg.Status().Generation, 5e9)
		for i, r := range []*replica{r1, r2} {
			for _, tok := range toks {
				if i > 0 && !strings.Contains(tok, ".") {
					continue // a reference token: in replica 1's own memory (redisstore's tests share one)
				}
				if got := r.introspectAt(t, tok); got != want {
					t.Errorf("%s, replica %d: %.12s... active %v, want %v", when, i+1, tok, got, want)
				}
			}
		}
	}
	// A rotation that keeps the previous secret ends nothing.
	for id := range sec {
		a := r1.admin(t, http.MethodPost, "/clients/"+id+"/rotate-secret", "")
		if a.status != 200 {
			t.Fatalf("rotate: %d %s", a.status, a.raw)
		}
		sec[id] = a.body["secret"].(string)
	}
	check("a rotation keeping the previous secret", before, true)
	for id := range sec {
		if a := r1.admin(t, http.MethodPost, "/clients/"+id+"/disable", ""); a.status != 200 {
			t.Fatalf("disable: %d %s", a.status, a.raw)
		}
	}
	check("disabled", before, false)
	for id := range sec {
		a := r1.admin(t, http.MethodPost, "/clients/"+id+"/rotate-secret", `{"keepPrevious": false}`)
		if a.status != 200 {
			t.Fatalf("rotate: %d %s", a.status, a.raw)
		}
		sec[id] = a.body["secret"].(string)
		if a := r1.admin(t, http.MethodPost, "/clients/"+id+"/enable", ""); a.status != 200 {
			t.Fatalf("enable: %d %s", a.status, a.raw)
		}
	}
	var after []string
	for id, s := range sec {
		after = append(after, r1.accessToken(t, id, s))
	}
	check("disabled, the previous secrets dropped, enabled", before, false)
	check("issued after the enable", after, true)

	// Removed, and registered again by someone else.
	for id := range sec {
		if a := r1.admin(t, http.MethodDelete, "/clients/"+id, ""); a.status != 204 {
			t.Fatalf("remove: %d %s", a.status, a.raw)
		}
	}
	sec["leak"], sec["leak-ref"] = r1.create(t, "leak", ""), r1.create(t, "leak-ref", `, "accessTokenType": "reference"`)
	check("removed and registered again", after, false)
	var again []string
	for id, s := range sec {
		again = append(again, r1.accessToken(t, id, s))
	}
	check("the new registration's", again, true)
}

// TestEpochsKeptByEveryWriter: the rule of epochs is the database's
// (a trigger), so that a replica of the release before, writing with its
// own statements during a rolling upgrade, keeps it too; a row stored
// before the upgrade keeps the epoch 0 of the tokens issued before, which
// stay active until something happens to their client.
func TestEpochsKeptByEveryWriter(t *testing.T) {
	_, u := newDatabase(t)
	epoch := func(id string) int64 {
		t.Helper()
		return query(t, u, `SELECT epoch FROM idsauth_registrations WHERE kind = 'client' AND id = $1`, id)[0][0].(int64)
	}
	h1, h2 := secret.HashSHA256("one").String(), secret.HashSHA256("two").String()
	// Release 1's statements, as its replicas send them.
	exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', 'old', '{"scopes": ["pd_AdminWebApi"]}', $1)`, []string{h1})
	e := epoch("old")
	steps := []struct {
		name, sql string
		args      []any
		renewed   bool
	}{
		{"a config update", `UPDATE idsauth_registrations SET config = '{"scopes": ["pd_AdminWebApi"]}', updated_at = now() WHERE kind = 'client' AND id = 'old'`, nil, false},
		{"a rotation keeping the previous", `UPDATE idsauth_registrations SET secret_hashes = $1, updated_at = now() WHERE kind = 'client' AND id = 'old'`, []any{[]string{h2, h1}}, false},
		{"disabled", `UPDATE idsauth_registrations SET disabled = true, updated_at = now() WHERE kind = 'client' AND id = 'old'`, nil, false},
		{"enabled", `UPDATE idsauth_registrations SET disabled = false, updated_at = now() WHERE kind = 'client' AND id = 'old'`, nil, true},
		{"every secret dropped", `UPDATE idsauth_registrations SET secret_hashes = $1, updated_at = now() WHERE kind = 'client' AND id = 'old'`, []any{[]string{secret.HashSHA256("three").String()}}, true},
		{"the epoch written by hand", `UPDATE idsauth_registrations SET epoch = 1 WHERE kind = 'client' AND id = 'old'`, nil, false},
	}
	for _, s := range steps {
		exec(t, u, s.sql, s.args...)
		if got := epoch("old"); (got != e) != s.renewed || got == 0 {
			t.Errorf("%s: epoch %d after %d, renewed: want %v", s.name, got, e, s.renewed)
		}
		e = epoch("old")
	}
	// A row of before the upgrade: epoch 0.
	exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', 'legacy', '{"scopes": ["pd_AdminWebApi"]}', $1)`, []string{h1})
	exec(t, u, `ALTER TABLE idsauth_registrations DISABLE TRIGGER idsauth_registration_epoch; UPDATE idsauth_registrations SET epoch = 0 WHERE id = 'legacy'; ALTER TABLE idsauth_registrations ENABLE TRIGGER idsauth_registration_epoch`)
	r := newReplica(t, u, nil)
	tok := r.accessToken(t, "legacy", "one")
	if claims := jwtClaims(t, tok); claims["idsauth_epoch"] != nil {
		t.Errorf("a token of a row of before carries an epoch: %v", claims)
	}
	if !r.introspectAt(t, tok) {
		t.Error("a token of a row of before is inactive")
	}
	r.admin(t, http.MethodPost, "/clients/legacy/disable", "")
	r.admin(t, http.MethodPost, "/clients/legacy/enable", "")
	if r.introspectAt(t, tok) {
		t.Error("a token of a row of before is active after its client was disabled and enabled")
	}
}

func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	var c map[string]any
	if err := json.Unmarshal(decodeSegment(t, parts[1]), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRemovedAdministratorIsCutOff: an administrator's token, JWT or
// reference, is asked about at each call: once its client is removed from
// the file, or loses idsauth_admin, and the file reloaded, it is refused
// at once. (Issue 39: it kept creating clients until it expired.)
func TestRemovedAdministratorIsCutOff(t *testing.T) {
	_, u := newDatabase(t)
	var cfg *issuer.Config
	r := newReplica(t, u, func(c *issuer.Config) {
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "operator-ref", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()},
			Scopes: []string{pgregistry.AdminScope}, Audience: c.Clients[0].Audience, AccessTokenType: "reference"})
		cfg = c
	})
	tokens := map[string]string{}
	for _, id := range []string{"operator", "operator-ref"} {
		a := r.token(t, id, operatorSecret, "scope", pgregistry.AdminScope)
		tokens[id], _ = a.body["access_token"].(string)
	}
	call := func(tok string) int {
		return do(t, http.MethodGet, r.issuerURL()+"/admin/clients", "Bearer "+tok, "", "").status
	}
	for id, tok := range tokens {
		if st := call(tok); st != 200 {
			t.Fatalf("%s's token: %d", id, st)
		}
	}
	lost := *cfg
	lost.Clients = []issuer.ClientConfig{cfg.Clients[0], cfg.Clients[1]}
	lost.Clients[0].Scopes = []string{scope.AdminWebAPI} // operator loses idsauth_admin; operator-ref is removed
	if err := r.iss.Reload(&lost); err != nil {
		t.Fatal(err)
	}
	for id, tok := range tokens {
		if st := call(tok); st != 401 {
			t.Errorf("%s's token after the reload: %d, want 401", id, st)
		}
	}
	if a := do(t, http.MethodPost, r.issuerURL()+"/admin/clients", "Bearer "+tokens["operator"], "application/json", `{"clientId": "x", "scopes": ["pd_AdminWebApi"]}`); a.status != 401 {
		t.Errorf("a create with the removed administrator's token: %d %s", a.status, a.raw)
	}
}

// TestCertificateClientGetsNoSecret: a client or API resource registered
// with a certificate or keys and no secret hash gets no secret (a second
// credential that would let it in without them), unless the create asks
// (?secret=generate); one with no credential gets one.
func TestCertificateClientGetsNoSecret(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, func(c *issuer.Config) { c.MTLS.ClientCAs = []string{caFile(t)} })
	for _, c := range []struct {
		path, body string
		secret     bool
	}{
		{"/clients", `{"clientId": "pki", "scopes": ["pd_AdminWebApi"], "tlsClientAuth": {"subjectDn": "CN=pki"}}`, false},
		{"/clients", `{"clientId": "self", "scopes": ["pd_AdminWebApi"], "certificateThumbprints": ["` + strings.Repeat("ab", 32) + `"]}`, false},
		{"/apiresources", `{"name": "pki-api", "scopes": ["pd_AdminWebApi"], "tlsClientAuth": {"sanDns": "api.example"}}`, false},
		{"/clients?secret=generate", `{"clientId": "pki-asked", "scopes": ["pd_AdminWebApi"], "tlsClientAuth": {"subjectDn": "CN=pki"}}`, true},
		{"/clients", `{"clientId": "plain", "scopes": ["pd_AdminWebApi"]}`, true},
	} {
		a := r.admin(t, http.MethodPost, c.path, c.body)
		_, has := a.body["secret"]
		if a.status != 201 || has != c.secret || (a.body["secrets"] != float64(map[bool]int{true: 1}[c.secret])) {
			t.Errorf("%s %s: %d %s, want a secret: %v", c.path, c.body, a.status, a.raw, c.secret)
		}
	}
	if a := r.admin(t, http.MethodPost, "/clients?secret=please", `{"clientId": "q", "scopes": ["pd_AdminWebApi"]}`); a.status != 400 || a.body["field"] != "(query)" {
		t.Errorf("?secret=please: %d %s", a.status, a.raw)
	}
}

// TestRegisteredIDsThroughTheAPI: the administration API refuses an ID
// that is not printable ASCII or is "." or "..", 409 for one equal to a
// file client's or a registered one's under ASCII case folding; every ID
// it takes is reached by its path; a row written by SQL outside the rule
// is left out at load, counted, logged, and removed by the API; a file
// client winning a clash is counted among those left out too.
func TestRegisteredIDsThroughTheAPI(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	for _, c := range []struct {
		id     string
		status int
	}{
		{"File-Client", 409}, {"ok", 201}, {"OK", 409}, {"fil\u0435-client", 400}, {"zero\u200bwidth", 400}, {" ok ", 400},
		{"a\nb", 400}, {"\x1b]0;x\x07", 400}, {".", 400}, {"..", 400}, {"a/b?c#d%e&f", 201},
	} {
		id, _ := json.Marshal(c.id)
		a := r.admin(t, http.MethodPost, "/clients", fmt.Sprintf(`{"clientId": %s, "scopes": ["pd_AdminWebApi"]}`, id))
		if a.status != c.status || (c.status != 201 && a.body["field"] != "clientId" && c.status != 409) {
			t.Errorf("%q: %d %s, want %d", c.id, a.status, a.raw, c.status)
		}
	}
	for _, verb := range []string{"disable", "enable"} {
		if a := r.admin(t, http.MethodPost, "/clients/"+url.PathEscape("a/b?c#d%e&f")+"/"+verb, ""); a.status != 200 {
			t.Errorf("%s by path of an ID with / ? # %%: %d %s", verb, a.status, a.raw)
		}
	}
	for _, id := range []string{"..", "line\nend", "file-client"} {
		exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', $1, '{"scopes": ["pd_AdminWebApi"]}', $2)`, id, []string{secret.HashSHA256("x").String()})
	}
	gen := r.reg.Status().Generation // before the notification: its load may be done before the next line
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1; NOTIFY idsauth_registry, '1000'`)
	r.waitGeneration(t, gen+1, 5e9)
	if st := r.reg.Status(); st.Left != 3 || st.Clients != 2 {
		t.Errorf("status: %+v, want 3 left out (two outside the rule, one a file client's), 2 served", st)
	}
	for _, want := range []string{`clients (\"..\").clientId: \"..\" is a URL path's dot segment`, `clients (\"line\\nend\").clientId: want printable ASCII`, `clients (\"file-client\").clientId: a client of the configuration file, which wins`} {
		if !strings.Contains(r.logs.String(), "idsauth registry: a registration is left out: it does not fit the issuer's configuration\",\"error\":\"issuer config: "+want) {
			t.Errorf("no log line %s:\n%s", want, r.logs)
		}
	}
	if a := r.admin(t, http.MethodDelete, "/clients?id="+url.QueryEscape(".."), ""); a.status != 204 {
		t.Errorf("remove of a stored ..: %d %s", a.status, a.raw)
	}
	if a := r.admin(t, http.MethodDelete, "/clients/"+url.PathEscape("line\nend"), ""); a.status != 204 {
		t.Errorf("remove of a stored line end: %d %s", a.status, a.raw)
	}
}

func decodeSegment(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// caFile writes a CA certificate of its own to a file and returns its
// path: the mtls.clientCAs of a configuration.
func caFile(t *testing.T) string {
	t.Helper()
	ca := certtest.NewCA(t, "clients")
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sharedIssuer returns an edit that gives replicas one issuer URL and one
// signing key, as behind one load balancer: each introspects the tokens
// of the other.
func sharedIssuer(t *testing.T) func(*issuer.Config) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *issuer.Config) {
		c.Issuer, c.EphemeralKey, c.Keys = "https://ids.example/ids", false, []issuer.KeyConfig{{Key: key}}
		c.Clients[0].Audience = []string{"https://ids.example/ids/admin"}
	}
}
