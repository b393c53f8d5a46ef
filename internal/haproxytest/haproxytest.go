// Package haproxytest starts a real HAProxy for a test: one process in
// the foreground (-db), on a free loopback port, with a configuration
// written to the test's temporary folder, stopped by its PID when the
// test ends. Without HAProxy the test is skipped, unless the environment
// sets CI: there it must run (.ci/run installs Debian's haproxy).
package haproxytest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
)

// Server is an HAProxy a test started.
type Server struct {
	Addr string // 127.0.0.1:port, where it listens

	cmd *exec.Cmd
	out *testlog.Buffer
}

// Start starts HAProxy with the sections given (frontends and backends,
// after a global and a defaults section of HTTP mode and short
// timeouts): in sections, {{port}} is the port it listens on and {{dir}}
// dir, where the test may write files (certificates) before calling
// Start. It returns once HAProxy accepts connections.
func Start(t testing.TB, dir, sections string) *Server {
	t.Helper()
	path, err := exec.LookPath("haproxy")
	if err != nil {
		if path, err = exec.LookPath("/usr/sbin/haproxy"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("haproxy is not installed, and CI must run these tests (.ci/run installs it): %v", err)
			}
			t.Skip("haproxy is not installed: apt-get install haproxy to run this test")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s := &Server{Addr: "127.0.0.1:" + port, out: &testlog.Buffer{}}
	conf := `global
	log stderr format raw local0 notice

defaults
	mode http
	log global
	timeout connect 5s
	timeout client 30s
	timeout server 30s

` + sections + "\n"
	conf = strings.NewReplacer("{{dir}}", dir, "{{port}}", port).Replace(conf)
	file := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-c", "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c refuses the configuration: %v\n%s\n%s", err, out, conf)
	}
	s.cmd = exec.Command(path, "-db", "-f", file)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		if i == 100 {
			t.Fatalf("haproxy does not listen on %s:\n%s", s.Addr, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends HAProxy by its PID and waits for it.
func (s *Server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Log is what HAProxy wrote.
func (s *Server) Log() string { return s.out.String() }
