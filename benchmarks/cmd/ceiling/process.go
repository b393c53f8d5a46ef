package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The servers under measure as processes, and the CPU they and the
// machine spend.

// serverCPU is the CPU the servers are pinned to, -1 for none.
var serverCPU = -1

// server is a child process serving one of the two roles.
type server struct {
	name  string
	addr  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// start starts the child for role, writes input to its standard input
// (which stays open: closing it stops the child) and waits for its
// address.
func start(role string, life time.Duration, profile string, input string) (*server, error) {
	return startUnder(nil, os.Stderr, role, life, profile, input)
}

// startUnder is start with the child run by the command wrap (valgrind,
// say; none when empty), its standard error to stderr.
func startUnder(wrap []string, stderr io.Writer, role string, life time.Duration, profile string, input string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{self, "-role", role, "-life", life.String(), "-cpu", strconv.Itoa(serverCPU), "-registry", strconv.Itoa(registered)}
	if profile != "" {
		args = append(args, "-cpuprofile", profile+"-"+role+".pprof")
	}
	args = append(slices.Clip(wrap), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	if len(wrap) > 0 {
		// Valgrind runs one thread at a time and delivers signals late:
		// no preemption by signal, one P, so the runtime does not spin.
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	}
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
	s := &server{name: role, cmd: cmd, stdin: stdin}
	if _, err := io.WriteString(stdin, input); err != nil {
		s.stop()
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		s.stop()
		return nil, fmt.Errorf("%s server did not start: %q %v", role, line, err)
	}
	s.addr = addr
	return s, nil
}

// stop closes the child's standard input, which makes it exit, and waits
// for it; a child that has not exited after 5 s is killed by its PID.
func (s *server) stop() { s.stopWithin(5 * time.Second) }

// stopWithin is stop, waiting up to grace.
func (s *server) stopWithin(grace time.Duration) {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu returns the CPU time the child has used so far.
func (s *server) cpu() time.Duration { return procCPU(s.cmd.Process.Pid) }

// cpuStat is the machine's CPU time from /proc/stat, in clock ticks of 10
// ms, over all CPUs.
type cpuStat struct{ total, busy, steal int64 }

func machineCPU() cpuStat {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuStat{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuStat{}
	}
	var st cpuStat
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuStat{}
		}
		st.total += n
		if i != 3 && i != 4 && i != 7 {
			st.busy += n
		}
		if i == 7 {
			st.steal = n
		}
	}
	return st
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown (" + runtime.GOARCH + ")"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return "unknown (" + runtime.GOARCH + ")"
}

// procCPU is the time process pid has run on a CPU: the sum over its
// threads of the scheduler's own count in /proc/pid/task/*/schedstat, in
// nanoseconds, or else its user and system time from /proc/pid/stat,
// which is counted in clock ticks of 10 ms; 0 where there is no /proc.
func procCPU(pid int) time.Duration {
	if d, ok := schedCPU(pid); ok {
		return d
	}
	return statCPU(pid)
}

// schedCPU sums the first field of every thread's schedstat.
func schedCPU(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread has just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return time.Duration(sum), sum > 0
}

// statCPU is the user and system time of process pid, from
// /proc/pid/stat.
func statCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	_, err1 := fmt.Sscan(f[11], &utime)
	_, err2 := fmt.Sscan(f[12], &stime)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is the user and system time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
