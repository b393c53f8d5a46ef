package main

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pin binds every thread of this process to cpu, and the Go scheduler to
// one thread at a time: threads made later inherit the binding from the
// thread that makes them.
func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	runtime.GOMAXPROCS(1)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return err
		}
	}
	return nil
}
