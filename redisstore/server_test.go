package redisstore_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server the test started, on a free loopback
// port, with a temporary directory and no persistence.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
	out  *lockedBuffer
	mu   sync.Mutex // serializes kill
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRedis starts a redis-server for t and stops it, by its PID, when t
// ends. Without redis-server on PATH the test is skipped, unless CI is
// set: there it must run.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not on PATH, and CI must run these tests (.ci/run installs it): %v", err)
		}
		t.Skip("redis-server is not on PATH: install it (apt-get install redis-server) to run the Redis store's tests")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s := &redisServer{addr: "127.0.0.1:" + port, out: &lockedBuffer{}}
	s.cmd = exec.Command(path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	c := redis.NewClient(&redis.Options{Addr: s.addr})
	defer c.Close()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s
		}
		if i == 100 {
			t.Fatalf("redis-server on %s does not answer PING: %v\n%s", s.addr, err, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// client returns a client of s that t closes.
func (s *redisServer) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// kill stops the server by its PID, at once.
func (s *redisServer) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill() // SIGKILL ends a stopped process too
	_ = s.cmd.Wait()
}

// pause stops the server's process (SIGSTOP): its port still accepts
// connections, and nothing answers, as a hung Redis.
func (s *redisServer) pause(t *testing.T) {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// resume undoes pause.
func (s *redisServer) resume(t *testing.T) {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
