// Package nginxtest starts a real nginx for a test: one process in the
// foreground (no master, no daemon), on a free loopback port, with a
// configuration written to the test's temporary folder, stopped by its
// PID when the test ends. Without nginx the test is skipped, unless the
// environment sets CI: there it must run (.ci/run installs nginx-light).
package nginxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/proctest"
)

// Server is an nginx a test started.
type Server struct {
	Addr string // 127.0.0.1:port, where it listens
	Dir  string // its prefix: the configuration, logs, pid and temp files

	*proctest.Process
}

// Start starts nginx with the http block's servers given: in servers,
// {{port}} is the port it listens on and {{dir}} its folder, where the
// test may write files (certificates) before calling Start. It returns
// once nginx accepts connections.
func Start(t testing.TB, dir, servers string) *Server {
	t.Helper()
	path := proctest.Find(t, "nginx", "nginx-light")
	port := proctest.FreePort(t)
	s := &Server{Addr: "127.0.0.1:" + port, Dir: dir}
	conf := `daemon off;
master_process off;
worker_processes 1;
pid {{dir}}/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
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
	s.Process = proctest.Start(t, s.Addr, path, "-p", dir, "-c", file, "-e", "stderr")
	return s
}
