package pgtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestStartStopRestart: a cluster starts (as the user postgres when the
// test runs as root, as CI does), takes a database with the password,
// stops by its PID and starts again on the same port with its data.
func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	s.NewDatabase(t)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
	if err != nil {
		t.Fatal(err)
	}
	var uid string
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			uid = f[1]
		}
	}
	if os.Geteuid() == 0 && (uid == "0" || uid == "") {
		t.Errorf("postgres runs as uid %q, run as root", uid)
	}
	s.Stop()
	if s.PID() != 0 {
		t.Fatal("still running after Stop")
	}
	s.Restart(t)
	s.NewDatabase(t)
}
