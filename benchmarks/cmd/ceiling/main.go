// Command ceiling measures the token endpoint against its ceiling, side by
// side in one run. It starts two servers on loopback, each a child process
// of its own:
//
//   - idsauth: a real issuer.Issuer with an ES256 key and one client with
//     a sha256 secret, answering client_credentials requests with Basic
//     authentication;
//   - bare: a bare net/http handler that answers the same JSON (the same
//     header and claims, taken from one idsauth answer) with one fresh
//     ES256 signature per request, by crypto/ecdsa's hedged signing with
//     the same key.
//
// It then drives each in turn with the same load generator, in rounds
// that alternate (A B, B A, A B, ...), and prints requests/s for each
// round, the CPU each server and the load generator spent per request
// (the scheduler's own count, from /proc/PID/task/*/schedstat), the
// medians and the ratio idsauth/bare, with the CPU model from
// /proc/cpuinfo. With -together both servers are driven at once in every
// round, sharing their CPU, and compared by requests per CPU-second: the
// machine's drift then falls on both alike, but each evicts the other's
// code and data from the caches at every switch, which weighs on the one
// with more code per request. With -counts N it counts instead of timing
// (counts.go): the instructions and cache lines missed per request of
// each server, under valgrind's cachegrind. The load generator is cheap: raw HTTP/1.1 on keep-alive
// connections, one request's bytes (Basic header included) built once
// and written again and again, answers read without allocating.
//
//	go run ./cmd/ceiling -pin                     # 10 rounds each of 2 s, 16 connections
//	go run ./cmd/ceiling -pin -rounds 30 -d 1s    # more, shorter rounds: a steadier median
//	go run ./cmd/ceiling -pin -aa                 # A/A: the harness's own noise
//	go run ./cmd/ceiling -pin -runs 4 -rounds 30 -d 1s   # four runs, new processes each, pooled
//	go run ./cmd/ceiling -counts 2000             # counted: needs valgrind
//
// Everything stays on 127.0.0.1 and stops by itself: every round is
// bounded by -d (at most 60 s), the rounds by -rounds (at most 40 each)
// and -runs (at most 5), and the servers exit when the command closes
// their standard input or when their own deadline passes, whichever comes
// first.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/keys"
)

