package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/secret"
)

// build compiles the command into a temporary folder.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "idsauth")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

type result struct {
	code           int
	stdout, stderr string
}

// idsauth runs the binary with stdin and extra environment variables.
func idsauth(t *testing.T, bin, stdin string, envs []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), envs...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func field(t *testing.T, out, name string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %q in %q", name, out)
	return ""
}

// TestRoundTrip: gen-key and hash-secret make what a configuration needs;
// check-config reads it; an issuer serves it; token fetches a token with
// the secret from a file, the environment and standard input; decode
// verifies it, and says which check fails for a tampered one.
func TestRoundTrip(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing.pem")
	gk := idsauth(t, bin, "", nil, "gen-key", "-alg", "ES256", "-out", keyFile)
	if gk.code != 0 {
		t.Fatalf("gen-key: %+v", gk)
	}
	kid := field(t, gk.stdout, "kid")
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	hs := idsauth(t, bin, "", nil, "hash-secret")
	if hs.code != 0 {
		t.Fatalf("hash-secret: %+v", hs)
	}
	plain, hash := field(t, hs.stdout, "secret"), field(t, hs.stdout, "hash")
	if !secret.MustParse(hash).Verify(plain) {
		t.Fatal("the printed hash does not match the printed secret")
	}

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := map[string]any{
		"issuer":  srv.URL + "/ids",
		"keys":    []map[string]string{{"file": "signing.pem"}},
		"clients": []map[string]any{{"clientId": "reporting", "secretHashes": []string{hash}, "scopes": []string{"pd_AdminWebApi"}}},
	}
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "idsauth.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cc := idsauth(t, bin, "", nil, "check-config", cfgFile)
	if cc.code != 0 || !strings.Contains(cc.stdout, "signs     "+kid) || !strings.Contains(cc.stdout, "reporting") || !strings.Contains(cc.stdout, "pd_AdminWebApi") {
		t.Fatalf("check-config: %+v", cc)
	}
	mountIssuer(t, mux, cfgFile)

	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(plain+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"token", "-issuer", srv.URL + "/ids", "-client-id", "reporting", "-scope", "pd_AdminWebApi"}
	var tokens []string
	for name, how := range map[string]struct {
		stdin string
		env   []string
		args  []string
	}{
		"file":  {args: []string{"-secret-file", secretFile}},
		"env":   {env: []string{"IDSAUTH_CLIENT_SECRET=" + plain}},
		"named": {env: []string{"MY_SECRET=" + plain}, args: []string{"-secret-env", "MY_SECRET"}},
		"stdin": {stdin: plain + "\n"},
	} {
		r := idsauth(t, bin, how.stdin, how.env, append(base, how.args...)...)
		if r.code != 0 || strings.Count(r.stdout, ".") != 2 {
			t.Fatalf("token with the secret from %s: %+v", name, r)
		}
		if strings.Contains(r.stdout+r.stderr, plain) {
			t.Fatalf("token printed the secret")
		}
		tokens = append(tokens, strings.TrimSpace(r.stdout))
	}
	tok := tokens[0]

	d := idsauth(t, bin, tok+"\n", nil, "decode", "-issuer", srv.URL+"/ids", "-audience", srv.URL+"/ids/resources")
	if d.code != 0 || !strings.Contains(d.stdout, `"kid": "`+kid+`"`) || !strings.Contains(d.stdout, `"client_id": "reporting"`) || !strings.Contains(d.stdout, "valid: issued to reporting for pd_AdminWebApi") {
		t.Fatalf("decode with verification: %+v", d)
	}
	parts := strings.Split(tok, ".")
	tampered := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	if d := idsauth(t, bin, "", nil, "decode", "-issuer", srv.URL+"/ids", tampered); d.code != 1 || !strings.Contains(d.stderr, "invalid: signature invalid") {
		t.Fatalf("decode of a tampered token: %+v", d)
	}
	if d := idsauth(t, bin, "", nil, "decode", "-issuer", srv.URL+"/ids", "-audience", "https://payments.example/api", tok); d.code != 1 || !strings.Contains(d.stderr, "invalid: token audience not accepted") {
		t.Fatalf("decode with another audience: %+v", d)
	}
	wrong := idsauth(t, bin, "", []string{"IDSAUTH_CLIENT_SECRET=wrong"}, base...)
	if wrong.code != 1 || !strings.Contains(wrong.stderr, "invalid_client") || strings.Contains(wrong.stderr, "wrong\n") {
		t.Fatalf("token with a wrong secret: %+v", wrong)
	}
}

