package conformance

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// binary is the idsauth command, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "idsauth-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "idsauth")
	// Built in the command's own module, as "go install" builds it.
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Dir = "../cmd/idsauth"
	out, err := build.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the idsauth command: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deployment is a configuration folder: a signing key and clients with
// secrets, as an operator makes them.
type deployment struct {
	dir     string
	secrets map[string]string // client ID to secret
}

func newDeployment(t *testing.T, clients ...string) *deployment {
	t.Helper()
	d := &deployment{dir: t.TempDir(), secrets: map[string]string{}}
	if out, err := exec.Command(binary, "gen-key", "-alg", "ES256", "-out", filepath.Join(d.dir, "signing.pem")).CombinedOutput(); err != nil {
		t.Fatalf("gen-key: %v\n%s", err, out)
	}
	d.write(t, clients...)
	return d
}

// write writes idsauth.json with these clients, each allowed
// pd_AdminWebApi with a secret of its own.
func (d *deployment) write(t *testing.T, clients ...string) {
	t.Helper()
	type client struct {
		ClientID     string   `json:"clientId"`
		SecretHashes []string `json:"secretHashes"`
		Scopes       []string `json:"scopes"`
	}
	cfg := struct {
		Issuer  string              `json:"issuer"`
		Keys    []map[string]string `json:"keys"`
		Clients []client            `json:"clients"`
	}{Issuer: "https://auth.example/ids", Keys: []map[string]string{{"file": "signing.pem"}}}
	for _, id := range clients {
		if d.secrets[id] == "" {
			plain, _ := secret.Generate()
			d.secrets[id] = plain
		}
		cfg.Clients = append(cfg.Clients, client{id, []string{secret.HashSHA256(d.secrets[id]).String()}, []string{scope.AdminWebAPI}})
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.dir, "idsauth.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// running is an idsauth serve process.
type running struct {
	cmd       *exec.Cmd
	base, ops string // http(s)://host:port of the service, of the operations endpoints

	mu    sync.Mutex
	lines []string // its log lines
	seen  chan struct{}
}

// start runs "idsauth serve" with args and env, on free loopback ports,
// and waits until both listeners are up. It is stopped when the test
// ends.
func start(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	return startCommand(t, env, "serve", "identity service listening", args...)
}

// startCommand runs "idsauth command" with args and env, and waits until
// the log says its listener (the line listening) and its operations
// endpoints are up. It is stopped when the test ends.
func startCommand(t *testing.T, env []string, command, listening string, args ...string) *running {
	t.Helper()
	full := append([]string{command}, args...)
	cmd := exec.Command(binary, full...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{cmd: cmd, seen: make(chan struct{}, 1)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("idsauth %s's log:\n%s", command, strings.Join(r.log(), "\n"))
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			select {
			case r.seen <- struct{}{}:
			default:
			}
		}
	}()
	deadline := time.After(20 * time.Second)
	for r.base == "" || r.ops == "" {
		for _, l := range r.log() {
			var e struct{ Msg, Addr string }
			if json.Unmarshal([]byte(l), &e) != nil {
				continue
			}
			switch e.Msg {
			case listening:
				r.base = e.Addr
			case "operations endpoints":
				r.ops = "http://" + e.Addr
			}
		}
		if r.base != "" && r.ops != "" {
			break
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("idsauth %s did not start:\n%s", command, strings.Join(r.log(), "\n"))
		}
	}
	return r
}

func (r *running) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// waitLog waits until a log line holds all of want, and returns it.
func (r *running) waitLog(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, l := range r.log() {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(l, w)
			}
			if ok {
				return l
			}
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("no log line with %q:\n%s", want, strings.Join(r.log(), "\n"))
		}
	}
}

func (r *running) signal(t *testing.T, s os.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// token asks for a token as an x/oauth2 client does.
func token(ctx context.Context, base string, hc *http.Client, id, secret string) (*oauth2.Token, error) {
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: base + "/ids/connect/token",
		Scopes: []string{scope.AdminWebAPI}, AuthStyle: oauth2.AuthStyleInHeader}
	if hc != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	}
	return cc.Token(ctx)
}

