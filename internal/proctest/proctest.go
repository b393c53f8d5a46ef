// Package proctest runs a real server program for a test (nginx, HAProxy,
// and the like): found on PATH or where Debian installs it, on a free
// loopback port, in the foreground, stopped by its PID when the test
// ends. Without the program the test is skipped, unless the environment
// sets CI: there it must run, since .ci/run installs it.
package proctest

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
)

// Find returns the path of the program name, looked up on PATH and then
// in /usr/sbin, or skips the test (fails it under CI) naming pkg, the
// Debian package that installs it.
func Find(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if path, err = exec.LookPath("/usr/sbin/" + name); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed, and CI must run these tests (.ci/run installs %s): %v", name, pkg, err)
			}
			t.Skipf("%s is not installed: apt-get install %s to run this test", name, pkg)
		}
	}
	return path
}

// FreePort returns a loopback port that nothing listens on now.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Process is a program a test started.
type Process struct {
	cmd *exec.Cmd
	out *testlog.Buffer
}

// Start runs path with args and returns once it accepts connections on
// addr; it is killed, by its PID, when the test ends.
func Start(t testing.TB, addr, path string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(path, args...), out: &testlog.Buffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return p
		}
		if i == 100 {
			t.Fatalf("%s does not listen on %s:\n%s", path, addr, p.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is what the program wrote.
func (p *Process) Log() string { return p.out.String() }

// Python runs the Python 3 script (a path) with a free loopback port as
// its one argument, and returns the address it listens on: an upstream
// that is not Go, such as one made of Python's http.server.
func Python(t testing.TB, script string) string {
	t.Helper()
	py := Find(t, "python3", "python3")
	port := FreePort(t)
	addr := "127.0.0.1:" + port
	Start(t, addr, py, script, port)
	return addr
}

// Recipe returns the one fenced block whose info string is lang ("nginx",
// "haproxy", "yaml traefik", ...) in the document at doc, as a reader copies it, with each of replace's
// pairs (old, new) replaced: the test's addresses and files for the
// example's. It fails the test when the document has no such block, or
// more than one, or the block lacks an old.
func Recipe(t testing.TB, doc, lang string, replace ...string) string {
	t.Helper()
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```"+regexp.QuoteMeta(lang)+"\n(.*?)```").FindAllSubmatch(text, -1)
	if len(blocks) != 1 {
		t.Fatalf("%s has %d %s blocks, want 1", doc, len(blocks), lang)
	}
	r := string(blocks[0][1])
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(r, replace[i]) {
			t.Fatalf("the %s recipe of %s has no %q to replace:\n%s", lang, doc, replace[i], r)
		}
	}
	return strings.NewReplacer(replace...).Replace(r)
}
