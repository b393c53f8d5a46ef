package conformance

import (
	"bufio"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/redistest"
)

// TestRedTeamServeHangupDuringTheDrain (finding F8, fixed): Go's default
// for SIGHUP is to end the process, and serve caught it only while it
// served, so a SIGHUP during the drain (a configuration push that meets a
// rolling restart) cut off the requests the drain promised to finish.
// SIGHUP is now caught for the command's whole life, and ignored (with a
// log line) while it starts or stops.
func TestRedTeamServeHangupDuringTheDrain(t *testing.T) {
	d := newDeployment(t, "reporting")
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	finish := halfRequest(t, r.base, "grant_type=client_credentials&scope=pd_AdminWebApi&client_id=reporting&client_secret="+d.secrets["reporting"])
	waitInFlight(t, r, 1)
	r.signal(t, syscall.SIGTERM)
	r.waitLog(t, "shutting down")
	r.signal(t, syscall.SIGHUP)
	if status, err := finish(); err != nil || status != http.StatusOK {
		t.Errorf("the request in flight, after a SIGHUP during the drain: %d %v, want 200", status, err)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("the process exited with %v, want 0", err)
	}
}

// TestRedTeamServeHangupDuringTheStart (finding F8, fixed): while serve
// waits at start for its token store's Redis (up to five seconds when
// Redis hangs: a paused redis-server here), a SIGHUP does not end it: it
// starts (with a warning) once the wait runs out.
func TestRedTeamServeHangupDuringTheStart(t *testing.T) {
	srv := redistest.Start(t)
	_, path := referenceDeployment(t, srv.Addr, map[string]any{"allowNoPersistence": true})
	srv.Pause(t)
	t.Cleanup(func() { srv.Resume(t) })
	cmd := exec.Command(binary, "serve", "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One goroutine reads standard error to its end, then waits for the
	// process (Wait closes the pipe: no read may follow it), and shares
	// the result with the test and the cleanup.
	var mu sync.Mutex
	var lines []string
	listening := make(chan struct{})
	exited := make(chan error, 1)
	waited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "identity service listening") {
				close(listening)
			}
		}
		exited <- cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-waited })
	// The process is waiting for Redis (its start bound is five seconds):
	// let it get there, then send the signal an operator's reload would.
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-listening:
	case err := <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("a SIGHUP during the start ended serve: %v\n%s", err, strings.Join(lines, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatal("serve neither started nor exited")
	}
}
