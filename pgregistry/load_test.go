package pgregistry_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/pgregistry"
)

// BenchmarkLoad10000 loads 10,000 registered clients (each with a sha256
// secret hash) from PostgreSQL into an issuer, as a replica does at start
// and at every change: a new Registry, its first snapshot (one
// transaction, the rows decoded by the issuer's own decoder, compiled and
// swapped in by SetRegistered), closed. The target is under a second.
func BenchmarkLoad10000(b *testing.B) {
	pg := pgtest.Start(b)
	u := pg.NewDatabase(b)
	ctx := context.Background()
	if _, _, err := pgregistry.Migrate(ctx, u); err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	exec(b, u, `INSERT INTO idsauth_registrations (kind, id, config, secret_hashes)
		SELECT 'client', 'client-' || i, '{"scopes": ["pd_AdminWebApi"], "accessTokenLifetime": 600}',
			ARRAY['sha256:' || encode(sha256(('secret-' || i)::bytea), 'base64')]
		FROM generate_series(1, $1) AS i`, n)
	iss := testIssuer(b)
	b.ResetTimer()
	for range b.N {
		reg, err := pgregistry.New(ctx, pgregistry.Config{URL: u, Issuer: iss, Reconcile: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := reg.WaitLoaded(wctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		if st := reg.Status(); st.Clients != n || st.Left != 0 {
			b.Fatalf("loaded %+v, want %d clients", st, n)
		}
		reg.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/client")
}