func main() {
	role := flag.String("role", "", "internal: run as the idsauth or the bare server")
	life := flag.Duration("life", 0, "internal: the server's own deadline")
	d := flag.Duration("d", 2*time.Second, "length of one round, 1s to 60s")
	rounds := flag.Int("rounds", 10, "rounds per server, 1 to 40, alternating")
	conns := flag.Int("c", 16, "keep-alive connections, 1 to 256")
	warm := flag.Duration("warm", time.Second, "warm-up of each server before the rounds, at most 10s")
	profile := flag.String("cpuprofile", "", "write each server's CPU profile to PREFIX-idsauth.pprof and PREFIX-bare.pprof")
	aa := flag.Bool("aa", false, "an A/A check of the harness: a second bare server in idsauth's place")
	pinned := flag.Bool("pin", false, "pin the load generator to CPU 0 and each server to CPU 1, one thread each (GOMAXPROCS 1)")
	together := flag.Bool("together", false, "drive both servers at once in every round, sharing their CPU, and compare requests per CPU-second")
	runs := flag.Int("runs", 1, "runs, 1 to 5, each with a new key and new server processes, pooled at the end")
	counts := flag.Int("counts", 0, "count instead of timing: the instructions and cache lines missed per request of each server, over this many requests (100 to 100000) under valgrind's cachegrind, and the collections each ran within them")
	registry := flag.Int("registry", 0, "with -counts: the idsauth server's client is a registered one, among this many (1 to 1000000, each one secret hash and three scopes) given by Issuer.SetRegistered as pgregistry gives them, none in its configuration")
	cpu := flag.Int("cpu", -1, "internal: the CPU the server is pinned to")
	flag.Parse()
	var err error
	if *role != "" {
		registered = *registry
		if *cpu >= 0 {
			err = pin(*cpu)
		}
		if err == nil {
			err = serve(*role, *life, *profile)
		}
	} else {
		if *pinned {
			if runtime.NumCPU() < 2 {
				err = errors.New("-pin needs two CPUs")
			} else {
				serverCPU = 1
				err = pin(0)
			}
		}
		switch {
		case err != nil:
		case *counts != 0:
			err = runCounts(*counts, *registry)
		default:
			err = run(options{d: *d, warm: *warm, rounds: *rounds, conns: *conns, runs: *runs, profile: *profile, aa: *aa, together: *together})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}

// round is one measured round against one server.
type round struct {
	server    string
	perSecond float64
	requests  int64
	errors    int64
	serverCPU time.Duration // per request
	loadCPU   time.Duration // per request
}

// options are the command's flags for the timed runs.
type options struct {
	d, warm             time.Duration
	rounds, conns, runs int
	profile             string
	aa, together        bool
}

func run(o options) error {
	switch {
	case o.d < time.Second || o.d > time.Minute:
		return errors.New("-d must be from 1s to 60s")
	case o.rounds < 1 || o.rounds > 40:
		return errors.New("-rounds must be from 1 to 40")
	case o.conns < 1 || o.conns > 256:
		return errors.New("-c must be from 1 to 256")
	case o.warm < 0 || o.warm > 10*time.Second:
		return errors.New("-warm must be from 0 to 10s")
	case o.runs < 1 || o.runs > 5:
		return errors.New("-runs must be from 1 to 5")
	case o.runs > 1 && o.profile != "":
		return errors.New("-cpuprofile takes one run")
	}
	fmt.Printf("cpu: %s (%d logical CPUs), %s %s/%s, GOMAXPROCS %d\n",
		cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Printf("load: %d connections, %d rounds of %s per server, alternating; warm-up %s each\n", o.conns, o.rounds, o.d, o.warm)
	if serverCPU >= 0 {
		fmt.Printf("pinned: the load generator to CPU 0, each server to CPU %d, GOMAXPROCS 1 each\n", serverCPU)
	}
	if o.aa {
		fmt.Println("A/A check: the idsauth rows are a second bare server")
	}
	if o.together {
		fmt.Println("together: both servers driven at once in every round, each with the connections above, on the same CPU(s)")
	}
	stat0, own0 := machineCPU(), selfCPU()
	var all []round
	var servers time.Duration // the CPU of every run's servers
	for k := range o.runs {
		if o.runs > 1 {
			fmt.Printf("run %d of %d: a new key and new server processes\n", k+1, o.runs)
		}
		rounds, cpu, err := runOnce(o)
		if err != nil {
			return err
		}
		summarize(rounds, o.together)
		all = append(all, rounds...)
		servers += cpu
	}
	if o.runs > 1 {
		fmt.Printf("pooled   the %d runs' rounds, each pair kept within its run\n", o.runs)
		summarize(all, o.together)
	}
	if stat1 := machineCPU(); stat1.total > stat0.total {
		total := float64(stat1.total - stat0.total)
		own := float64(selfCPU()+servers-own0) / float64(10*time.Millisecond)
		// Both sides are sampled at clock ticks: a rough figure.
		others := max(0, 100*(float64(stat1.busy-stat0.busy)-own)/total)
		fmt.Printf("machine  during the rounds: about %.0f%% of all CPUs busy with work other than this command's, steal %.1f%%\n",
			others, 100*float64(stat1.steal-stat0.steal)/total)
	}
	return nil
}

// runOnce starts the two servers with a new key, drives them for o's
// rounds and stops them. It returns the rounds and the CPU the servers
// spent in all. Each run's processes lie differently in memory and in the
// caches, which moves a server's speed by a few percent for the whole run
// (the A/A check shows it): runs, pooled, average that out where more
// rounds of one run cannot.
func runOnce(o options) (rounds []round, serversCPU time.Duration, err error) {
	// The servers' own deadline: every round and warm-up, with room to
	// start and stop.
	life := time.Duration(2*o.rounds)*(o.d+2*time.Second) + 2*o.warm + time.Minute

	k, err := keys.Generate("ES256")
	if err != nil {
		return nil, 0, err
	}
	pemKey, err := keys.EncodePEM(k.Private)
	if err != nil {
		return nil, 0, err
	}
	ids, err := start("idsauth", life, o.profile, string(pemKey))
	if err != nil {
		return nil, 0, err
	}
	defer func() { ids.stop() }()
	// The bare server answers what idsauth answers, with a new signature.
	answer, err := fetch(ids.addr, tokenRequest)
	if err != nil {
		return nil, 0, fmt.Errorf("idsauth server: %w", err)
	}
	bare, err := start("bare", life, o.profile, string(pemKey)+string(answer))
	if err != nil {
		return nil, 0, err
	}
	defer bare.stop()
	if _, err := fetch(bare.addr, tokenRequest); err != nil {
		return nil, 0, fmt.Errorf("bare server: %w", err)
	}
	if o.aa {
		ids.stop()
		if ids, err = start("bare", life, "", string(pemKey)+string(answer)); err != nil {
			return nil, 0, err
		}
		ids.name = "idsauth"
	}
	if o.warm > 0 {
		for _, s := range []*server{ids, bare} {
			if _, err := measure(s, o.conns, o.warm); err != nil {
				return nil, 0, err
			}
		}
	}
	for i := range o.rounds {
		if o.together {
			pair, err := measureTogether(ids, bare, o.conns, o.d)
			if err != nil {
				return nil, 0, err
			}
			for _, r := range pair {
				fmt.Printf("round %2d %-8s %8.0f req/s  %7d requests  %d errors  server %6.1f µs CPU/req  %7.0f req per CPU-second\n",
					i+1, r.server, r.perSecond, r.requests, r.errors, micros(r.serverCPU), perCPUSecond(r))
			}
			rounds = append(rounds, pair[:]...)
			continue
		}
		order := []*server{ids, bare}
		if i%2 == 1 {
			order = []*server{bare, ids}
		}
		for _, s := range order {
			r, err := measure(s, o.conns, o.d)
			if err != nil {
				return nil, 0, err
			}
			fmt.Printf("round %2d %-8s %8.0f req/s  %7d requests  %d errors  server %6.1f µs CPU/req  loadgen %5.1f µs CPU/req\n",
				i+1, r.server, r.perSecond, r.requests, r.errors, micros(r.serverCPU), micros(r.loadCPU))
			rounds = append(rounds, r)
		}
	}
	return rounds, ids.cpu() + bare.cpu(), nil
}

// measureTogether drives a and b at once for d, each on its own
// connections, and returns the round's figures for each. Sharing the
// CPU at every instant, the two see the same machine: what the machine
// does to one (other work, a slower clock) it does to the other.
func measureTogether(a, b *server, conns int, d time.Duration) ([2]round, error) {
	var out [2]round
	errs := make(chan error, 2)
	for i, s := range []*server{a, b} {
		go func() {
			r, err := measure(s, conns, d)
			out[i] = r
			errs <- err
		}()
	}
	err1, err2 := <-errs, <-errs
	return out, errors.Join(err1, err2)
}

// perCPUSecond is a round's requests per second of the server's CPU:
// what one core of it serves.
func perCPUSecond(r round) float64 {
	if r.serverCPU <= 0 {
		return 0
	}
	return float64(time.Second) / float64(r.serverCPU)
}

// measure drives s for d and returns the round's figures.
func measure(s *server, conns int, d time.Duration) (round, error) {
	cpu0, self0 := s.cpu(), selfCPU()
	res, err := drive(s.addr, tokenRequest, conns, d)
	if err != nil {
		return round{}, fmt.Errorf("%s server: %w", s.name, err)
	}
	r := round{server: s.name, requests: res.ok, errors: res.failed, perSecond: float64(res.ok) / res.elapsed.Seconds()}
	if res.ok > 0 {
		r.serverCPU = (s.cpu() - cpu0) / time.Duration(res.ok)
		r.loadCPU = (selfCPU() - self0) / time.Duration(res.ok)
	}
	return r, nil
}

func summarize(all []round, together bool) {
	pick := func(name string, f func(round) float64) []float64 {
		var v []float64
		for _, r := range all {
			if r.server == name {
				v = append(v, f(r))
			}
		}
		return v
	}
	rate := func(r round) float64 { return r.perSecond }
	cpu := func(r round) float64 { return micros(r.serverCPU) }
	ids, bare := pick("idsauth", rate), pick("bare", rate)
	var pairs []float64
	for i := range ids {
		pairs = append(pairs, ids[i]/bare[i])
	}
	mi, mb := median(ids), median(bare)
	ci, cb := median(pick("idsauth", cpu)), median(pick("bare", cpu))
	fmt.Printf("median   idsauth  %8.0f req/s  server %6.1f µs CPU/req\n", mi, ci)
	fmt.Printf("median   bare     %8.0f req/s  server %6.1f µs CPU/req\n", mb, cb)
	fmt.Printf("pairs    idsauth/bare per round pair: %s\n", fmtList(pairs))
	lo, hi := bootstrapMedian(pairs, 10000)
	fmt.Printf("ratio    idsauth/bare: %.3f (median of the round pairs; bootstrap 95%% interval %.3f to %.3f), %.3f (ratio of the medians); CPU per request bare/idsauth %.3f\n",
		median(pairs), lo, hi, mi/mb, cb/ci)
	if together {
		per := func(name string) []float64 { return pick(name, perCPUSecond) }
		ids, bare := per("idsauth"), per("bare")
		var ratios []float64
		for i := range ids {
			ratios = append(ratios, ids[i]/bare[i])
		}
		fmt.Printf("per CPU  idsauth/bare requests per CPU-second, per round: %s\n", fmtList(ratios))
		fmt.Printf("result   idsauth serves %.3f of the bare server per CPU-second (median of the rounds; min %.3f, max %.3f)\n",
			median(ratios), slices.Min(ratios), slices.Max(ratios))
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// bootstrapMedian is the percentile bootstrap's 95% interval for the
// median of v: the 2.5th and 97.5th percentiles of the medians of n
// resamples of v, drawn with replacement. The draws come from a fixed
// seed, so the same rounds always give the same interval.
func bootstrapMedian(v []float64, n int) (lo, hi float64) {
	if len(v) == 0 || n < 1 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(1, 2))
	medians := make([]float64, n)
	sample := make([]float64, len(v))
	for i := range medians {
		for j := range sample {
			sample[j] = v[rng.IntN(len(v))]
		}
		medians[i] = median(sample)
	}
	slices.Sort(medians)
	return medians[n*25/1000], medians[(n*975-1)/1000]
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