// TestTokenWithKey: gen-key makes a client's key too; its public half in
// the configuration, token -key authenticates with private_key_jwt (and a
// resource narrows the audience); another key is refused.
func TestTokenWithKey(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	keyFile, otherFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "other.pem")
	for _, f := range []string{keyFile, otherFile} {
		if gk := idsauth(t, bin, "", nil, "gen-key", "-alg", "EdDSA", "-out", f); gk.code != 0 {
			t.Fatalf("gen-key: %+v", gk)
		}
	}
	data, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := keys.ParsePEM(data)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := keys.PublicJWKOf(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfgJSON, _ := json.Marshal(map[string]any{
		"issuer": srv.URL + "/ids", "ephemeralKey": true,
		"clients": []map[string]any{{"clientId": "keyed", "publicKeys": []any{map[string]any{"jwk": jwk}}, "scopes": []string{"pd_AdminWebApi"},
			"audience": []string{srv.URL + "/ids/resources", "https://api.example/a"}, "scopeWhenOmitted": "all"}},
	})
	cfgFile := filepath.Join(dir, "idsauth.json")
	if err := os.WriteFile(cfgFile, cfgJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	if cc := idsauth(t, bin, "", nil, "check-config", cfgFile); cc.code != 0 || !strings.Contains(cc.stdout, "1 public key(s), private_key_jwt") {
		t.Fatalf("check-config: %+v", cc)
	}
	mountIssuer(t, mux, cfgFile)
	base := []string{"token", "-issuer", srv.URL + "/ids", "-client-id", "keyed"}
	// No secret anywhere: standard input is empty, and would be refused.
	r := idsauth(t, bin, "", nil, append(base, "-key", keyFile, "-resource", "https://api.example/a", "-decode")...)
	if r.code != 0 || !strings.Contains(r.stdout, `"aud": [`) || !strings.Contains(r.stdout, `"https://api.example/a"`) || strings.Contains(r.stdout, "/ids/resources") || !strings.Contains(r.stdout, `"scope": "pd_AdminWebApi"`) {
		t.Fatalf("token -key: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-key", keyFile, "-kid", "my-key")...); r.code != 0 || strings.Count(r.stdout, ".") != 2 {
		t.Fatalf("token -key -kid: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-key", otherFile)...); r.code != 1 || !strings.Contains(r.stderr, "invalid_client") {
		t.Fatalf("token with another key: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-key", keyFile, "-alg", "ES256")...); r.code != 1 || !strings.Contains(r.stderr, "does not fit") {
		t.Fatalf("token -key with an alg that does not fit: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-key", keyFile, "-secret-env", "X")...); r.code != 2 {
		t.Fatalf("token -key with a secret: %+v", r)
	}
}

// TestCheckConfigPrintsTheSchedule: check-config prints when each key is
// published and signs, and what it does at the -at instant; a schedule
// that signs too early is refused with the field named.
func TestCheckConfigPrintsTheSchedule(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	var kids []string
	for _, name := range []string{"old.pem", "new.pem"} {
		gk := idsauth(t, bin, "", nil, "gen-key", "-alg", "ES256", "-out", filepath.Join(dir, name))
		if gk.code != 0 {
			t.Fatalf("gen-key: %+v", gk)
		}
		kids = append(kids, field(t, gk.stdout, "kid"))
	}
	write := func(signAt string) string {
		return writeFile(t, dir, "sched.json", `{"issuer":"http://h/ids","clients":[],"keys":[
			{"file":"old.pem","retireAt":"2030-01-01T02:00:00Z"},
			{"file":"new.pem","publishAt":"2030-01-01T00:00:00+01:00","signAt":"`+signAt+`"}]}`)
	}
	cfg := write("2030-01-01T01:00:00Z")
	schedule := func(old, new string) string {
		return "  " + kids[0] + " (ES256): " + old + `
    published  from the start             until 2030-01-01T02:00:00Z
    signs      from the start             until 2030-01-01T01:00:00Z
  ` + kids[1] + " (ES256): " + new + `
    published  from 2029-12-31T23:00:00Z  until never retired
    signs      from 2030-01-01T01:00:00Z  until no end
`
	}
	for _, c := range []struct {
		at, signs, schedule string
	}{
		{"2029-12-31T22:00:00Z", kids[0], schedule("signs now", "not published yet")},
		{"2029-12-31T23:00:00Z", kids[0], schedule("signs now", "published now")},
		{"2030-01-01T01:00:00Z", kids[1], schedule("published now", "signs now")},
		{"2030-01-01T03:00:00+01:00", kids[1], schedule("retired", "signs now")},
	} {
		r := idsauth(t, bin, "", nil, "check-config", "-at", c.at, cfg)
		want := "key schedule (UTC; now "
		if r.code != 0 || !strings.Contains(r.stdout, "signs     "+c.signs+"\n") || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, c.schedule) {
			t.Errorf("check-config -at %s: %+v\nwant\n%s", c.at, r, c.schedule)
		}
	}
	cfg = write("2029-12-31T23:05:00Z")
	if r := idsauth(t, bin, "", nil, "check-config", cfg); r.code != 1 || !strings.Contains(r.stderr, "keys[1].signAt: the key signs from 2029-12-31T23:05:00Z, 5m0s after its publishAt") {
		t.Fatalf("check-config of a key that signs too early: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, "check-config", "-at", "tomorrow", cfg); r.code != 2 || !strings.Contains(r.stderr, "RFC 3339") {
		t.Fatalf("check-config -at tomorrow: %+v", r)
	}
}

func TestUsageAndErrors(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	cases := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string // in stderr, or in stdout when code is 0
	}{
		{"no command", "", nil, 2, "Usage: idsauth COMMAND"},
		{"help", "", []string{"-h"}, 0, "Usage: idsauth COMMAND"},
		{"unknown command", "", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"subcommand help", "", []string{"gen-key", "-h"}, 0, "Usage: idsauth gen-key"},
		{"unknown flag", "", []string{"hash-secret", "-nope"}, 2, "flag provided but not defined"},
		{"a secret as an argument", "", []string{"hash-secret", "mysecret"}, 2, "shell history"},
		{"bcrypt cost too low", "", []string{"hash-secret", "-bcrypt", "3"}, 2, "from 4 to 16"},
		{"bcrypt cost too high", "", []string{"hash-secret", "-bcrypt", "17"}, 2, "from 4 to 16"},
		{"a short secret on a fast hash", "hunter2\n", []string{"hash-secret", "-stdin"}, 0, "hash:   sha256:"},
		{"an empty secret", "\n", []string{"hash-secret", "-stdin"}, 1, "no secret given"},
		{"gen-key without -out", "", []string{"gen-key"}, 2, "-out FILE is required"},
		{"gen-key with an unknown alg", "", []string{"gen-key", "-alg", "HS256", "-out", filepath.Join(dir, "k")}, 2, "want ES256, RS256 or EdDSA"},
		{"check-config of a bad file", "", []string{"check-config", writeFile(t, dir, "bad.json", `{"issuer":"http://h/ids","ephemeralKey":true,"clients":[{"clientId":"a","secretHashes":["hunter2"],"scopes":["pd_AdminWebApi"]}]}`)}, 1, `clients[0] ("a").secretHashes[0]`},
		{"check-config of no file", "", []string{"check-config"}, 2, "exactly one"},
		{"check-config of a file with SCIM tenants", "", []string{"check-config", writeFile(t, dir, "scim.json", `{"issuer":"http://h/ids","ephemeralKey":true,"clients":[],"scimTenants":[{"tenant":"acme","tokenHashes":["`+secret.HashSHA256("t").String()+`"]}]}`)}, 0, "acme                 1 token hash(es)"},
		{"check-config of a bad SCIM tenant", "", []string{"check-config", writeFile(t, dir, "badscim.json", `{"issuer":"http://h/ids","ephemeralKey":true,"clients":[],"scimTenants":[{"tenant":"acme","tokenHashes":["hunter2"]}]}`)}, 1, "SCIM tenants: [0].tokenHashes[0]"},
		{"check-config of an unknown section", "", []string{"check-config", writeFile(t, dir, "extra.json", `{"issuer":"http://h/ids","ephemeralKey":true,"clients":[],"colour":"red"}`)}, 1, `unknown field "colour"`},
		{"token without flags", "", []string{"token"}, 2, "required"},
		{"token -cert with -kid", "", []string{"token", "-issuer", "http://h/ids", "-client-id", "c", "-cert", "c.pem", "-key", "k.pem", "-kid", "x"}, 2, "-kid and -alg go with -key, without -cert"},
		{"token -cert of no file", "", []string{"token", "-issuer", "http://h/ids", "-client-id", "c", "-cert", filepath.Join(dir, "none.pem")}, 1, "-cert"},
		{"serve -client-auth of no mode", "", []string{"serve", "-client-auth", "sometimes", "x.json"}, 2, "want none, request or require"},
		{"serve -mtls-addr without TLS", "", []string{"serve", "-mtls-addr", "127.0.0.1:0", "x.json"}, 2, "need TLS"},
		{"serve -client-ca without TLS", "", []string{"serve", "-client-ca", "ca.pem", "x.json"}, 2, "need TLS"},
		{"decode of garbage", "", []string{"decode", "not-a-token"}, 1, "not a JWT"},
		{"decode -audience without -issuer", "", []string{"decode", "-audience", "x", "a.b.c"}, 2, "-audience needs -issuer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := idsauth(t, bin, c.stdin, nil, c.args...)
			out := r.stderr
			if c.code == 0 && c.want != "" && !strings.Contains(r.stderr, c.want) {
				out = r.stdout
			}
			if r.code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q", r.code, c.code, r.stdout, r.stderr, c.want)
			}
			if strings.Contains(r.stdout+r.stderr, "hunter2") {
				t.Fatal("the secret was echoed")
			}
		})
	}
	if r := idsauth(t, bin, "hunter2\n", nil, "hash-secret", "-stdin"); !strings.Contains(r.stderr, "warning: this secret is 7 characters") {
		t.Fatalf("no warning for a short secret: %+v", r)
	}
	existing := writeFile(t, dir, "exists.pem", "keep me")
	if r := idsauth(t, bin, "", nil, "gen-key", "-out", existing); r.code != 1 || !strings.Contains(r.stderr, "never overwritten") {
		t.Fatalf("gen-key over a file: %+v", r)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Fatal("gen-key overwrote a file")
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// mountIssuer serves the issuer of the configuration file cfgFile on mux,
// loaded as the issuer loads it.
func mountIssuer(t *testing.T, mux *http.ServeMux, cfgFile string) {
	t.Helper()
	loaded, err := issuer.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := issuer.New(loaded)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
}
