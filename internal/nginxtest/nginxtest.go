// Package nginxtest starts a real nginx for a test: one process in the
// foreground (no master, no daemon), on a free loopback port, with a
// configuration written to the test's temporary folder, stopped by its
// PID when the test ends. Without nginx the test is skipped, unless the
// environment sets CI: there it must run (.ci/run installs nginx-light).
package nginxtest

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

// Server is an nginx a test started.
type Server struct {
	Addr string // 127.0.0.1:port, where it listens
	Dir  string // its prefix: the configuration, logs, pid and temp files

	cmd *exec.Cmd
	out *testlog.Buffer
}

// Start starts nginx with the http block's servers given: in servers,
// {{port}} is the port it listens on and {{dir}} its folder, where the
// test may write files (certificates) before calling Start. It returns
// once nginx accepts connections.
func Start(t testing.TB, dir, servers string) *Server {
	t.Helper()
	path, err := exec.LookPath("nginx")
	if err != nil {
		if path, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("nginx is not installed, and CI must run these tests (.ci/run installs nginx-light): %v", err)
			}
			t.Skip("nginx is not installed: apt-get install nginx-light to run this test")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s := &Server{Addr: "127.0.0.1:" + port, Dir: dir, out: &testlog.Buffer{}}
	conf := `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path {{dir}}/body;
	proxy_temp_path {{dir}}/proxy;
	fastcgi_temp_path {{dir}}/fastcgi;
	uwsgi_temp_path {{dir}}/uwsgi;
	scgi_temp_path {{dir}}/scgi;
` + servers + `
}
`
	conf = strings.NewReplacer("{{dir}}", dir, "{{port}}", port).Replace(conf)
	file := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(path, "-p", dir, "-c", file, "-e", "stderr")
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
			t.Fatalf("nginx does not listen on %s:\n%s", s.Addr, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends nginx by its PID and waits for it.
func (s *Server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Log is what nginx wrote.
func (s *Server) Log() string { return s.out.String() }
