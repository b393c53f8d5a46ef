package conformance

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/secret"
)

// TestServeFailedReloadChangesNothing: a reload whose configuration the
// issuer refuses (an unknown scope: the file decodes, the check fails)
// while the certificate files were renewed leaves the old certificate
// served, and the old configuration; a good reload then serves both new.
func TestServeFailedReloadChangesNothing(t *testing.T) {
	d := newDeployment(t, "reporting")
	certFile, keyFile := filepath.Join(d.dir, "tls.crt"), filepath.Join(d.dir, "tls.key")
	pool := x509.NewCertPool()
	first := writeCert(t, certFile, keyFile, pool, 1)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0",
		"-tls-cert", certFile, "-tls-key", keyFile, "-config", filepath.Join(d.dir, "idsauth.json"))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	second := writeCert(t, certFile, keyFile, pool, 2)
	bad := `{"issuer": "https://auth.example/ids", "keys": [{"file": "signing.pem"}],
 "clients": [{"clientId": "billing", "secretHashes": ["` + secret.HashSHA256("x").String() + `"], "scopes": ["no_such_scope"]}]}`
	if err := os.WriteFile(filepath.Join(d.dir, "idsauth.json"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	r.signal(t, syscall.SIGHUP)
	if line := r.waitLog(t, `"msg":"reload failed`); !strings.Contains(line, "no_such_scope") || !strings.Contains(line, "idsauth.json") {
		t.Errorf("the failed reload's line names neither the scope nor the file: %s", line)
	}
	if got := servedSerial(t, r.base, pool); got.Cmp(first) != 0 {
		t.Errorf("after a failed reload the served certificate is %v, want the one before it, %v", got, first)
	}
	if _, err := token(context.Background(), r.base, hc, "reporting", d.secrets["reporting"]); err != nil {
		t.Errorf("after a failed reload, the configuration before it: %v", err)
	}

	d.write(t, "reporting")
	r.signal(t, syscall.SIGHUP)
	r.waitLog(t, `"msg":"reloaded"`)
	if got := servedSerial(t, r.base, pool); got.Cmp(second) != 0 {
		t.Errorf("after a good reload the served certificate is %v, want the renewed %v", got, second)
	}
}

// TestServeRefusesWhatFollowsTheObject: one "}" too many in the middle of
// the file would drop every section after it; serve refuses to start on
// it, a reload refuses it, and check-config too, naming the line.
func TestServeRefusesWhatFollowsTheObject(t *testing.T) {
	d := newDeployment(t, "reporting")
	path := filepath.Join(d.dir, "idsauth.json")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// {..."clients":[...]\n},\n"limits":{...}\n}: the "}" on line 2 is one
	// too many, and the limits would be dropped.
	stray := strings.TrimSuffix(strings.TrimSpace(string(good)), "}") + "\n},\n\"limits\": {\"failedAttemptsPerAddress\": 1}\n}\n"
	if err := os.WriteFile(path, []byte(stray), 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "line 2, column 2: something follows the configuration object, which ends at line 2, column 1"
	r.signal(t, syscall.SIGHUP)
	if line := r.waitLog(t, `"msg":"reload failed`); !strings.Contains(line, want) {
		t.Errorf("the reload: %s\nwant %q", line, want)
	}
	if out, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path); err == nil || !strings.Contains(out, want) {
		t.Errorf("serve started on it: %v\n%s", err, out)
	}
	if out, err := exec.Command(binary, "check-config", path).CombinedOutput(); err == nil || !strings.Contains(string(out), want) {
		t.Errorf("check-config: %v\n%s", err, out)
	}
}

// halfRequest opens a token request to the service at base and sends all
// of it but the end of its body: its handler runs, waiting for the rest.
// finish sends the rest and returns the status of the answer.
func halfRequest(t *testing.T, base, body string) (finish func() (int, error)) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /ids/connect/token HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body[:10])
	return func() (int, error) {
		if _, err := io.WriteString(c, body[10:]); err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
}

// waitInFlight waits until the service counts n requests in flight.
func waitInFlight(t *testing.T, r *running, n float64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if got := sample(scrape(t, r.ops), "idsauth_http_requests_in_flight", nil); got == n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("idsauth_http_requests_in_flight = %v, want %v", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeIsNotReadyWhileItDrains: from SIGTERM on, while a request in
// flight finishes, /readyz answers 503 (the operations listener still
// answers); the request is answered, and the process exits 0.
func TestServeIsNotReadyWhileItDrains(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	if got := readyz(t, r); got != http.StatusOK {
		t.Fatalf("/readyz before the stop: %d", got)
	}
	finish := halfRequest(t, r.base, "grant_type=client_credentials&scope=pd_AdminWebApi&client_id=reporting&client_secret="+d.secrets["reporting"])
	waitInFlight(t, r, 1)
	r.signal(t, syscall.SIGTERM)
	r.waitLog(t, "shutting down")
	if got := readyz(t, r); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining: %d, want 503", got)
	}
	if status, err := finish(); err != nil || status != http.StatusOK {
		t.Errorf("the request in flight: %d %v, want 200", status, err)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("after the drain the process exited with %v, want 0", err)
	}
}

// TestServeExitsOneWhenTheDrainCutsRequests: a request that does not
// finish within -drain-timeout is cut off, and the process says so and
// exits 1, as OPERATIONS.md says.
func TestServeExitsOneWhenTheDrainCutsRequests(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-drain-timeout", "200ms", "-config", filepath.Join(d.dir, "idsauth.json"))
	halfRequest(t, r.base, "grant_type=client_credentials&scope=pd_AdminWebApi")
	waitInFlight(t, r, 1)
	r.signal(t, syscall.SIGTERM)
	r.waitLog(t, "idsauth serve: requests still in flight after 200ms were cut off")
	err := r.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("a drain that cut a request off: the process exited with %v, want exit status 1", err)
	}
}
