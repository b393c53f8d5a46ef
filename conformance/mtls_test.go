package conformance

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
)

// freePort is a loopback port nothing listens on, now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestServeMutualTLS: "idsauth serve -mtls-addr" serves the issuer on a
// second listener that asks for client certificates, which discovery
// names (mtls_endpoint_aliases), while the main one asks nobody. curl,
// presenting a certificate of the configured CA from PEM files, gets a
// token for a tls_client_auth client there, bound to it: its
// cnf["x5t#S256"] is the SHA-256 fingerprint openssl computes for the
// same file, and go-jose verifies the token with the published JWKS.
// "idsauth token -cert -key" finds the alias by discovery and does the
// same; the main listener, which asks for no certificate, refuses the
// client.
func TestServeMutualTLS(t *testing.T) {
	for _, tool := range []string{"curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed, and CI must run this test", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	d := newDeployment(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(d.dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := certtest.NewCA(t, "clients")
	server := ca.Server(t)
	svc := ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "svc", Organization: []string{"Example"}}})
	caFile := write("ca.pem", certtest.PEM(ca.Cert.Raw))
	serverFile, serverKey := write("server.pem", certtest.PEM(server.Leaf.Raw)), write("server-key.pem", certtest.KeyPEM(t, server))
	svcFile, svcKey := write("svc.pem", certtest.PEM(svc.Leaf.Raw)), write("svc-key.pem", certtest.KeyPEM(t, svc))
	main, alias := freePort(t), freePort(t)
	issuerURL, aliasURL := "https://127.0.0.1:"+main+"/ids", "https://127.0.0.1:"+alias+"/ids"
	cfg, _ := json.Marshal(map[string]any{
		"issuer": issuerURL, "keys": []map[string]string{{"file": "signing.pem"}},
		"mtls":    map[string]any{"clientCAs": []string{"ca.pem"}, "alias": aliasURL},
		"clients": []map[string]any{{"clientId": "svc", "tlsClientAuth": map[string]string{"subjectDn": "CN=svc,O=Example"}, "scopes": []string{"pd_AdminWebApi"}}},
	})
	write("idsauth.json", cfg)
	if out, err := exec.Command(binary, "check-config", filepath.Join(d.dir, "idsauth.json")).CombinedOutput(); err != nil || !strings.Contains(string(out), "tls_client_auth: a certificate of the CAs with subject CN=svc,O=Example") {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	r := start(t, nil, "-addr", "127.0.0.1:"+main, "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"),
		"-tls-cert", serverFile, "-tls-key", serverKey, "-mtls-addr", "127.0.0.1:"+alias)
	r.waitLog(t, "mutual TLS listener", alias)

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	resp, err := hc.Get(issuerURL + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Aliases map[string]string `json:"mtls_endpoint_aliases"`
		Bound   bool              `json:"tls_client_certificate_bound_access_tokens"`
		Methods []string          `json:"token_endpoint_auth_methods_supported"`
		JWKS    string            `json:"jwks_uri"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || doc.Aliases["token_endpoint"] != aliasURL+"/connect/token" || !doc.Bound || !strings.Contains(strings.Join(doc.Methods, " "), "tls_client_auth") {
		t.Fatalf("discovery: %+v %v", doc, err)
	}

	curl := func(url string) (int, map[string]any) {
		t.Helper()
		out, err := exec.Command("curl", "-sS", "--cacert", caFile, "--cert", svcFile, "--key", svcKey,
			"-d", "grant_type=client_credentials", "-d", "client_id=svc", "-d", "scope=pd_AdminWebApi", "-w", "\n%{http_code}", url).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %s: %v\n%s", url, err, out)
		}
		i := strings.LastIndexByte(string(out), '\n') // -w puts the status on the last line
		body, code := string(out[:max(i, 0)]), string(out[i+1:])
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		n, _ := strconv.Atoi(strings.TrimSpace(code))
		return n, m
	}
	code, answer := curl(doc.Aliases["token_endpoint"])
	tok, _ := answer["access_token"].(string)
	if code != 200 || tok == "" || answer["token_type"] != "Bearer" {
		t.Fatalf("curl at the alias: %d %v", code, answer)
	}
	if code, answer := curl(issuerURL + "/connect/token"); code != 401 || answer["error"] != "invalid_client" {
		t.Errorf("curl at the main listener, which asks for no certificate: %d %v", code, answer)
	}

	// openssl's fingerprint of the same file, as x5t#S256 writes it.
	out, err := exec.Command("openssl", "x509", "-in", svcFile, "-noout", "-fingerprint", "-sha256").Output()
	if err != nil {
		t.Fatal(err)
	}
	_, hexSum, _ := strings.Cut(strings.TrimSpace(string(out)), "=")
	sum, err := hex.DecodeString(strings.ReplaceAll(hexSum, ":", ""))
	if err != nil || len(sum) != 32 {
		t.Fatalf("openssl printed %q", out)
	}
	want := base64.RawURLEncoding.EncodeToString(sum)

	// go-jose, with the published keys.
	resp, err = hc.Get(doc.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	var jwks jose.JSONWebKeySet
	err = json.NewDecoder(resp.Body).Decode(&jwks)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := josejwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	keys := jwks.Key(parsed.Headers[0].KeyID)
	var std josejwt.Claims
	var rest struct {
		Cnf map[string]string `json:"cnf"`
	}
	if len(keys) != 1 {
		t.Fatalf("no JWK for kid %q", parsed.Headers[0].KeyID)
	}
	if err := parsed.Claims(keys[0].Key, &std, &rest); err != nil {
		t.Fatalf("go-jose refuses the token: %v", err)
	}
	if err := std.ValidateWithLeeway(josejwt.Expected{Issuer: issuerURL, AnyAudience: josejwt.Audience{issuerURL + "/resources"}, Time: time.Now()}, time.Minute); err != nil {
		t.Fatalf("go-jose's claim checks: %v", err)
	}
	if rest.Cnf["x5t#S256"] != want || len(rest.Cnf) != 1 {
		t.Fatalf("cnf %v, want x5t#S256 %s (openssl's fingerprint)", rest.Cnf, want)
	}

	// The command, by discovery.
	out, err = exec.Command(binary, "token", "-issuer", issuerURL, "-client-id", "svc", "-scope", "pd_AdminWebApi",
		"-cert", svcFile, "-key", svcKey, "-cacert", caFile, "-decode").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"x5t#S256": "`+want+`"`) {
		t.Fatalf("idsauth token -cert: %v\n%s", err, out)
	}
}

