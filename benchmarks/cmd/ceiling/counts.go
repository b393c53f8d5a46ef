package main

import (
	"bufio"
	"errors"
	"fmt"
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

// registered is -registry: how many registered clients the registry
// role's issuer holds.
var registered int

// countWarm is how many requests each server answers before those
// counted: what starting up and warming up cost cancels out.
const countWarm = 200

// events are the cachegrind totals read, as its summary names them.
var events = []string{"I refs", "I1 misses", "D1 misses"}

// runCounts is -counts: what the two servers do per request, counted by
// valgrind's cachegrind rather than timed. Each server runs under valgrind
// twice, answering countWarm requests and then countWarm+n, one at a time
// on one connection to 127.0.0.1; the difference divided by n is printed.
// Counts do not depend on what else the machine is doing. Valgrind offers
// no SHA-NI, so SHA-256 takes Go's AVX2 path there and weighs more than
// on a CPU with SHA-NI.
//
// With registry clients, idsauth's side is the "registry" role: its
// client is one of that many registered clients (Issuer.SetRegistered),
// as a client of pgregistry's is, and none is in its configuration.
func runCounts(n, registry int) error {
	if n < 100 || n > 100_000 {
		return errors.New("-counts must be from 100 to 100000")
	}
	if registry < 0 || registry > 1_000_000 {
		return errors.New("-registry must be from 0 to 1000000")
	}
	registered = registry
	if _, err := exec.LookPath("valgrind"); err != nil {
		return errors.New("-counts needs valgrind (Debian: apt-get install valgrind)")
	}
	dir, err := os.MkdirTemp("", "ceiling-counts")
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
	ids, err := start("idsauth", 10*time.Minute, "", string(pemKey))
	if err != nil {
		return err
	}
	answer, err := fetch(ids.addr, tokenRequest) // the bare server answers what idsauth answers
	ids.stop()
	if err != nil {
		return err
	}
	side := "idsauth"
	if registry > 0 {
		side = "registry"
	}
	per := map[string][]float64{}
	cycles := map[string]int64{}
	for _, role := range []string{"bare", side} {
		input := string(pemKey)
		if role == "bare" {
			input += string(answer) // one line, ending in a newline
		}
		var totals [2][]int64
		var gcs [2]int64
		for i, count := range []int{countWarm, countWarm + n} {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", role, count))
			if totals[i], gcs[i], err = counted(role, input, out, count); err != nil {
				return fmt.Errorf("%s: %w", role, err)
			}
		}
		for j := range events {
			per[role] = append(per[role], float64(totals[1][j]-totals[0][j])/float64(n))
		}
		cycles[role] = gcs[1] - gcs[0]
	}
	fmt.Printf("per request, over %d requests after %d, counted by cachegrind\n", n, countWarm)
	// A large live heap spaces the collections out: a count that holds
	// fewer than three of either server's reads low or high by luck.
	fmt.Printf("GC cycles: bare %d, idsauth %d\n", cycles["bare"], cycles[side])
	if cycles["bare"] < 3 || cycles[side] < 3 {
		fmt.Printf("(fewer than 3 collections in the counted requests: the figure does not count; count more requests)\n")
	}
	fmt.Printf("%-10s %12s %12s %12s\n", "", "bare", side, "difference")
	for j, e := range events {
		b, i := per["bare"][j], per[side][j]
		fmt.Printf("%-10s %12.0f %12.0f %+11.0f (%+.1f%%)\n", e, b, i, i-b, 100*(i-b)/b)
	}
	return nil
}

// countLife bounds a counted server's life, and its requests: 100,000
// requests under cachegrind's cache simulation take some 20 minutes of
// one core, more on a busy machine.
const countLife = 45 * time.Minute

// counted runs role under cachegrind for count requests and returns its
// totals of events and the collections it ran.
func counted(role, input, out string, count int) ([]int64, int64, error) {
	var summary strings.Builder
	s, err := startUnder([]string{"valgrind", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=" + out},
		&summary, role, countLife, "", input)
	if err != nil {
		return nil, 0, err
	}
	err = sendEach(s.addr, count)
	s.stopWithin(time.Minute) // valgrind writes its counts as the child exits
	if err != nil {
		return nil, 0, err
	}
	v, err := totals(summary.String())
	if err != nil {
		return nil, 0, err
	}
	m := regexp.MustCompile(`gc-cycles (\d+)`).FindStringSubmatch(summary.String())
	if m == nil {
		return nil, 0, errors.New("the server said nothing of its collections")
	}
	gcs, err := strconv.ParseInt(m[1], 10, 64)
	return v, gcs, err
}

// sendEach sends tokenRequest count times, one after the other on one
// connection; every answer must be a 200.
func sendEach(addr string, count int) error {
	if err := checkLoopback(addr); err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(countLife))
	br := bufio.NewReader(c)
	for range count {
		if _, err := c.Write(tokenRequest); err != nil {
			return err
		}
		status, err := readAnswer(br)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("answered %d", status)
		}
	}
	return nil
}

// totals reads valgrind's summary lines ("==PID== I   refs:  1,234").
func totals(summary string) ([]int64, error) {
	var v []int64
	for _, e := range events {
		name := strings.ReplaceAll(e, " ", `\s+`) // printed with padding
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