// scrape reads the metrics with Prometheus's text parser.
func scrape(t *testing.T, ops string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(ops + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the metrics: %v", err)
	}
	return families
}

// sample returns the value of the series of name with these labels, or
// -1 when there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := families[name]
	if f == nil {
		return -1
	}
	for _, s := range f.GetMetric() {
		if matches(s, labels) {
			if c := s.GetCounter(); c != nil {
				return c.GetValue()
			}
			return s.GetGauge().GetValue()
		}
	}
	return -1
}

func TestServeIssuesTokensAndCountsThem(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	ctx := context.Background()
	before := sample(scrape(t, r.ops), "idsauth_tokens_issued_total", map[string]string{"client_id": "reporting"})
	if _, err := token(ctx, r.base, nil, "reporting", d.secrets["reporting"]); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, r.ops)
	if got := sample(after, "idsauth_tokens_issued_total", map[string]string{"client_id": "reporting", "scope": "pd_AdminWebApi"}); got != 1 || before != -1 {
		t.Errorf("idsauth_tokens_issued_total: %v before the token, %v after; want none, then 1", before, got)
	}
	if got := sample(after, "idsauth_build_info", nil); got != 1 {
		t.Errorf("idsauth_build_info = %v, want 1", got)
	}
	if got := sample(after, "idsauth_signing_key_info", map[string]string{"alg": "ES256"}); got != 1 {
		t.Errorf("idsauth_signing_key_info = %v, want 1", got)
	}
	// Nothing but the issuer on the service's listener.
	for _, path := range []string{"/metrics", "/healthz", "/"} {
		resp, err := http.Get(r.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the service's listener: %d, want 404", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(r.ops + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
		}
	}
	for _, l := range r.log() {
		if strings.Contains(l, d.secrets["reporting"]) {
			t.Errorf("a log line holds the client's secret: %s", l)
		}
	}
}

