// Package haproxytest starts a real HAProxy for a test: one process in
// the foreground (-db), on a free loopback port, with a configuration
// written to the test's temporary folder, stopped by its PID when the
// test ends. Without HAProxy the test is skipped, unless the environment
// sets CI: there it must run (.ci/run installs Debian's haproxy).
package haproxytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/proctest"
)

// Server is an HAProxy a test started.
type Server struct {
	Addr string // 127.0.0.1:port, where it listens

	*proctest.Process
}

// Start starts HAProxy with the sections given (frontends and backends,
// after a global and a defaults section of HTTP mode and short
// timeouts): in sections, {{port}} is the port it listens on and {{dir}}
// dir, where the test may write files (certificates) before calling
// Start. It returns once HAProxy accepts connections.
func Start(t testing.TB, dir, sections string) *Server {
	t.Helper()
	path := proctest.Find(t, "haproxy", "haproxy")
	port := proctest.FreePort(t)
	s := &Server{Addr: "127.0.0.1:" + port}
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
	s.Process = proctest.Start(t, s.Addr, path, "-db", "-f", file)
	return s
}
