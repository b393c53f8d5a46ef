package pgregistry_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestRedTeamAdminTokens: the administration API as an attacker holding
// a token that is not quite an administrator's: a plain client's, one of
// the admin scope for another audience, one of the admin audience without
// the scope, a DPoP-bound administrator's presented as Bearer, and one of
// a registered client given idsauth_admin by SQL. Each is refused 401 or
// 403, and nothing is written.
func TestRedTeamAdminTokens(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, func(c *issuer.Config) {
		admin := c.Clients[0].Audience
		c.Clients = append(c.Clients,
			issuer.ClientConfig{ClientID: "admin-elsewhere", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()}, Scopes: []string{pgregistry.AdminScope}},
			issuer.ClientConfig{ClientID: "audience-only", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()}, Scopes: []string{scope.AdminWebAPI}, Audience: admin},
			issuer.ClientConfig{ClientID: "operator-dpop", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()}, Scopes: []string{pgregistry.AdminScope}, Audience: admin},
			issuer.ClientConfig{ClientID: "operator-dpop-ref", SecretHashes: []string{secret.HashSHA256(operatorSecret).String()}, Scopes: []string{pgregistry.AdminScope}, Audience: admin, AccessTokenType: "reference"},
		)
	})
	tokenOf := func(id string, kv ...string) string {
		t.Helper()
		pass := operatorSecret
		if id == "file-client" {
			pass = fileSecret
		}
		a := r.token(t, id, pass, kv...)
		tok, _ := a.body["access_token"].(string)
		if tok == "" {
			t.Fatalf("token of %s: %d %s", id, a.status, a.raw)
		}
		return tok
	}
	dpopToken := func(id string) string {
		t.Helper()
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		s, err := clientauth.NewSigner(k, "ES256", "")
		if err != nil {
			t.Fatal(err)
		}
		tokenURL := r.issuerURL() + "/connect/token"
		proof, err := s.Proof(http.MethodPost, tokenURL, "", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "scope": {pgregistry.AdminScope}}.Encode()))
		req.Header.Set("Authorization", basic(id, operatorSecret))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("DPoP", proof)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		if err := jsonDecode(resp.Body, &body); err != nil || body.TokenType != "DPoP" {
			t.Fatalf("DPoP token of %s: %d %+v %v", id, resp.StatusCode, body, err)
		}
		return body.AccessToken
	}
	// A registered client given idsauth_admin by hand: left out, so it
	// has no token to try.
	exec(t, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes) VALUES ('client', 'sneaky', $1, $2)`,
		fmt.Sprintf(`{"scopes": [%q], "audience": [%q]}`, pgregistry.AdminScope, r.issuerURL()+"/admin"), []string{secret.HashSHA256(operatorSecret).String()})
	gen := r.reg.Status().Generation // before the notification: its load may be done before the next line
	exec(t, u, `UPDATE idsauth_generation SET generation = generation + 1; NOTIFY idsauth_registry, '1000'`)
	r.waitGeneration(t, gen+1, 5e9)
	if a := r.token(t, "sneaky", operatorSecret, "scope", pgregistry.AdminScope); a.status == 200 {
		t.Errorf("a registered client given idsauth_admin by SQL got a token: %s", a.raw)
	}

	for _, c := range []struct {
		name, auth string
		want       []int
	}{
		{"a plain client's token", "Bearer " + tokenOf("file-client", "scope", scope.AdminWebAPI), []int{401, 403}},
		{"the admin scope for another audience", "Bearer " + tokenOf("admin-elsewhere", "scope", pgregistry.AdminScope), []int{401}},
		{"the admin audience without the scope", "Bearer " + tokenOf("audience-only", "scope", scope.AdminWebAPI), []int{401, 403}},
		{"a DPoP-bound administrator's JWT as Bearer", "Bearer " + dpopToken("operator-dpop"), []int{401}},
		{"a DPoP-bound administrator's reference token as Bearer", "Bearer " + dpopToken("operator-dpop-ref"), []int{401}},
		{"a token of no client", "Bearer " + strings.Repeat("A", 43), []int{401}},
		{"no token", "", []int{401}},
		{"Basic credentials of the operator", basic("operator", operatorSecret), []int{401}},
	} {
		for _, call := range []struct{ method, path, body string }{
			{http.MethodGet, "/clients", ""},
			{http.MethodPost, "/clients", `{"clientId": "planted", "scopes": ["pd_AdminWebApi"]}`},
		} {
			a := do(t, call.method, r.issuerURL()+"/admin"+call.path, c.auth, "application/json", call.body)
			ok := false
			for _, w := range c.want {
				ok = ok || a.status == w
			}
			if strings.Contains(c.name, "DPoP") && a.body["error_description"] != "token is bound to a key" {
				t.Errorf("%s: %d %s, want refused as bound to a key", c.name, a.status, a.raw)
			}
			if !ok {
				t.Errorf("%s, %s %s: %d %s, want one of %v", c.name, call.method, call.path, a.status, a.raw, c.want)
			}
		}
	}
	if n := query(t, u, `SELECT count(*) FROM idsauth_registrations WHERE id = 'planted'`)[0][0].(int64); n != 0 {
		t.Errorf("a refused token planted a client")
	}
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// TestRedTeamAdminBodies: bodies an administrator (or whoever holds an
// administrator's token) might craft to store what the API would not
// show, or what the check did not check, or to pass a bad body off as a
// database outage (503, and a Warn line that pages someone).
func TestRedTeamAdminBodies(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	h1, h2 := secret.HashSHA256("s1").String(), secret.HashSHA256("s2").String()
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"the ID named twice, by case", `{"clientId": "b1", "ClientId": "b1x", "scopes": ["pd_AdminWebApi"]}`, 400},
		{"a member named twice, by an escape", `{"clientId": "b2", "scopes": ["pd_AdminWebApi"], "\u0073copes": ["reports.read"]}`, 400},
		{"a member named twice, by Unicode case folding (long s)", `{"clientId": "b3", "scopes": ["reports.read"], "ſcopes": ["pd_AdminWebApi"]}`, 400},
		{"a member named twice, by Unicode case folding (Kelvin sign)", `{"clientId": "b11", "scopes": ["pd_AdminWebApi"], "accessTokenLifetime": 60, "accessTo\u212AenLifetime": 86400}`, 400},
		{"secretHashes named twice, by Unicode case folding", `{"clientId": "b4", "scopes": ["pd_AdminWebApi"], "secretHashes": ["` + h1 + `"], "ſecretHashes": ["` + h2 + `"]}`, 400},
		{"an epoch", `{"clientId": "b5", "scopes": ["pd_AdminWebApi"], "epoch": 1}`, 400},
		{"an Epoch", `{"clientId": "b6", "scopes": ["pd_AdminWebApi"], "Epoch": 1}`, 400},
		{"idsauth_admin", `{"clientId": "b7", "scopes": ["idsauth_admin"]}`, 400},
		{"a body over 64 KiB", `{"clientId": "b8", "scopes": ["pd_AdminWebApi"], "claims": [` + strings.Repeat(`{"type": "x", "value": "y"},`, 4000) + `{"type": "x", "value": "y"}]}`, 400},
		{"a bcrypt hash", `{"clientId": "b9", "scopes": ["pd_AdminWebApi"], "secretHashes": ["bcrypt:$2a$10$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz01234"]}`, 400},
		{"a value that is not UTF-8", `{"clientId": "b12", "scopes": ["pd_AdminWebApi"], "claims": [{"type": "t", "value": "` + "\xff" + `"}]}`, 400},
		{"arrays 20,000 deep", `{"clientId": "b13", "scopes": ["pd_AdminWebApi"], "claims": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, 400},
		{"a plain secret as a hash", `{"clientId": "b10", "scopes": ["pd_AdminWebApi"], "secretHashes": ["hunter2-plain-secret"]}`, 400},
	} {
		a := r.admin(t, http.MethodPost, "/clients", c.body)
		if a.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, a.status, a.raw, c.want)
		}
		if strings.Contains(a.raw, "hunter2") {
			t.Errorf("%s: the answer echoes the secret: %s", c.name, a.raw)
		}
	}
	r.create(t, "b20", "")
	for _, c := range []struct{ name, body string }{
		{"secretHashes by Unicode case folding", `{"scopes": ["pd_AdminWebApi"], "ſecretHashes": ["` + h1 + `"]}`},
		{"SecretHashes", `{"scopes": ["pd_AdminWebApi"], "SecretHashes": ["` + h1 + `"]}`},
		{"a renaming by case", `{"clientId": "B20", "scopes": ["pd_AdminWebApi"]}`},
		{"scopes twice by Unicode case folding", `{"scopes": ["reports.read"], "ſcopes": ["pd_AdminWebApi"]}`},
	} {
		if a := r.admin(t, http.MethodPut, "/clients/b20", c.body); a.status != 400 {
			t.Errorf("PUT with %s: %d %s, want 400", c.name, a.status, a.raw)
		}
	}
	// An ID that is not UTF-8, in a path or the query, names nothing.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/clients/%FF", ""},
		{http.MethodPut, "/clients/%FF", `{"scopes": ["pd_AdminWebApi"]}`},
		{http.MethodDelete, "/clients/%FF", ""},
		{http.MethodDelete, "/clients?id=%FF", ""},
		{http.MethodPost, "/clients/%FF/disable", ""},
		{http.MethodPost, "/clients/%FF/rotate-secret", ""},
		{http.MethodGet, "/apiresources/%C0%AE", ""},
	} {
		if a := r.admin(t, c.method, c.path, c.body); a.status != 404 {
			t.Errorf("%s %s: %d %s, want 404", c.method, c.path, a.status, a.raw)
		}
	}
	if strings.Contains(r.logs.String(), "hunter2") {
		t.Errorf("the log holds the secret:\n%s", r.logs)
	}
	if strings.Contains(r.logs.String(), "the database does not answer") {
		t.Errorf("a bad body was taken for a database that does not answer:\n%s", r.logs)
	}
}

