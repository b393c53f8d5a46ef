package pgregistry_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/pgregistry"
)

// loadMillion is -load-million: BenchmarkLoad loads a million clients too
// (about a minute to write them, and about 1 GB of PostgreSQL's disk).
var loadMillion = flag.Bool("load-million", false, "BenchmarkLoad loads 1,000,000 clients too")

// BenchmarkLoad loads registered clients of the stated shape (one SHA-256
// secret hash, three scopes, an epoch) from PostgreSQL into an issuer, as
// a replica does at start: a new Registry, its first snapshot (one
// transaction, the rows decoded by the issuer's own decoder, put in its
// table by SetRegistered), closed. Besides the wall time per client it
// reports the replica's CPU per client (user and system, so the work of
// every goroutine, PostgreSQL's excluded) and the heap the loaded clients
// hold, issuer and registry together, per client. The targets: 5 µs of
// CPU and 800 bytes of heap per client.
func BenchmarkLoad(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if *loadMillion {
		sizes = append(sizes, 1_000_000)
	}
	pg := pgtest.Start(b)
	for _, n := range sizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			u := pg.NewDatabase(b)
			ctx := context.Background()
			if _, _, err := pgregistry.Migrate(ctx, u); err != nil {
				b.Fatal(err)
			}
			registerShaped(b, u, n)
			iss, err := issuer.New(&issuer.Config{Issuer: "https://host.example/ids", EphemeralKey: true, Scopes: []string{"reports.read"}},
				issuer.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			base := heapInUse()
			cpu := cpuTime()
			b.ResetTimer()
			var reg *pgregistry.Registry
			for range b.N {
				if reg != nil {
					reg.Close()
				}
				reg, err = pgregistry.New(ctx, pgregistry.Config{URL: u, Issuer: iss, Reconcile: time.Hour, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				if err := reg.WaitLoaded(wctx); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
			b.StopTimer()
			used := cpuTime() - cpu
			if st := reg.Status(); st.Clients != n || st.Left != 0 {
				b.Fatalf("loaded %+v, want %d clients", st, n)
			}
			held := heapInUse() - base
			runtime.KeepAlive(iss)
			reg.Close()
			per := float64(b.N) * float64(n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/client")
			b.ReportMetric(float64(used.Microseconds())/per, "cpu-µs/client")
			b.ReportMetric(float64(held)/float64(n), "heap-B/client")
		})
	}
}

// registerShaped writes n clients of the stated shape into the registry
// at u: one SHA-256 secret hash, three scopes, a lifetime and an epoch.
func registerShaped(b testing.TB, u string, n int) {
	exec(b, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes, epoch)
		SELECT 'client', 'client-' || i,
			'{"scopes": ["pd_AdminWebApi", "pd_ConnectWebApi", "reports.read"], "accessTokenLifetime": 600}',
			ARRAY['sha256:' || encode(sha256(('secret-' || i)::bytea), 'base64')], i
		FROM generate_series(1, $1) AS i`, n)
	// As a writer by hand must: the rows carry the next generation, which
	// the generation becomes.
	exec(b, u, `UPDATE idsauth_generation SET generation = generation + 1`)
}

// heapInUse is the heap's live bytes after two collections.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
