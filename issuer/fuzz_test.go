package issuer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// FuzzTokenRequest sends arbitrary form bodies and Authorization values to
// the token endpoint. It must answer JSON with no 5xx, never echo the
// secret, and issue a token only for the right credentials.
func FuzzTokenRequest(f *testing.F) {
	cfg := testConfig("http://127.0.0.1/ids")
	cfg.Limits = issuer.Limits{FailedAttemptsPerClient: 1 << 30, FailedAttemptsPerAddress: 1 << 30}
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
	dir := f.TempDir()
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
		cfg, err := issuer.ParseConfig([]byte(data), dir)
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