// TestRedTeamAdminTokenEnds: an administrator's token stops
// administering when the file replaces every secret of its client, when
// the file removes its client and puts it back (a new epoch for the
// file's client), and when it expires, JWT and reference alike.
func TestRedTeamAdminTokenEnds(t *testing.T) {
	_, u := newDatabase(t)
	var offset atomic.Int64 // of the issuer's clock
	var cfg *issuer.Config
	r := newReplicaWith(t, u, func(c *issuer.Config) {
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "operator-ref", SecretHashes: c.Clients[0].SecretHashes,
			Scopes: []string{pgregistry.AdminScope}, Audience: c.Clients[0].Audience, AccessTokenType: "reference"})
		cfg = c
	}, issuer.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.reg.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	tokens := func(pass string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, id := range []string{"operator", "operator-ref"} {
			a := r.token(t, id, pass, "scope", pgregistry.AdminScope)
			if out[id], _ = a.body["access_token"].(string); out[id] == "" {
				t.Fatalf("%s's token: %d %s", id, a.status, a.raw)
			}
		}
		return out
	}
	call := func(tok string) int {
		return do(t, http.MethodGet, r.issuerURL()+"/admin/clients", "Bearer "+tok, "", "").status
	}
	expect := func(when string, toks map[string]string, want int) {
		t.Helper()
		for id, tok := range toks {
			if st := call(tok); st != want {
				t.Errorf("%s, %s's token: %d, want %d", when, id, st, want)
			}
		}
	}
	reload := func(c *issuer.Config) {
		t.Helper()
		if err := r.iss.Reload(c); err != nil {
			t.Fatal(err)
		}
	}
	toks := tokens(operatorSecret)
	expect("issued", toks, 200)

	rotated := *cfg
	rotated.Clients = append([]issuer.ClientConfig(nil), cfg.Clients...)
	for i := range rotated.Clients {
		if strings.HasPrefix(rotated.Clients[i].ClientID, "operator") {
			rotated.Clients[i].SecretHashes = []string{secret.HashSHA256("a new operator secret").String()}
		}
	}
	reload(&rotated)
	expect("its every secret replaced in the file", toks, 401)
	toks = tokens("a new operator secret")
	expect("issued after the rotation", toks, 200)

	without := rotated
	without.Clients = rotated.Clients[1:2] // file-client alone
	reload(&without)
	reload(&rotated)
	expect("its client removed from the file and put back", toks, 401)
	toks = tokens("a new operator secret")
	expect("issued after it was put back", toks, 200)

	offset.Store(int64(time.Hour + time.Minute))
	expect("expired", toks, 401)
}