func TestServeReloadsOnHangup(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	ctx := context.Background()
	if _, err := token(ctx, r.base, nil, "billing", "nope"); err == nil {
		t.Fatal("a client not yet in the file got a token")
	}

	d.write(t, "reporting", "billing")
	r.signal(t, syscall.SIGHUP)
	r.waitLog(t, `"msg":"reloaded"`)
	if _, err := token(ctx, r.base, nil, "billing", d.secrets["billing"]); err != nil {
		t.Fatalf("the client added by the reload: %v", err)
	}

	broken := `{"issuer": "https://auth.example/ids", "keys": [{"file": "signing.pem"}], "clients": [{"clientId": "x", "scope": ["pd_AdminWebApi"]}]}`
	if err := os.WriteFile(filepath.Join(d.dir, "idsauth.json"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	r.signal(t, syscall.SIGHUP)
	line := r.waitLog(t, `"msg":"reload failed`)
	if !strings.Contains(line, "scope") {
		t.Errorf("the failed reload's log line does not name the field: %s", line)
	}
	if _, err := token(ctx, r.base, nil, "billing", d.secrets["billing"]); err != nil {
		t.Fatalf("after a broken file, the configuration before it: %v", err)
	}
	m := scrape(t, r.ops)
	if ok, failed := sample(m, "idsauth_reloads_total", map[string]string{"result": "ok"}), sample(m, "idsauth_reloads_total", map[string]string{"result": "failed"}); ok != 1 || failed != 1 {
		t.Errorf("idsauth_reloads_total: ok %v, failed %v; want 1 and 1", ok, failed)
	}
	if ts := sample(m, "idsauth_last_reload_timestamp_seconds", map[string]string{"result": "failed"}); ts < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("idsauth_last_reload_timestamp_seconds{result=failed} = %v", ts)
	}
}

// TestServeDrainsOnTerminate sends SIGTERM while token requests are in
// flight (their bodies half sent): each one is answered, then the process
// exits 0.
func TestServeDrainsOnTerminate(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	host := strings.TrimPrefix(r.base, "http://")
	body := "grant_type=client_credentials&scope=pd_AdminWebApi&client_id=reporting&client_secret=" + d.secrets["reporting"]
	const inFlight = 8
	conns := make([]net.Conn, inFlight)
	for i := range conns {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /ids/connect/token HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body[:10])
		conns[i] = c
	}
	// In flight: each request's handler is running, waiting for the rest
	// of its body.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if n := sample(scrape(t, r.ops), "idsauth_http_requests_in_flight", nil); n == inFlight {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("idsauth_http_requests_in_flight = %v, want %d", n, inFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.signal(t, syscall.SIGTERM)
	r.waitLog(t, "shutting down")
	for i, c := range conns {
		if _, err := io.WriteString(c, body[10:]); err != nil {
			t.Fatalf("request %d: the connection was closed before its body was sent: %v", i, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("request %d: no answer after SIGTERM: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: %d, want 200", i, resp.StatusCode)
		}
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("after the drain the process exited with %v, want 0", err)
	}
}

// TestServeTLS serves HTTPS from -tls-cert and -tls-key, and serves a
// renewed certificate after SIGHUP.
func TestServeTLS(t *testing.T) {
	d := newDeployment(t, "reporting")
	certFile, keyFile := filepath.Join(d.dir, "tls.crt"), filepath.Join(d.dir, "tls.key")
	pool := x509.NewCertPool()
	first := writeCert(t, certFile, keyFile, pool, 1)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0",
		"-tls-cert", certFile, "-tls-key", keyFile, "-config", filepath.Join(d.dir, "idsauth.json"))
	if !strings.HasPrefix(r.base, "https://") {
		t.Fatalf("listening on %s, want https", r.base)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if _, err := token(context.Background(), r.base, hc, "reporting", d.secrets["reporting"]); err != nil {
		t.Fatalf("token over HTTPS: %v", err)
	}
	if got := servedSerial(t, r.base, pool); got.Cmp(first) != 0 {
		t.Fatalf("served certificate %v, want %v", got, first)
	}
	second := writeCert(t, certFile, keyFile, pool, 2)
	r.signal(t, syscall.SIGHUP)
	r.waitLog(t, `"msg":"reloaded"`)
	if got := servedSerial(t, r.base, pool); got.Cmp(second) != 0 {
		t.Errorf("after SIGHUP the served certificate is %v, want the renewed %v", got, second)
	}
}

func servedSerial(t *testing.T, base string, pool *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// writeCert writes a self-signed certificate for 127.0.0.1 with this
// serial, trusts it in pool, and returns the serial.
func writeCert(t *testing.T, certFile, keyFile string, pool *x509.CertPool, serial int64) *big.Int {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "idsauth test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool.AddCert(cert)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return big.NewInt(serial)
}

// TestServeFromTheEnvironmentAlone configures serve by environment
// variables only, as a container does, and a flag wins over its variable.
func TestServeFromTheEnvironmentAlone(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, []string{
		"IDSAUTH_CONFIG=" + filepath.Join(d.dir, "idsauth.json"),
		"IDSAUTH_ADDR=127.0.0.1:0",
		"IDSAUTH_OPS_ADDR=127.0.0.1:0",
		"IDSAUTH_LOG_FORMAT=json",
	})
	if _, err := token(context.Background(), r.base, nil, "reporting", d.secrets["reporting"]); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(binary, "serve", "-log-format", "bogus", "-config", "/nonexistent.json").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bogus") {
		t.Errorf("a bad flag: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "serve", "-log-format", "text", "-config", "/nonexistent.json")
	cmd.Env = append(os.Environ(), "IDSAUTH_LOG_FORMAT=bogus")
	if out, err := cmd.CombinedOutput(); strings.Contains(string(out), "bogus") || !strings.Contains(string(out), "nonexistent") {
		t.Errorf("the flag -log-format text did not win over IDSAUTH_LOG_FORMAT=bogus: %v\n%s", err, out)
	}
}
