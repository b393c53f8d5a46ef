package conformance

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/proctest"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// SPIRE v1.13.3 as the SPIFFE issuer: servers and agents started by the
// test on loopback and unix sockets, JWT-SVIDs fetched from an agent's
// Workload API (spire-agent api fetch jwt), and a server's bundle
// endpoint, a bundle file of spire-server bundle show and its OIDC
// discovery provider as key sources. The binaries are built by .ci/spire
// into a cache folder, which IDSAUTH_SPIRE_BIN names; without it the test
// is skipped (CI's SPIRE stage sets it, and checks that it ran).

// spireDomain is one SPIRE trust domain: a server, an agent, and the
// workload entries of the test's own process (unix:uid).
type spireDomain struct {
	td, bin, dir  string
	serverSock    string
	agentSock     string
	bundleURL     string // its bundle endpoint, https_web, with the test CA's certificate
	server, agent *exec.Cmd
	log           *testlog.Buffer
}

// spireBin returns the folder of the SPIRE binaries, or skips.
func spireBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("IDSAUTH_SPIRE_BIN")
	if bin == "" {
		t.Skip("IDSAUTH_SPIRE_BIN is not set: .ci/spire builds SPIRE and prints the folder; CI's SPIRE stage runs this test")
	}
	return bin
}

// startSPIRE starts a server of trust domain td, with a bundle endpoint
// served with cert, jwtIssuer as its jwt_issuer (empty: none), and an
// agent joined to it by a join token.
func startSPIRE(t *testing.T, bin, td string, ca *certtest.CA, jwtIssuer string) *spireDomain {
	t.Helper()
	dir, err := os.MkdirTemp("", "spire-") // unix socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &spireDomain{td: td, bin: bin, dir: dir, serverSock: filepath.Join(dir, "s.sock"), agentSock: filepath.Join(dir, "a.sock"), log: &testlog.Buffer{}}
	cert := ca.Server(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	certFile, keyFile := write("bundle.crt", certtest.PEM(cert.Certificate[0])), write("bundle.key", certtest.KeyPEM(t, cert))
	port, bport := proctest.FreePort(t), proctest.FreePort(t)
	d.bundleURL = "https://127.0.0.1:" + bport
	issuerLine := ""
	if jwtIssuer != "" {
		issuerLine = fmt.Sprintf("jwt_issuer = %q", jwtIssuer)
	}
	server := write("server.conf", []byte(fmt.Sprintf(`
server {
  bind_address = "127.0.0.1"
  bind_port = "%s"
  socket_path = %q
  trust_domain = %q
  data_dir = %q
  log_level = "WARN"
  default_jwt_svid_ttl = "5m"
  %s
  federation {
    bundle_endpoint {
      address = "127.0.0.1"
      port = %s
      profile "https_web" {
        serving_cert_file {
          cert_file_path = %q
          key_file_path = %q
          file_sync_interval = "1h" # SPIRE v1.13.3 refuses the file without it: time: invalid duration ""
        }
      }
    }
  }
}
plugins {
  DataStore "sql" {
    plugin_data {
      database_type = "sqlite3"
      connection_string = %q
    }
  }
  KeyManager "memory" { plugin_data {} }
  NodeAttestor "join_token" { plugin_data {} }
}
`, port, d.serverSock, td, filepath.Join(dir, "server"), issuerLine, bport, certFile, keyFile, filepath.Join(dir, "datastore.sqlite3"))))
	d.server = d.run(t, "spire-server", "run", "-config", server)
	d.waitFor(t, "the server's API", func() bool { return d.cli(t, "spire-server", "healthcheck", "-socketPath", d.serverSock) == nil })
	out, err := d.output("spire-server", "token", "generate", "-socketPath", d.serverSock, "-spiffeID", "spiffe://"+td+"/agent")
	if err != nil {
		t.Fatalf("token generate: %v\n%s", err, out)
	}
	token := regexp.MustCompile(`Token: (\S+)`).FindStringSubmatch(out)
	if token == nil {
		t.Fatalf("no join token in %q", out)
	}
	agent := write("agent.conf", []byte(fmt.Sprintf(`
agent {
  data_dir = %q
  log_level = "WARN"
  server_address = "127.0.0.1"
  server_port = "%s"
  socket_path = %q
  trust_domain = %q
  insecure_bootstrap = true
  join_token = %q
}
plugins {
  NodeAttestor "join_token" { plugin_data {} }
  KeyManager "memory" { plugin_data {} }
  WorkloadAttestor "unix" { plugin_data {} }
}
`, filepath.Join(dir, "agent"), port, d.agentSock, td, token[1])))
	d.agent = d.run(t, "spire-agent", "run", "-config", agent)
	d.waitFor(t, "the agent's Workload API", func() bool { return d.cli(t, "spire-agent", "healthcheck", "-socketPath", d.agentSock) == nil })
	return d
}

// run starts a SPIRE binary, killed by its PID when the test ends.
func (d *spireDomain) run(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(d.bin, name), args...)
	cmd.Stdout, cmd.Stderr = d.log, d.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s (%s) wrote:\n%s", name, d.td, d.log)
		}
	})
	return cmd
}

