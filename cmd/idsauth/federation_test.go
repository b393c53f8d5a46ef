package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
)

// TestTokenWithAssertionFile: check-config prints each trusted issuer and
// the subjects its tokens authenticate; idsauth token -assertion-file
// sends the workload's token in the file, as it is, and with -spiffe as
// a JWT-SVID.
func TestTokenWithAssertionFile(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	foreign := jwktest.NewJWKS(t, jwktest.NewKey(t, "ES256"))
	key := jwktest.NewKey(t, "ES256")
	foreign.SetKeys(key)
	bundle := map[string]any{"keys": []any{map[string]any{"kty": "EC", "crv": "P-256", "x": key.PublicJWK().X, "y": key.PublicJWK().Y, "kid": key.KID, "use": "jwt-svid"}}}
	bb, _ := json.Marshal(bundle)
	writeFile(t, dir, "bundle.json", string(bb))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfgJSON, _ := json.Marshal(map[string]any{
		"issuer": srv.URL + "/ids", "ephemeralKey": true, "scopeWhenOmitted": "all",
		"trustedIssuers": []any{
			map[string]any{"issuer": foreign.Issuer(), "kind": "kubernetes", "maxTokenLifetimeSeconds": 3600},
			map[string]any{"kind": "spiffe", "trustDomain": "td.test", "bundleFile": "bundle.json"},
		},
		"clients": []any{
			map[string]any{"clientId": "pod", "scopes": []string{"pd_AdminWebApi"},
				"federatedCredentials": []any{map[string]any{"issuer": foreign.Issuer(), "subject": "system:serviceaccount:prod:reporter"}}},
			map[string]any{"clientId": "web", "scopes": []string{"pd_ConnectWebApi"}, "maxAssertionAgeSeconds": 600,
				"federatedCredentials": []any{map[string]any{"subject": "spiffe://td.test/web/*"}}},
		},
	})
	cfgFile := writeFile(t, dir, "idsauth.json", string(cfgJSON))
	cc := idsauth(t, bin, "", nil, "check-config", cfgFile)
	for _, want := range []string{
		"  " + foreign.Issuer() + " (kubernetes)\n", "    subject   system:serviceaccount:prod:reporter -> client pod\n",
		"  spiffe://td.test (spiffe)\n", "    keys      SPIFFE bundle file bundle.json\n", "    subject   spiffe://td.test/web/* -> client web\n",
		"    workload  spiffe://td.test/web/* of its trust domain\n", "    age       a workload's token is taken until 10m0s after its iat\n",
	} {
		if cc.code != 0 || !strings.Contains(cc.stdout, want) {
			t.Fatalf("check-config lacks %q: %+v", want, cc)
		}
	}
	mountIssuer(t, mux, cfgFile)
	now := time.Now()
	sa := jwktest.Sign(t, key, map[string]any{"typ": nil}, map[string]any{"iss": foreign.Issuer(), "sub": "system:serviceaccount:prod:reporter",
		"aud": []string{srv.URL + "/ids/connect/token"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(sa+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"token", "-issuer", srv.URL + "/ids"}
	if r := idsauth(t, bin, "", nil, append(base, "-client-id", "pod", "-assertion-file", file, "-decode")...); r.code != 0 || !strings.Contains(r.stdout, `"client_id": "pod"`) {
		t.Fatalf("token -assertion-file: %+v", r)
	}
	svid := jwktest.Sign(t, key, map[string]any{"typ": "JWT"}, map[string]any{"sub": "spiffe://td.test/web/frontend",
		"aud": []string{srv.URL + "/ids/connect/token"}, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	if err := os.WriteFile(file, []byte(svid), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-client-id", "web", "-assertion-file", file, "-spiffe")...); r.code != 0 || strings.Count(r.stdout, ".") != 2 {
		t.Fatalf("token -assertion-file -spiffe: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-client-id", "pod", "-assertion-file", file)...); r.code != 1 || !strings.Contains(r.stderr, "invalid_client") {
		t.Fatalf("another client's SVID: %+v", r)
	}
	if r := idsauth(t, bin, "", nil, append(base, "-client-id", "pod", "-assertion-file", file, "-secret-env", "X")...); r.code != 2 {
		t.Fatalf("-assertion-file with a secret: %+v", r)
	}
}
