// Command counts measures what the token endpoint and the bare server of
// cmd/ceiling do per request, counted rather than timed: instructions,
// and instruction- and data-cache lines missed, as valgrind's cachegrind
// simulates them. Counts do not depend on what else the machine is doing,
// so they show what a change did where cmd/ceiling's timings drown in the
// machine's drift.
//
// For each server it starts cmd/ceiling's child under valgrind twice,
// sends it -warm requests the first time and -warm+-n the second, one at a
// time on one connection to 127.0.0.1, and divides the difference by -n:
// what starting up costs cancels out.
//
//	go build -o /tmp/ceiling ./cmd/ceiling
//	go run ./cmd/counts -ceiling /tmp/ceiling      # about a minute
//
// It needs valgrind (Debian's package valgrind). Valgrind offers no
// SHA-NI, so SHA-256 takes Go's AVX2 path there and weighs more than on a
// CPU with SHA-NI.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/keys"
)

func main() {
	ceiling := flag.String("ceiling", "", "the built cmd/ceiling binary")
	n := flag.Int("n", 2000, "requests counted, 100 to 20000")
	warm := flag.Int("warm", 200, "requests before those counted, 10 to 2000")
	flag.Parse()
	if err := run(*ceiling, *n, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "counts:", err)
		os.Exit(1)
	}
}

// events are the cachegrind totals read, in the order printed.
var events = []string{"I refs", "I1 misses", "D1 misses"}

func run(ceiling string, n, warm int) error {
	switch {
	case ceiling == "":
		return errors.New("-ceiling: build cmd/ceiling and name the binary")
	case n < 100 || n > 20000:
		return errors.New("-n must be from 100 to 20000")
	case warm < 10 || warm > 2000:
		return errors.New("-warm must be from 10 to 2000")
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return errors.New("valgrind is not installed (Debian: apt-get install valgrind)")
	}
	dir, err := os.MkdirTemp("", "counts")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	k, err := keys.Generate("ES256")
	if err != nil {
		return err
	}
	pemKey, err := keys.EncodePEM(k.Private)
	if err != nil {
		return err
	}
	// The bare server answers what idsauth answers: take one answer first.
	s, err := start(ceiling, "idsauth", string(pemKey))
	if err != nil {
		return err
	}
	answer, err := send(s.addr, 1)
	s.stop()
	if err != nil {
		return err
	}
	per := map[string][]float64{}
	for _, role := range []string{"bare", "idsauth"} {
		input := string(pemKey)
		if role == "bare" {
			input += string(answer) // one line, ending in a newline
		}
		var totals [2][]int64
		for i, count := range []int{warm, warm + n} {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", role, count))
			if totals[i], err = counted(ceiling, role, input, out, count); err != nil {
				return fmt.Errorf("%s: %w", role, err)
			}
		}
		for j := range events {
			per[role] = append(per[role], float64(totals[1][j]-totals[0][j])/float64(n))
		}
	}
	fmt.Printf("per request, %d requests after %d (cachegrind)\n", n, warm)
	fmt.Printf("%-10s %12s %12s %12s\n", "", "bare", "idsauth", "difference")
	for j, e := range events {
		b, i := per["bare"][j], per["idsauth"][j]
		fmt.Printf("%-10s %12.0f %12.0f %+11.0f (%+.1f%%)\n", e, b, i, i-b, 100*(i-b)/b)
	}
	return nil
}

// counted runs role under cachegrind for count requests and returns its
// totals of events.
func counted(ceiling, role, input, out string, count int) ([]int64, error) {
	var stderr strings.Builder
	s, err := startWith(exec.Command("valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file="+out,
		ceiling, "-role", role, "-life", "10m"), input, &stderr)
	if err != nil {
		return nil, err
	}
	_, err = send(s.addr, count)
	s.stop()
	if err != nil {
		return nil, err
	}
	return totals(stderr.String())
}

// totals reads valgrind's summary lines ("==PID== I refs: 1,234").
func totals(summary string) ([]int64, error) {
	var v []int64
	for _, e := range events {
		name := strings.ReplaceAll(e, " ", `\s+`) // printed with padding: "I   refs"
		m := regexp.MustCompile(`==\d+== ` + name + `:\s+([\d,]+)`).FindStringSubmatch(summary)
		if m == nil {
			return nil, fmt.Errorf("no %q in valgrind's summary", e)
		}
		x, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		if err != nil {
			return nil, err
		}
		v = append(v, x)
	}
	return v, nil
}

type server struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// start starts cmd/ceiling's child for role, outside valgrind.
func start(ceiling, role, input string) (*server, error) {
	return startWith(exec.Command(ceiling, "-role", role, "-life", "10m"), input, os.Stderr)
}

// startWith starts cmd, a ceiling child, writes input to it and waits for
// its address. Closing its standard input stops it.
func startWith(cmd *exec.Cmd, input string, stderr io.Writer) (*server, error) {
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin}
	if _, err := io.WriteString(stdin, input); err != nil {
		s.stop()
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		s.stop()
		return nil, fmt.Errorf("the server did not start: %q %v", line, err)
	}
	s.addr = addr
	return s, nil
}

// stop closes the child's standard input and waits for it to exit (and
// valgrind to write its counts); after a minute it is killed.
func (s *server) stop() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// request is cmd/ceiling's token request: client_credentials, Basic.
const request = "POST /ids/connect/token HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
	"Authorization: Basic YmVuY2gtY2xpZW50OmJlbmNoLWNsaWVudC1zZWNyZXQtMDEyMzQ1Njc4OWFiY2RlZg==\r\n" +
	"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 50\r\n\r\n" +
	"grant_type=client_credentials&scope=pd_AdminWebApi"

// send sends count requests one after the other on one connection and
// returns the last answer's body; every answer must be a 200.
func send(addr string, count int) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Minute))
	br := bufio.NewReader(c)
	var body []byte
	for range count {
		if _, err := io.WriteString(c, request); err != nil {
			return nil, err
		}
		status, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(status, "HTTP/1.1 200 ") {
			return nil, fmt.Errorf("answered %q", strings.TrimSpace(status))
		}
		length := -1
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return nil, err
			}
			if h == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(strings.ToLower(h), "content-length:"); ok {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if length < 0 || length > 1<<20 {
			return nil, errors.New("an answer without a usable Content-Length")
		}
		body = make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, err
		}
	}
	return body, nil
}
