// Package redistest starts a real redis-server for a test, on a free
// loopback port with no persistence, and stops it by its PID when the
// test ends. Without redis-server on PATH the test is skipped, unless the
// environment sets CI: there it must run.
package redistest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
)

// Server is a redis-server a test started.
type Server struct {
	Addr string // 127.0.0.1:port

	cmd *exec.Cmd
	out *testlog.Buffer
	mu  sync.Mutex // serializes Kill
}

// Start starts a redis-server for t and waits until it answers PING.
// args follow the defaults and win over them: "--appendonly", "yes" starts
// one that keeps its data.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return startWith(t, func() []string { return args })
}

// startWith is Start with the extra arguments made for each attempt: a
// port found free can be taken by another process before redis-server
// binds it (tests run in parallel, each picking ports), so a server that
// could not bind is started again on new ports, five times at most.
func startWith(t testing.TB, args func() []string) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not on PATH, and CI must run these tests (.ci/run installs it): %v", err)
		}
		t.Skip("redis-server is not on PATH: install it (apt-get install redis-server) to run this test")
	}
	for attempt := 1; ; attempt++ {
		s, lostPort := try(t, path, args())
		if s != nil {
			return s
		}
		if !lostPort || attempt == 5 {
			t.Fatal("redis-server could not bind a free port in five attempts")
		}
	}
}

// try starts one redis-server and waits until it answers PING. It returns
// nil and whether the server failed to bind a port (which another process
// took since it was found free), or fails t.
func try(t testing.TB, path string, args []string) (*Server, bool) {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	s := &Server{Addr: "127.0.0.1:" + port, out: &testlog.Buffer{}}
	s.cmd = exec.Command(path, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	for i := 0; !s.Answers(); i++ {
		if strings.Contains(s.out.String(), "Address already in use") {
			s.Kill()
			return nil, true
		}
		if i == 100 {
			t.Fatalf("redis-server on %s does not answer PING:\n%s", s.Addr, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s, false
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Answers reports whether the server answers PING within a second.
func (s *Server) Answers() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// Kill stops the server by its PID, at once.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill() // SIGKILL ends a stopped process too
	_ = s.cmd.Wait()
}

// Pause stops the server's process (SIGSTOP): its port still accepts
// connections, and nothing answers, as a hung Redis.
func (s *Server) Pause(t testing.TB) {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Resume undoes Pause.
func (s *Server) Resume(t testing.TB) {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Output is what the server printed.
func (s *Server) Output() string { return s.out.String() }
