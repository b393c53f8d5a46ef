package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestRedTeamServeFailedReloadsChangeNothing (red team, issue 32 item 3):
// seven reloads of idsauth serve that fail, each for another reason and
// in another section (the certificate files, the tokenStore and
// limiterStore sections, the issuer's path, a key file, the SCIM tenants,
// what follows the object), each while the file also asks for a new
// signing key and a new client and the certificate files were renewed
// (but for the one where they are broken), change nothing: the served
// certificate, the published key, who gets a token. The reloads are
// counted failed, none ok. A good reload then applies all of it.
func TestRedTeamServeFailedReloadsChangeNothing(t *testing.T) {
	d := newDeployment(t, "reporting")
	if out, err := exec.Command(binary, "gen-key", "-alg", "ES256", "-out", filepath.Join(d.dir, "next.pem")).CombinedOutput(); err != nil {
		t.Fatalf("gen-key: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(d.dir, "idsauth.json")
	certFile, keyFile := filepath.Join(d.dir, "tls.crt"), filepath.Join(d.dir, "tls.key")
	pool := x509.NewCertPool()
	first := writeCert(t, certFile, keyFile, pool, 1)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-tls-cert", certFile, "-tls-key", keyFile, "-config", cfgPath)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	kids := func() string {
		t.Helper()
		resp, err := hc.Get(r.base + "/ids/.well-known/openid-configuration/jwks")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set struct{ Keys []struct{ Kid string } }
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &set) != nil {
			t.Fatalf("JWKS: %s", b)
		}
		var ks []string
		for _, k := range set.Keys {
			ks = append(ks, k.Kid)
		}
		return strings.Join(ks, ",")
	}
	kidsBefore := kids()
	const newcomerSecret = "newcomer-secret"
	// next is the file as it should become: the next signing key and a
	// new client beside reporting.
	next := func() map[string]any {
		client := func(id, pass string) map[string]any {
			return map[string]any{"clientId": id, "secretHashes": []string{secret.HashSHA256(pass).String()}, "scopes": []string{scope.AdminWebAPI}}
		}
		return map[string]any{
			"issuer":  "https://auth.example/ids",
			"keys":    []map[string]string{{"file": "next.pem"}},
			"clients": []any{client("reporting", d.secrets["reporting"]), client("newcomer", newcomerSecret)},
		}
	}
	write := func(cfg map[string]any, trailing string) {
		t.Helper()
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfgPath, append(b, trailing...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	failures := 0
	serial := int64(1)
	for _, c := range []struct {
		name     string
		spoil    func(map[string]any) // nil: the certificate files are broken instead
		trailing string
	}{
		{"the certificate files broken", nil, ""},
		{"a tokenStore section added", func(m map[string]any) {
			m["tokenStore"] = map[string]any{"redis": map[string]any{"address": "127.0.0.1:1"}, "allowNoPersistence": true}
		}, ""},
		{"a limiterStore section added", func(m map[string]any) {
			m["limiterStore"] = map[string]any{"redis": map[string]any{"address": "127.0.0.1:1"}}
		}, ""},
		{"the issuer's path moved", func(m map[string]any) { m["issuer"] = "https://auth.example/other" }, ""},
		{"a key file missing", func(m map[string]any) { m["keys"] = []map[string]string{{"file": "next.pem"}, {"file": "missing.pem"}} }, ""},
		{"a SCIM tenant without hashes", func(m map[string]any) { m["scimTenants"] = []map[string]any{{"tenant": "acme"}} }, ""},
		{"a stray object after the configuration", func(map[string]any) {}, "\n{\"limits\":{\"failedAttemptsPerAddress\":1}}\n"},
	} {
		cfg := next()
		if c.spoil == nil {
			if err := os.WriteFile(certFile, []byte("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		} else {
			serial++
			writeCert(t, certFile, keyFile, pool, serial)
			c.spoil(cfg)
		}
		write(cfg, c.trailing)
		r.signal(t, syscall.SIGHUP)
		failures++
		waitLines(t, r, `"msg":"reload failed`, failures)
		if got := servedSerial(t, r.base, pool); got.Cmp(first) != 0 {
			t.Errorf("%s: the served certificate is %v, want the first, %v", c.name, got, first)
		}
		if got := kids(); got != kidsBefore {
			t.Errorf("%s: the JWKS is %s, want %s", c.name, got, kidsBefore)
		}
		if _, err := token(context.Background(), r.base, hc, "newcomer", newcomerSecret); err == nil {
			t.Errorf("%s: the new client got a token", c.name)
		}
		if _, err := token(context.Background(), r.base, hc, "reporting", d.secrets["reporting"]); err != nil {
			t.Errorf("%s: reporting: %v", c.name, err)
		}
	}
	if n := strings.Count(strings.Join(r.log(), "\n"), `"msg":"reloaded"`); n != 0 {
		t.Errorf("%d reloads logged as done", n)
	}
	m := scrape(t, r.ops)
	if got := sample(m, "idsauth_reloads_total", map[string]string{"result": "failed"}); got != float64(failures) {
		t.Errorf("idsauth_reloads_total{failed} = %v, want %d", got, failures)
	}
	if got := sample(m, "idsauth_reloads_total", map[string]string{"result": "ok"}); got != 0 {
		t.Errorf("idsauth_reloads_total{ok} = %v, want 0", got)
	}

	serial++
	renewed := writeCert(t, certFile, keyFile, pool, serial)
	write(next(), "")
	r.signal(t, syscall.SIGHUP)
	r.waitLog(t, `"msg":"reloaded"`)
	if got := servedSerial(t, r.base, pool); got.Cmp(renewed) != 0 {
		t.Errorf("after the good reload the served certificate is %v, want %v", got, renewed)
	}
	if got := kids(); got == kidsBefore {
		t.Errorf("after the good reload the JWKS is still %s", got)
	}
	if _, err := token(context.Background(), r.base, hc, "newcomer", newcomerSecret); err != nil {
		t.Errorf("after the good reload, the new client: %v", err)
	}
}

// waitLines waits until n log lines of r hold want.
func waitLines(t *testing.T, r *running, want string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if strings.Count(strings.Join(r.log(), "\n"), want) >= n {
			return
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("fewer than %d log lines with %q:\n%s", n, want, strings.Join(r.log(), "\n"))
		}
	}
}
