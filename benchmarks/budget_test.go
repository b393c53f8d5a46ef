package benchmarks

import (
	"flag"
	"testing"
)

// measured runs f as a benchmark of a fixed 2000 iterations, whatever
// -benchtime says, for a test that compares allocations per operation:
// CI runs the benchmarks once each (-benchtime 1x), and one iteration
// counts the warm-up's allocations (pools filled, connections made) as
// the operation's.
func measured(t *testing.T, f func(b *testing.B)) testing.BenchmarkResult {
	t.Helper()
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("2000x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	return testing.Benchmark(f)
}
