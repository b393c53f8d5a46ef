// Package pgtest starts a real PostgreSQL for a test: a cluster made by
// initdb in a temporary directory, served by postgres on a free loopback
// port, with a password, and stopped by its PID when the test ends.
// Without PostgreSQL's binaries the test is skipped, unless the
// environment sets CI: there it must run (.ci/run installs Debian's).
//
// initdb and postgres refuse to run as root: run as root (as CI does),
// the helper runs them as the user "postgres" (Debian's package makes
// it), in a directory that user owns.
package pgtest

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
)

// User is the cluster's superuser, who owns its databases.
const User = "idsauth"

// Server is a PostgreSQL a test started.
type Server struct {
	Addr     string // 127.0.0.1:port
	Password string // User's

	bin  string // the folder of initdb, postgres and createdb
	dir  string // the cluster's folder, removed at the end
	cred *syscall.Credential
	out  *testlog.Buffer

	mu  sync.Mutex // serializes Stop and Start
	cmd *exec.Cmd  // nil while stopped
}

// Start makes a cluster for t and starts it, and waits until it accepts
// connections. It is stopped, and its folder removed, when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is not installed, and CI must run these tests (.ci/run installs it): %v", err)
		}
		t.Skipf("PostgreSQL is not installed (apt-get install postgresql): %v", err)
	}
	s := &Server{bin: bin, Password: rand.Text(), out: &testlog.Buffer{}}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			t.Fatal(err)
		}
	}
	if s.dir, err = os.MkdirTemp("", "pgtest-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("postgres's output:\n%s", s.out)
		}
		os.RemoveAll(s.dir)
	})
	pwfile := filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.cred != nil {
		for _, p := range []string{s.dir, pwfile} {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	initdb := s.command("initdb", "-D", s.data(), "-U", User, "--pwfile", pwfile, "--auth", "scram-sha-256",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	os.Remove(pwfile)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	l.Close()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// URL is the connection URL of database db, as User.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", User, s.Password, s.Addr, db)
}

// NewDatabase creates a database of its own for t, and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	name := "t" + strings.ToLower(rand.Text()[:12])
	cmd := exec.Command(filepath.Join(s.bin, "createdb"), "-h", host, "-p", port, "-U", User, name)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+s.Password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("createdb: %v\n%s", err, out)
	}
	return s.URL(name)
}

// Stop stops the server by its PID (a fast shutdown: SIGINT), and waits
// for it; SIGKILL after 10 seconds. Its data stays, for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused one cannot stop
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Restart starts a stopped server again, on the same port and data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// PID is the postgres process's, 0 while stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Output is what the server printed.
func (s *Server) Output() string { return s.out.String() }

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// start starts postgres and waits until its postmaster.pid says ready.
func (s *Server) start() error {
	host, port, _ := net.SplitHostPort(s.Addr)
	os.Remove(filepath.Join(s.data(), "postmaster.pid")) // stopped: none is left, but a kill leaves one
	cmd := s.command("postgres", "-D", s.data(), "-p", port, "-c", "listen_addresses="+host, "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=60",
		"-c", "shared_buffers=16MB")
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	for i := 0; ; i++ {
		// The eighth line of postmaster.pid is the server's state.
		b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
		lines := strings.Split(string(b), "\n")
		if err == nil && len(lines) > 7 && strings.TrimSpace(lines[7]) == "ready" {
			return nil
		}
		if i == 300 {
			return fmt.Errorf("postgres on %s is not ready after 30 s:\n%s", s.Addr, s.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// command runs name of the cluster's binaries, as the postgres user when
// the test runs as root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
		cmd.Env = append(cmd.Env, "HOME="+s.dir)
	}
	return cmd
}

// binaries finds the folder of initdb and postgres: the one of initdb on
// PATH, else Debian's newest /usr/lib/postgresql/N/bin.
func binaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int { return version(b) - version(a) })
	if len(found) == 0 {
		return "", fmt.Errorf("no initdb on PATH or in /usr/lib/postgresql/*/bin")
	}
	return filepath.Dir(found[0]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// postgresUser is the credential of the user "postgres", for a test run
// as root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, the cluster runs as the user postgres (initdb refuses root), which does not exist: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("the user postgres: uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
