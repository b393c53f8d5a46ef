package pgregistry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idsauth/idsauth/internal/pgtest"
	"github.com/idsauth/idsauth/pgregistry"
	"github.com/idsauth/idsauth/scope"
)

// BenchmarkRegistryChange measures a change to a registry of 100,000
// clients of the stated shape, on a real PostgreSQL, served by two
// replicas of one process: each iteration disables or enables a client
// through replica a's administration API, then waits until both replicas
// serve the change's generation. It reports, as metrics of its own:
//
//   - cpu-ms/change: this process's CPU per change (user and system: both
//     replicas applying it, the administration API, the benchmark's own
//     client), so at least twice what one replica spends;
//   - B/change: the bytes allocated per change, both replicas and the
//     administration API together;
//   - ms-visible-p50, ms-visible-p99: from the administration request's
//     start until both replicas serve the change;
//   - ms-admin-p99: the administration API's answer.
//
// The targets (issue 41): at most 10 ms of CPU per change per replica,
// visible on both within 100 ms (p99), the administration API within 50
// ms (p99), at most 64 KiB allocated per change per replica.
//
// Its sub-benchmark tokens-under-changes asks replica b for tokens, one
// request an iteration, in rounds of 2 s alternately without changes and
// with 1,000 changes a minute written by SQL as the administration API
// writes them (replica a closed: only b applies them here), and reports the token
// endpoint's p99 in each (µs-token-p99-quiet, µs-token-p99-changing):
// the target is the second within 10% of the first. Run it for a number
// of rounds: -benchtime 40s.
func BenchmarkRegistryChange(b *testing.B) {
	const n = 100_000
	pg := pgtest.Start(b)
	u := pg.NewDatabase(b)
	if _, _, err := pgregistry.Migrate(context.Background(), u); err != nil {
		b.Fatal(err)
	}
	registerShaped(b, u, n)
	slow := func(c *pgregistry.Config) { c.Reconcile = time.Hour } // LISTEN/NOTIFY alone
	ra, rb := newReplicaConfig(b, u, slow), newReplicaConfig(b, u, slow)
	for _, r := range []*replica{ra, rb} {
		if st := r.reg.Status(); st.Clients != n {
			b.Fatalf("loaded %+v, want %d clients", st, n)
		}
	}
	admin := newAdminCaller(b, ra)
	db, err := pgx.Connect(context.Background(), u)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close(context.Background())
	k := 0
	// post makes one change at a and returns the administration API's
	// time.
	post := func() (time.Duration, error) {
		k++
		id, verb := fmt.Sprint("client-", 1+(k+1)/2%1000), "disable"
		if k%2 == 0 {
			verb = "enable" // the client disabled by the change before
		}
		start := time.Now()
		if err := admin.post("/clients/" + id + "/" + verb); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	// change is post, returning once both replicas serve the generation
	// it committed.
	change := func() (time.Duration, error) {
		start := time.Now()
		took, err := post()
		if err != nil {
			return 0, err
		}
		var gen int64
		if err := db.QueryRow(context.Background(), `SELECT generation FROM idsauth_generation`).Scan(&gen); err != nil {
			return 0, err
		}
		for ra.reg.Status().Generation < gen || rb.reg.Status().Generation < gen {
			if time.Since(start) > 10*time.Second {
				return 0, fmt.Errorf("change %d: generation %d not served after 10 s (a %d, b %d)", k, gen, ra.reg.Status().Generation, rb.reg.Status().Generation)
			}
			time.Sleep(100 * time.Microsecond)
		}
		return took, nil
	}

	b.Run("change", func(b *testing.B) {
		admins := make([]time.Duration, 0, b.N)
		visible := make([]time.Duration, 0, b.N)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu := cpuTime()
		changes := rb.reg.Status().Changes
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			took, err := change()
			if err != nil {
				b.Fatal(err)
			}
			admins = append(admins, took)
			visible = append(visible, time.Since(start))
		}
		b.StopTimer()
		used := cpuTime() - cpu
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if got := rb.reg.Status().Changes - changes; got < uint64(b.N) {
			b.Fatalf("%d changes applied as changes at b, of %d: the others loaded whole", got, b.N)
		}
		b.ReportMetric(float64(used.Microseconds())/1000/float64(b.N), "cpu-ms/change")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N), "B/change")
		b.ReportMetric(ms(percentile(visible, 50)), "ms-visible-p50")
		b.ReportMetric(ms(percentile(visible, 99)), "ms-visible-p99")
		b.ReportMetric(ms(percentile(admins, 99)), "ms-admin-p99")
	})

	b.Run("tokens-under-changes", func(b *testing.B) {
		const round, every = 2 * time.Second, 60 * time.Millisecond // 1,000 changes a minute
		tokens := newTokenCaller(b, rb, "client-50000", "secret-50000")
		// The changes come from a writer elsewhere, by SQL as a replica's
		// administration API makes them: only b, asked for tokens,
		// applies them in this process.
		ra.reg.Close()
		j := 0
		write := func() error {
			j++
			ctx := context.Background()
			tx, err := db.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) //nolint:errcheck // after Commit, nothing
			if _, err := tx.Exec(ctx, `UPDATE idsauth_registrations SET disabled = NOT disabled WHERE kind = 'client' AND id = $1`, fmt.Sprint("client-", 1+j%1000)); err != nil {
				return err
			}
			var gen int64
			if err := tx.QueryRow(ctx, `UPDATE idsauth_generation SET generation = generation + 1 RETURNING generation`).Scan(&gen); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_notify('idsauth_registry', $1)`, fmt.Sprint(gen)); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
		var busy atomic.Bool
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // rounds of 2 s, alternately quiet and changing
			flip, tick := time.NewTicker(round), time.NewTicker(every)
			defer flip.Stop()
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-flip.C:
					busy.Store(!busy.Load())
				case <-tick.C:
					if !busy.Load() {
						continue
					}
					if err := write(); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
		var quiet, changing []time.Duration
		b.ResetTimer()
		for range b.N {
			now := busy.Load()
			d := tokens.get(b)
			if now != busy.Load() {
				continue // the round changed during the request
			}
			if now {
				changing = append(changing, d)
			} else {
				quiet = append(quiet, d)
			}
		}
		b.StopTimer()
		close(stop)
		wg.Wait()
		if len(quiet) > 0 && len(changing) > 0 {
			b.ReportMetric(float64(percentile(quiet, 99).Microseconds()), "µs-token-p99-quiet")
			b.ReportMetric(float64(percentile(changing, 99).Microseconds()), "µs-token-p99-changing")
		}
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the p-th percentile of ds (sorted in place).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)-1)*p/100]
}

// adminCaller calls a replica's administration API with one operator
// token, fetched once.
type adminCaller struct {
	base, token string
}

func newAdminCaller(b testing.TB, r *replica) *adminCaller {
	tok := newTokenCaller(b, r, "operator", operatorSecret)
	tok.form.Set("scope", pgregistry.AdminScope)
	return &adminCaller{base: r.issuerURL() + "/admin", token: tok.token(b)}
}

func (a *adminCaller) post(path string) error {
	req, _ := http.NewRequest(http.MethodPost, a.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, body)
	}
	return nil
}

// tokenCaller asks a replica's token endpoint for tokens of one client.
type tokenCaller struct {
	url, id, secret string
	form            url.Values
}

func newTokenCaller(b testing.TB, r *replica, id, secret string) *tokenCaller {
	return &tokenCaller{url: r.issuerURL() + "/connect/token", id: id, secret: secret,
		form: url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}}}
}

// token returns a token, or fails b.
func (c *tokenCaller) token(b testing.TB) string {
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", basic(c.id, c.secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 || body.AccessToken == "" {
		b.Fatalf("token of %s: %d (%v)", c.id, resp.StatusCode, err)
	}
	return body.AccessToken
}

// get times one token request.
func (c *tokenCaller) get(b testing.TB) time.Duration {
	start := time.Now()
	c.token(b)
	return time.Since(start)
}