// TestRedTeamEveryRegisteredIDIsManaged: whatever ID the API takes, the
// API can disable it by its path: a client whose leaked secret must be
// stopped at once cannot wait for a removal. An ID of "/" alone was
// taken, and then no path reached it (the router takes the segment "/"
// for a trailing slash): 404 to disable, enable, rotate, show.
func TestRedTeamEveryRegisteredIDIsManaged(t *testing.T) {
	_, u := newDatabase(t)
	r := newReplica(t, u, nil)
	for _, id := range []string{"/", "//", "/.", "./", "..%2F", "%2e%2e", "a/../b", "...", "x.", "?", "#", "%", "\\", "~"} {
		body, _ := json.Marshal(map[string]any{"clientId": id, "scopes": []string{"pd_AdminWebApi"}})
		a := r.admin(t, http.MethodPost, "/clients", string(body))
		if a.status == 400 && a.body["field"] == "clientId" {
			continue // refused: nothing to manage
		}
		if a.status != 201 {
			t.Errorf("create %q: %d %s", id, a.status, a.raw)
			continue
		}
		for _, verb := range []string{"/disable", "/enable", "/rotate-secret", ""} {
			method := http.MethodPost
			if verb == "" {
				method = http.MethodGet
			}
			if a := r.admin(t, method, "/clients/"+url.PathEscape(id)+verb, ""); a.status != 200 {
				t.Errorf("%s %q%s, by its path: %d %s", method, id, verb, a.status, a.raw)
			}
		}
	}
}
