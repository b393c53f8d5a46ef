package issuer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
)

// FuzzTokenRequest sends arbitrary form bodies and Authorization values to
// the token endpoint. It must answer JSON with no 5xx, never echo the
// secret, and issue a token only for the right credentials. The seeds
// include private_key_jwt requests with real assertions, broken ways.
func FuzzTokenRequest(f *testing.F) {
	cfg := testConfig("http://127.0.0.1/ids")
	withMachineClients(cfg)
	cfg.Limits = limit.Config{FailedAttemptsPerSubject: 1 << 30, FailedAttemptsPerAddress: 1 << 30}
	iss, err := issuer.New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(form("grant_type", "client_credentials", "client_id", "admin", "client_secret", adminSecret, "scope", scope.AdminWebAPI), "")
	f.Add(form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), basic("admin", adminSecret))
	f.Add("grant_type=client_credentials&grant_type=x", "Basic !!!")
	f.Add("%zz", "Basic "+b64("a:b:c"))
	f.Add("client_id=admin&client_secret="+adminSecret, "Bearer x")
	f.Add(strings.Repeat("a=b&", 5000), "")
	const tu = "http://127.0.0.1/ids/connect/token"
	valid := assertionFor(f, signerKey(), "signer", tu, nil, nil)
	parts := strings.Split(valid, ".")
	f.Add(assertionForm(valid, "scope", scope.AdminWebAPI, "resource", ordersAPI), "")
	f.Add(assertionForm(valid, "scope", scope.AdminWebAPI), basic("admin", adminSecret))
	f.Add(assertionForm(assertionFor(f, pssKey(), "pss", tu, map[string]any{"aud": []any{tu, 7}, "exp": 1e300}, nil)), "")
	f.Add(assertionForm(assertionFor(f, edKey(), "ed", tu, map[string]any{"exp": "soon", "jti": 1}, map[string]any{"crit": []string{"x"}})), "")
	f.Add(assertionForm(parts[0]+"."+parts[1]+"."), "")
	f.Add(assertionForm(jwktest.Segment(map[string]any{"alg": "none"})+"."+parts[1]+"."), "")
	f.Add(assertionForm(parts[0]+".e30."+parts[2], "client_id", "signer"), "")
	f.Add("grant_type=client_credentials&client_assertion_type=x&client_assertion=a.b.c&resource=%zz&resource=", "")
	f.Fuzz(func(t *testing.T, body, authz string) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ids/connect/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if authz != "" {
			req.Header["Authorization"] = []string{authz}
		}
		rec := httptest.NewRecorder()
		iss.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d", rec.Code)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", rec.Body)
		}
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatal("no Cache-Control")
		}
		if strings.Contains(rec.Body.String(), adminSecret) || strings.Contains(rec.Body.String(), connectSecret) {
			t.Fatal("the answer echoes a secret")
		}
		if rec.Code == 200 && !strings.Contains(body+authz, "client_credentials") {
			t.Fatalf("a token without grant_type client_credentials")
		}
	})
}

// FuzzParseConfig feeds arbitrary files to the loader and the issuer: no
// panic, Validate and New agree, and every refusal is a *ConfigError that
// never echoes a plain-text secret.
func FuzzParseConfig(f *testing.F) {
	f.Add(`{"issuer":"http://h/ids","ephemeralKey":true,"clients":[]}`)
	f.Add(`{"issuer":"http://h/ids","ephemeralKey":true,"clients":[{"clientId":"a","secretHashes":["sha256:K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols="],"scopes":["pd_AdminWebApi"]}]}`)
	f.Add(`{"issuer":"http://h/ids","ephemeralKey":true,"clients":[{"clientId":"a","secretHashes":["hunter2"],"scopes":["pd_AdminWebApi"]}]}`)
	f.Add(`{"issuer":"http://h/ids","keys":[{"file":"/etc/passwd"}],"clients":[]}`)
	f.Add(`{"issuer":"http://h/ids","keys":[],"clients":[]}`)
	f.Add(`[]`)
	f.Add(`{"issuer":"http://h/ids","ephemeralKey":true,"scopeWhenOmitted":"all","clientAssertions":{"maxLifetimeSeconds":60},"clients":[{"clientId":"k","publicKeys":[{"jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}},{"file":"k.pem","alg":"PS256"}],"scopes":["pd_AdminWebApi"],"scopeWhenOmitted":"refuse"}]}`)
	f.Add(`{"issuer":"http://h/ids","keys":[{"file":"a.pem","retireAt":"2030-01-01T02:00:00Z"},{"file":"b.pem","publishAt":"2030-01-01T00:00:00+01:00","signAt":"2030-01-01T00:10:00Z"}],"clients":[],"validatorRefreshSeconds":60}`)
	dir := f.TempDir()
	for _, name := range []string{"a.pem", "b.pem"} { // keys for a schedule
		b, err := keys.EncodePEM(generate("ES256").Private)
		if err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data string) {
		refused := func(err error) bool {
			if err == nil {
				return false
			}
			var ce *issuer.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ConfigError: %v", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatal("the error echoes a plain-text secret")
			}
			return true
		}
		cfg, err := issuer.ParseConfig([]byte(data), dir, nil)
		if refused(err) {
			return
		}
		verr := cfg.Validate()
		_, nerr := issuer.New(cfg)
		refused(verr)
		refused(nerr)
		if verr != nil && (nerr == nil || nerr.Error() != verr.Error()) {
			t.Fatalf("Validate refused (%v), New said %v", verr, nerr)
		}
	})
}