// TestServeDiscoveryListsWhatWorks: serve's discovery lists only the
// mutual TLS that its listeners let through, and serve warns at start,
// never refusing, of what may not work. An mtls.alias without -mtls-addr
// is warned of and still named (another process may serve it). With
// -client-ca, a self-signed client certificate is refused at the
// handshake (curl fails), so self_signed_tls_client_auth is not listed
// and the client that uses it is named in a warning; with a proxy's
// certificate header beside, it is listed again (the proxy's handshake
// is not serve's), though serve's own listener still refuses it.
func TestServeDiscoveryListsWhatWorks(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is not installed, and CI must run this test")
		}
		t.Skip("curl is not installed")
	}
	d := newDeployment(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(d.dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := certtest.NewCA(t, "clients")
	server := ca.Server(t)
	edge := certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "edge"}})
	caFile := write("ca.pem", certtest.PEM(ca.Cert.Raw))
	serverFile, serverKey := write("server.pem", certtest.PEM(server.Leaf.Raw)), write("server-key.pem", certtest.KeyPEM(t, server))
	edgeFile, edgeKey := write("edge.pem", certtest.PEM(edge.Leaf.Raw)), write("edge-key.pem", certtest.KeyPEM(t, edge))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}

	for _, c := range []struct {
		name        string
		mtlsAddr    bool
		clientCA    bool
		proxy       bool
		selfSigned  bool   // discovery lists self_signed_tls_client_auth
		warning     string // a line serve logs at start
		edgeRefused bool   // curl with edge's certificate fails at the alias's handshake
	}{
		{name: "an alias nothing here serves", selfSigned: true, warning: "but this process serves no -mtls-addr"},
		{name: "-client-ca on -mtls-addr", mtlsAddr: true, clientCA: true, warning: `"clients":["edge"]`, edgeRefused: true},
		{name: "-client-ca on -mtls-addr, and a proxy's header", mtlsAddr: true, clientCA: true, proxy: true, selfSigned: true, edgeRefused: true},
		{name: "-mtls-addr", mtlsAddr: true, selfSigned: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			main, alias := freePort(t), freePort(t)
			issuerURL, aliasURL := "https://127.0.0.1:"+main+"/ids", "https://127.0.0.1:"+alias+"/ids"
			mtls := map[string]any{"clientCAs": []string{"ca.pem"}, "alias": aliasURL}
			if c.proxy {
				mtls["certificateHeader"], mtls["trustedProxies"] = "X-SSL-CERT", []string{"10.0.0.5/32"}
			}
			cfg, _ := json.Marshal(map[string]any{
				"issuer": issuerURL, "keys": []map[string]string{{"file": "signing.pem"}}, "mtls": mtls,
				"clients": []map[string]any{
					{"clientId": "svc", "tlsClientAuth": map[string]string{"subjectDn": "CN=svc,O=Example"}, "scopes": []string{"pd_AdminWebApi"}},
					{"clientId": "edge", "certificateThumbprints": []string{clientcert.Thumbprint(edge.Leaf.Raw)}, "scopes": []string{"pd_AdminWebApi"}},
				},
			})
			file := write("idsauth.json", cfg)
			args := []string{"-addr", "127.0.0.1:" + main, "-ops-addr", "127.0.0.1:0", "-config", file, "-tls-cert", serverFile, "-tls-key", serverKey}
			if c.mtlsAddr {
				args = append(args, "-mtls-addr", "127.0.0.1:"+alias)
			}
			if c.clientCA {
				args = append(args, "-client-ca", caFile)
			}
			r := start(t, nil, args...)
			if c.mtlsAddr {
				r.waitLog(t, "mutual TLS listener", alias)
			}
			resp, err := hc.Get(issuerURL + "/.well-known/openid-configuration")
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Aliases map[string]string `json:"mtls_endpoint_aliases"`
				Methods []string          `json:"token_endpoint_auth_methods_supported"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			methods := strings.Join(doc.Methods, " ")
			if err != nil || doc.Aliases["token_endpoint"] != aliasURL+"/connect/token" || !strings.Contains(methods, " tls_client_auth") ||
				strings.Contains(methods, "self_signed_tls_client_auth") != c.selfSigned {
				t.Errorf("discovery: %+v %v; self_signed_tls_client_auth listed: want %v", doc, err, c.selfSigned)
			}
			if c.warning != "" {
				if l := r.waitLog(t, c.warning); !strings.Contains(l, `"level":"WARN"`) {
					t.Errorf("the warning: %s", l)
				}
			}
			if !c.mtlsAddr {
				return
			}
			out, err := exec.Command("curl", "-sS", "--cacert", caFile, "--cert", edgeFile, "--key", edgeKey,
				"-d", "grant_type=client_credentials", "-d", "client_id=edge", "-d", "scope=pd_AdminWebApi", "-o", "/dev/null", "-w", "%{http_code}", aliasURL+"/connect/token").CombinedOutput()
			if refused := err != nil; refused != c.edgeRefused || (!refused && string(out) != "200") {
				t.Errorf("curl with the self-signed certificate at the alias: %v %s; refused at the handshake: want %v", err, out, c.edgeRefused)
			}
		})
	}
}