func (d *spireDomain) output(name string, args ...string) (string, error) {
	out, err := exec.Command(filepath.Join(d.bin, name), args...).CombinedOutput()
	return string(out), err
}

func (d *spireDomain) cli(t *testing.T, name string, args ...string) error {
	_, err := d.output(name, args...)
	return err
}

func (d *spireDomain) waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s of %s: not ready within a minute:\n%s", what, d.td, d.log)
		}
	}
}

// entry registers the test's own process as the workload of id, with
// extra flags of entry create.
func (d *spireDomain) entry(t *testing.T, id string, extra ...string) {
	t.Helper()
	args := append([]string{"entry", "create", "-socketPath", d.serverSock, "-parentID", "spiffe://" + d.td + "/agent",
		"-spiffeID", id, "-selector", fmt.Sprintf("unix:uid:%d", os.Getuid())}, extra...)
	if out, err := d.output("spire-server", args...); err != nil {
		t.Fatalf("entry create %s: %v\n%s", id, err, out)
	}
}

var jwtPattern = regexp.MustCompile(`[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// svid fetches a JWT-SVID of id for audience from the agent's Workload
// API, waiting for the agent to have the entry.
func (d *spireDomain) svid(t *testing.T, id, audience string) string {
	t.Helper()
	var tok string
	d.waitFor(t, "a JWT-SVID of "+id, func() bool {
		out, err := d.output("spire-agent", "api", "fetch", "jwt", "-socketPath", d.agentSock, "-audience", audience, "-spiffeID", id)
		if err != nil {
			return false
		}
		_, after, ok := strings.Cut(out, "token("+id+"):")
		tok = jwtPattern.FindString(after)
		return ok && tok != ""
	})
	return tok
}

// TestSPIRE: "idsauth serve" with a trustedIssuers entry for a real SPIRE
// server (its bundle endpoint) issues a token to the client whose
// federatedCredentials name the workload's SPIFFE ID, given a JWT-SVID
// from the agent's Workload API as client_assertion; and refuses the
// same SVID for another client, an expired one, and one of another trust
// domain (which it trusts for clients of its own, by a bundle file).
// SPIRE's OIDC discovery provider serves the keys of the same JWT-SVIDs
// to an issuer that finds them by discovery.
func TestSPIRE(t *testing.T) {
	bin := spireBin(t)
	ca := certtest.NewCA(t, "spire-web")
	oidcPort := proctest.FreePort(t)
	oidcURL := "https://localhost:" + oidcPort
	a := startSPIRE(t, bin, "example.org", ca, oidcURL) // its JWT-SVIDs carry iss
	b := startSPIRE(t, bin, "other.org", ca, "")        // its carry none
	web, short := "spiffe://example.org/ns/prod/web", "spiffe://example.org/ns/prod/short"
	a.entry(t, web)
	a.entry(t, short, "-jwtSVIDTTL", "2")
	b.entry(t, "spiffe://other.org/ns/prod/web")

	dep := newDeployment(t)
	caFile := filepath.Join(dep.dir, "spire-web-ca.pem")
	if err := os.WriteFile(caFile, certtest.PEM(ca.Cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	bundleB, err := b.output("spire-server", "bundle", "show", "-socketPath", b.serverSock, "-format", "spiffe")
	if err != nil {
		t.Fatalf("bundle show: %v\n%s", err, bundleB)
	}
	if err := os.WriteFile(filepath.Join(dep.dir, "other.org.json"), []byte(bundleB), 0o600); err != nil {
		t.Fatal(err)
	}
	const iss = "https://auth.example/ids"
	aud := iss + "/connect/token"
	if err := os.WriteFile(filepath.Join(dep.dir, "idsauth.json"), []byte(`{
  "issuer": "`+iss+`", "keys": [{"file": "signing.pem"}], "scopeWhenOmitted": "all",
  "trustedIssuers": [
    {"kind": "spiffe", "trustDomain": "example.org", "issuer": "`+oidcURL+`", "bundleEndpoint": "`+a.bundleURL+`", "caFile": "spire-web-ca.pem", "clockSkewSeconds": 1},
    {"kind": "spiffe", "trustDomain": "other.org", "bundleFile": "other.org.json"}
  ],
  "clients": [
    {"clientId": "web", "scopes": ["`+scope.AdminWebAPI+`"], "federatedCredentials": [{"subject": "`+web+`"}]},
    {"clientId": "short", "scopes": ["`+scope.AdminWebAPI+`"], "federatedCredentials": [{"subject": "`+short+`"}]},
    {"clientId": "other", "scopes": ["`+scope.AdminWebAPI+`"], "federatedCredentials": [{"subject": "spiffe://other.org/ns/prod/web"}]},
    {"clientId": "bystander", "scopes": ["`+scope.AdminWebAPI+`"], "federatedCredentials": [{"subject": "spiffe://example.org/ns/dev/*"}]}
  ]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(dep.dir, "idsauth.json"))
	ask := func(client, svid string) (int, string) {
		return postToken(t, r.base+"/ids/connect/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {client},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-spiffe"}, "client_assertion": {svid}})
	}
	svid := a.svid(t, web, aud)
	if st, body := ask("web", svid); st != 200 {
		t.Fatalf("the workload's JWT-SVID for its client: %d %s", st, body)
	}
	if st, body := ask("web", svid); st != 200 {
		t.Errorf("the same JWT-SVID again (reused by design): %d %s", st, body)
	}
	r.waitLog(t, "token issued for a workload's token", `"credential":"spiffe://example.org `+web+`"`)
	if st, _ := ask("bystander", svid); st != 401 {
		t.Errorf("the same JWT-SVID for another client: %d, want 401", st)
	}
	otherSVID := b.svid(t, "spiffe://other.org/ns/prod/web", aud)
	if st, body := ask("other", otherSVID); st != 200 {
		t.Errorf("other.org's JWT-SVID (no iss, keys from a bundle file) for its client: %d %s", st, body)
	}
	if st, _ := ask("web", otherSVID); st != 401 {
		t.Errorf("a JWT-SVID of another trust domain for web: %d, want 401", st)
	}
	expiring := a.svid(t, short, aud)
	if st, body := ask("short", expiring); st != 200 {
		t.Fatalf("a JWT-SVID of 2 s, fresh: %d %s", st, body)
	}
	time.Sleep(4 * time.Second) // its exp, and the issuer's skew of 1 s
	if st, _ := ask("short", expiring); st != 401 {
		t.Errorf("an expired JWT-SVID: %d, want 401", st)
	}

	// SPIRE's OIDC discovery provider as the key source, by discovery.
	cert := ca.Server(t)
	provider := filepath.Join(a.dir, "oidc.conf")
	if err := os.WriteFile(filepath.Join(a.dir, "oidc.crt"), certtest.PEM(cert.Certificate[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.dir, "oidc.key"), certtest.KeyPEM(t, cert), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(provider, []byte(fmt.Sprintf(`
log_level = "warn"
domains = ["localhost"]
jwt_issuer = %q
serving_cert_file {
  addr = "127.0.0.1:%s"
  cert_file_path = %q
  key_file_path = %q
  file_sync_interval = "1h"
}
server_api { address = "unix://%s" }
`, oidcURL, oidcPort, filepath.Join(a.dir, "oidc.crt"), filepath.Join(a.dir, "oidc.key"), a.serverSock)), 0o600); err != nil {
		t.Fatal(err)
	}
	a.run(t, "oidc-discovery-provider", "-config", provider)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	a.waitFor(t, "the OIDC discovery provider", func() bool {
		resp, err := (&http.Client{Transport: tr, Timeout: time.Second}).Get(oidcURL + "/.well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	srv := ts.URL
	cfg := &issuer.Config{Issuer: srv + "/ids", EphemeralKey: true, ScopeWhenOmitted: "all",
		TrustedIssuers: []issuer.TrustedIssuerConfig{{Kind: "spiffe", TrustDomain: "example.org", Issuer: oidcURL, CAFile: caFile}},
		Clients: []issuer.ClientConfig{{ClientID: "web", Scopes: []string{scope.AdminWebAPI},
			FederatedCredentials: []issuer.FederatedCredential{{Subject: "spiffe://example.org/ns/prod/*"}}}}}
	local, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", local)
	st, body := postToken(t, srv+"/ids/connect/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"web"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {a.svid(t, web, srv+"/ids/connect/token")}})
	if st != 200 {
		t.Errorf("keys by SPIRE's OIDC discovery provider: %d %s\n%s", st, body, a.log)
	}
}
