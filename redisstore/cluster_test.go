package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/tokenstore"
)

var cluster = kinds[1]

// TestClusterKeysOfASubjectShareASlot: on a cluster, every key of one
// subject (its bucket, its pair marks with 8 addresses, its jtis) and the
// clock its script reads have one slot by CLUSTER KEYSLOT, whatever the
// addresses; each address's bucket has the slot of its own tag, with the
// clock of that tag; the addresses spread over the masters. A grant of
// the token store has no tag: 30 grants spread over all three masters.
func TestClusterKeysOfASubjectShareASlot(t *testing.T) {
	srv := cluster.start(t)
	rdb := srv.client(t)
	ctx := context.Background()
	const prefix = "idsauth:token:"
	store := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	budget := limit.Budget{PerSubject: 100, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}
	for _, subject := range []string{"payroll", "reports"} {
		for i := range 8 {
			res, err := store.Reserve(ctx, limit.Request{Subject: subject, Address: fmt.Sprintf("203.0.113.%d", i), Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				res.Succeeded()
			} else {
				res.Failed()
			}
		}
		for i := range 3 {
			if _, err := store.Remember(ctx, limit.Replay{Subject: subject, ID: fmt.Sprint("jti-", i), Until: time.Now().Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys := srv.keys(t, prefix+"*")
	byKind := map[byte][]string{}
	for _, k := range keys {
		byKind[k[len(prefix)]] = append(byKind[k[len(prefix)]], k)
	}
	if len(byKind['s']) != 2 || len(byKind['p']) != 16 || len(byKind['r']) != 6 || len(byKind['a']) != 8 {
		t.Fatalf("keys by kind: %q", byKind)
	}
	clockOf := map[string]string{} // tag → clock
	for _, c := range byKind['c'] {
		clockOf[tag(c)] = c
	}
	// Each subject's tag holds its bucket, 8 pair marks and 3 jtis, and
	// its clock, all on the bucket's slot.
	for _, s := range byKind['s'] {
		want := srv.slot(t, s)
		var mine []string
		for _, k := range slices.Concat(byKind['p'], byKind['r']) {
			if tag(k) == tag(s) {
				mine = append(mine, k)
			}
		}
		if len(mine) != 8+3 {
			t.Fatalf("the subject's bucket %q: %d pair marks and jtis with its tag, want 11: %q", s, len(mine), mine)
		}
		for _, k := range append(mine, clockOf[tag(s)]) {
			if got := srv.slot(t, k); got != want {
				t.Errorf("%q has slot %d, its subject's bucket %q %d", k, got, s, want)
			}
		}
	}
	masters := map[int]bool{}
	for _, a := range byKind['a'] {
		c, ok := clockOf[tag(a)]
		if !ok || srv.slot(t, c) != srv.slot(t, a) {
			t.Errorf("the address's bucket %q has no clock on its slot (%q)", a, c)
		}
		masters[srv.nodeOf(t, a)] = true
	}
	if len(masters) < 2 {
		t.Errorf("8 addresses' buckets on %d master(s): want them spread", len(masters))
	}
	if len(clockOf) > 2+8 {
		t.Errorf("%d clocks for 2 subjects and 8 addresses", len(clockOf))
	}

	tokens := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	now := time.Now()
	for i := range 30 {
		if err := tokens.Put(ctx, tokenstore.KeyOf(fmt.Sprint("token-", i)), tokenstore.Grant{ClientID: "payroll", Scopes: []string{scope.AdminWebAPI}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range srv.nodes {
		got, err := n.Do("EVAL", "return #redis.call('KEYS', ARGV[1])", "0", "idsauth:ref:*")
		if err != nil || got == "0" {
			t.Errorf("master %d holds %s grants (%v): want the 30 spread over all", i, got, err)
		}
	}
}

// placed finds, by trying subjects in turn, a subject whose keys are on
// master want (and not, unless want is, on master 0), and an address whose
// bucket is on master want too: it asks the store (Remember, Reserve)
// and looks where the keys appeared.
func placed(t *testing.T, srv *redisServer, store *redisstore.Store, prefix string, want int) (subject, addr string) {
	t.Helper()
	ctx := context.Background()
	newKey := func(pattern string, do func()) string {
		t.Helper()
		before := srv.keys(t, pattern)
		do()
		for _, k := range srv.keys(t, pattern) {
			if !slices.Contains(before, k) {
				return k
			}
		}
		t.Fatalf("no new key %s", pattern)
		return ""
	}
	for i := 0; subject == "" || addr == ""; i++ {
		if i == 200 {
			t.Fatalf("no subject and address on master %d in 200 tries", want)
		}
		if subject == "" {
			s := fmt.Sprint("client-", i)
			k := newKey(prefix+"r:*", func() {
				if _, err := store.Remember(ctx, limit.Replay{Subject: s, ID: fmt.Sprint("probe-", want), Until: time.Now().Add(time.Minute)}); err != nil {
					t.Fatal(err)
				}
			})
			if srv.nodeOf(t, k) == want {
				subject = s
			}
			continue
		}
		a := fmt.Sprintf("198.51.%d.%d", want, i)
		k := newKey(prefix+"a:*", func() {
			res, err := store.Reserve(ctx, limit.Request{Subject: subject, Address: a, Budget: limit.Budget{PerSubject: 100, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			res.Succeeded()
		})
		if srv.nodeOf(t, k) == want {
			addr = a
		}
	}
	return subject, addr
}

// cachedScripts is the number of scripts node n holds (INFO memory).
func cachedScripts(t *testing.T, srv *redisServer, n int) string {
	t.Helper()
	info, err := srv.nodes[n].Do("INFO", "memory")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "number_of_cached_scripts:"); ok {
			return v
		}
	}
	t.Fatalf("no number_of_cached_scripts in INFO memory of master %d", n)
	return ""
}

// TestClusterScriptsRunOnEveryMaster: the client knows only the first
// master; a subject and an address whose keys are on the third master
// (which has no script yet: EVALSHA answers NOSCRIPT there, and the store
// sends the script) keep every rule: the address's budget, the subject's,
// the pair marks, trust; and after SCRIPT FLUSH on that master, the store
// loads its scripts there again.
func TestClusterScriptsRunOnEveryMaster(t *testing.T) {
	srv := cluster.start(t)
	rdb := srv.client(t)
	ctx := context.Background()
	const prefix = "every:"
	probe := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	for n := range srv.nodes {
		if got := cachedScripts(t, srv, n); got != "0" {
			t.Fatalf("master %d holds %s scripts before any call", n, got)
		}
	}
	subject, addr := placed(t, srv, probe, prefix, 2)
	if got := cachedScripts(t, srv, 2); got == "0" {
		t.Fatal("the third master holds no script after the store's calls to it")
	}
	for _, flush := range []bool{false, true} {
		if flush {
			if _, err := srv.nodes[2].Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		// A store of its own per round: the budgets start full.
		store := redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("every%v:", flush), OnUnavailable: redisstore.FailClosed})
		budget := limit.Budget{PerSubject: 2, PerAddress: 3, Window: time.Minute, Trust: 24 * time.Hour}
		reserve := func(a string) (limit.Reservation, error) {
			return store.Reserve(ctx, limit.Request{Subject: subject, Address: a, Budget: budget})
		}
		var got []string
		for _, a := range []string{addr, addr, "192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.3"} {
			res, err := reserve(a)
			var no *limit.Refusal
			switch {
			case err == nil:
				got = append(got, "ok")
				res.Failed()
			case errors.As(err, &no):
				got = append(got, string(no.Limit))
			default:
				t.Fatal(err)
			}
		}
		// The subject's budget of 2 is spent by addr's failures; 192.0.2.1
		// may try once (and is marked), then is refused; the others once.
		if want := "[ok ok ok subject+address ok ok]"; fmt.Sprint(got) != want {
			t.Errorf("flushed %v: %v, want %v", flush, got, want)
		}
		if _, err := reserve(addr); err == nil || !strings.Contains(err.Error(), "subject+address") {
			t.Errorf("flushed %v: addr, marked, again: %v", flush, err)
		}
		if st := store.Stats(); st.Errors != 0 || st.Unavailable != 0 {
			t.Errorf("flushed %v: stats %+v", flush, st)
		}
	}
	if got := cachedScripts(t, srv, 2); got == "0" {
		t.Fatal("after SCRIPT FLUSH, the store did not load its scripts on the third master again")
	}
}

// TestClusterMasterFails: one master of three is killed, on a cluster
// that keeps serving the slots it still covers
// (cluster-require-full-coverage no). A subject and an address on a live
// master keep the shared budgets and jtis; those on the dead master get
// the store's documented degraded behaviour: FailOpen decides in the
// process's own memory, FailClosed refuses with limit.ErrUnavailable;
// the token store fails their calls. The dead master costs one failed
// call per RetryInterval, however the requests to live and dead masters
// interleave, and the log names it. On a cluster that requires full
// coverage (Redis's default), once the others call the master failed,
// every call fails, and every request degrades.
func TestClusterMasterFails(t *testing.T) {
	for _, c := range []struct {
		name string
		mode redisstore.FailureMode
	}{{"FailOpen", redisstore.FailOpen}, {"FailClosed", redisstore.FailClosed}} {
		t.Run(c.name, func(t *testing.T) {
			srv := cluster.start(t, "--cluster-require-full-coverage", "no")
			ctx := context.Background()
			const prefix = "fails:"
			logs, logger := testlog.New()
			store := redisstore.New(srv.client(t), redisstore.Options{Prefix: prefix, OnUnavailable: c.mode, RetryInterval: time.Hour, Logger: logger})
			live, liveAddr := placed(t, srv, store, prefix, 1)
			dead, deadAddr := placed(t, srv, store, prefix, 2)
			tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "fails:ref:"})
			liveToken, deadToken := tokenOn(t, srv, tokens, 1), tokenOn(t, srv, tokens, 2)
			before := store.Stats()
			srv.nodes[2].Kill()

			budget := limit.Budget{PerSubject: 3, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}
			// The dead subject from the live address: the address's
			// master answers, the subject's does not, and the fallback
			// decides; the failure charged to the address in Redis (an
			// hour ahead, its whole budget) is given back: no bucket on
			// the live masters holds a time past Redis's TIME.
			res, err := store.Reserve(ctx, limit.Request{Subject: dead, Address: liveAddr, Budget: limit.Budget{PerSubject: 3, PerAddress: 1, Window: time.Hour, Trust: 24 * time.Hour}})
			switch {
			case err == nil:
				res.Succeeded()
			case !errors.Is(err, limit.ErrUnavailable):
				t.Fatal(err)
			}
			for _, n := range srv.nodes[:2] {
				ahead, err := n.Do("EVAL", `local t = redis.call('TIME')
local now, n = tonumber(t[1]) * 1000000 + tonumber(t[2]), 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  if tonumber(redis.call('GET', k)) > now then n = n + 1 end
end
return n`, "0", prefix+"a:*")
				if err != nil || ahead != "0" {
					t.Errorf("master %s: %s address buckets hold a failure (%v)", n.Addr, ahead, err)
				}
			}
			var liveGot, deadGot []string
			for i := range 6 {
				for _, r := range []struct {
					subject, addr string
					got           *[]string
				}{{live, liveAddr, &liveGot}, {dead, deadAddr, &deadGot}} {
					res, err := store.Reserve(ctx, limit.Request{Subject: r.subject, Address: r.addr, Budget: budget})
					var no *limit.Refusal
					switch {
					case err == nil:
						*r.got = append(*r.got, "ok")
						res.Failed()
					case errors.As(err, &no):
						*r.got = append(*r.got, "refused")
					case errors.Is(err, limit.ErrUnavailable):
						*r.got = append(*r.got, "unavailable")
					default:
						t.Fatalf("request %d: %v", i, err)
					}
				}
			}
			// The live subject's budget is in Redis, where placed left
			// liveAddr trusted for it: its first failure is not charged to
			// the subject. The dead one's is in memory (FailOpen), or
			// refused (FailClosed).
			if want := "[ok ok ok ok refused refused]"; fmt.Sprint(liveGot) != want {
				t.Errorf("the subject on a live master: %v, want %v", liveGot, want)
			}
			wantDead := "[ok ok ok refused refused refused]"
			if c.mode == redisstore.FailClosed {
				wantDead = "[unavailable unavailable unavailable unavailable unavailable unavailable]"
			}
			if fmt.Sprint(deadGot) != wantDead {
				t.Errorf("the subject on the dead master: %v, want %v", deadGot, wantDead)
			}
			for _, r := range []struct {
				subject string
				redis   bool
			}{{live, true}, {dead, false}} {
				fresh, err := store.Remember(ctx, limit.Replay{Subject: r.subject, ID: "jti", Until: time.Now().Add(time.Minute)})
				switch {
				case r.redis || c.mode == redisstore.FailOpen:
					if !fresh || err != nil {
						t.Errorf("Remember for %s: %v, %v", r.subject, fresh, err)
					}
				case !errors.Is(err, limit.ErrUnavailable):
					t.Errorf("Remember for %s, FailClosed: %v", r.subject, err)
				}
			}
			st := store.Stats()
			st.Redis -= before.Redis
			decidedLocally := st.Fallback + st.Unavailable
			if st.Errors != 1 || st.Redis != 6+1 || decidedLocally != 1+6+1 {
				t.Errorf("stats since the kill %+v: want 1 failed call, 7 decided by Redis, 8 without", st)
			}
			if out := logs.String(); !strings.Contains(out, `"node":"`+srv.nodes[2].Addr+`"`) || strings.Contains(out, dead) {
				t.Errorf("the log does not name the dead master, or names the subject:\n%s", out)
			}
			if _, ok, err := tokens.Get(ctx, liveToken, time.Now()); !ok || err != nil {
				t.Errorf("a grant on a live master: %v, %v", ok, err)
			}
			if _, _, err := tokens.Get(ctx, deadToken, time.Now()); err == nil {
				t.Error("a grant on the dead master: no error")
			}
		})
	}
	t.Run("a replica takes over", func(t *testing.T) {
		srv := cluster.start(t, "--cluster-node-timeout", "500")
		srv.cluster.AddReplica(t, 2)
		ctx := context.Background()
		const prefix = "failover:"
		// A bound of a second, not 150 ms: the first call to the promoted
		// replica makes a connection and loads a script, which under load
		// (-race, a shared machine) may take longer than 150 ms, and a
		// call its caller gave up on may still be applied: a failure
		// charged while the reservation was refused, which this test
		// would count as the replica's. A dead master refuses at once.
		store := redisstore.New(srv.client(t), redisstore.Options{Prefix: prefix, OnUnavailable: redisstore.FailClosed, RetryInterval: 10 * time.Millisecond, Timeout: time.Second})
		subject, _ := placed(t, srv, store, prefix, 2)
		// The token store, on a client of its own: nothing the limiter's
		// calls do reloads its map of the slots.
		tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "fails:ref:", Timeout: time.Second})
		grant := tokenOn(t, srv, tokens, 2)
		budget := limit.Budget{PerSubject: 3, PerAddress: 100, Window: time.Hour, Trust: 24 * time.Hour}
		reserve := func() error {
			res, err := store.Reserve(ctx, limit.Request{Subject: subject, Address: "192.0.2.1", Budget: budget})
			if err == nil {
				res.Failed()
			}
			return err
		}
		for range 2 {
			if err := reserve(); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := srv.nodes[2].Do("WAIT", "1", "5000"); err != nil || n != "1" {
			t.Fatalf("WAIT for the replica: %s, %v", n, err)
		}
		srv.nodes[2].Kill()
		if got, want := answering(t, tokens), map[string]bool{srv.nodes[0].Addr: true, srv.nodes[1].Addr: true, srv.nodes[2].Addr: false}; !maps.Equal(got, want) {
			t.Errorf("the token store's masters with the third killed: %v, want %v", got, want)
		}
		// Refused (FailClosed) until the replica is promoted and the
		// client has learnt it; counted, not timed.
		unavailable := 0
		for err := reserve(); ; err = reserve() {
			if !errors.Is(err, limit.ErrUnavailable) {
				if err != nil {
					t.Fatalf("after %d refusals: %v", unavailable, err)
				}
				break
			}
			if unavailable++; unavailable == 2000 {
				t.Fatalf("the replica's slots never answered through the store: %+v", store.Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
		// The replica kept the two failures charged before: one more, and
		// the subject's budget of 3 is spent.
		var no *limit.Refusal
		if err := reserve(); !errors.As(err, &no) {
			t.Errorf("after the failover, a fourth failure: %v, want refused", err)
		}
		t.Logf("%d requests refused while the replica took over; stats %+v", unavailable, store.Stats())
		// The token store finds the replica too, and its grant there,
		// within a few tries: not after go-redis's minute, which 200
		// failed look-ups (each a few dials refused) do not reach.
		failed := 0
		for {
			_, ok, err := tokens.Get(ctx, grant, time.Now())
			if ok {
				break
			}
			if failed++; failed == 200 {
				t.Fatalf("the token store never reached the replica's slots in %d look-ups: %v, found %v", failed, err, ok)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%d look-ups of a grant failed while the replica took over", failed)
		if got, want := answering(t, tokens), map[string]bool{srv.nodes[0].Addr: true, srv.nodes[1].Addr: true, srv.cluster.Replicas[0].Addr: true}; !maps.Equal(got, want) {
			t.Errorf("the token store's masters after the failover: %v, want %v", got, want)
		}
	})
	t.Run("full coverage required", func(t *testing.T) {
		srv := cluster.start(t, "--cluster-node-timeout", "500")
		ctx := context.Background()
		const prefix = "full:"
		store := redisstore.New(srv.client(t), redisstore.Options{Prefix: prefix, RetryInterval: time.Millisecond})
		live, liveAddr := placed(t, srv, store, prefix, 1)
		srv.nodes[2].Kill()
		for i := 0; ; i++ {
			info, err := srv.nodes[0].Do("CLUSTER", "INFO")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(info, "cluster_state:fail") {
				break
			}
			if i == 400 {
				t.Fatalf("the others never called the dead master failed:\n%s", info)
			}
			time.Sleep(25 * time.Millisecond)
		}
		before := store.Stats()
		for range 5 {
			res, err := store.Reserve(ctx, limit.Request{Subject: live, Address: liveAddr, Budget: limit.Budget{PerSubject: 100, PerAddress: 100, Window: time.Minute, Trust: 24 * time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			res.Succeeded()
			time.Sleep(2 * time.Millisecond) // past the RetryInterval: each asks Redis
		}
		if st := store.Stats(); st.Redis != before.Redis || st.Fallback != before.Fallback+5 {
			t.Errorf("stats %+v, before %+v: want the 5 on a live master decided by the fallback (CLUSTERDOWN)", st, before)
		}
	})
}

// answering is what Masters says of tokens' masters: whether each
// answers, by address.
func answering(t *testing.T, tokens *redisstore.TokenStore) map[string]bool {
	t.Helper()
	masters, err := tokens.Masters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range masters {
		got[m.Addr] = m.Answers
	}
	return got
}

// tokenOn stores a grant whose key is on master want, and returns its key.
func tokenOn(t *testing.T, srv *redisServer, tokens *redisstore.TokenStore, want int) tokenstore.Key {
	t.Helper()
	now := time.Now()
	for i := range 100 {
		k := tokenstore.KeyOf(fmt.Sprint("on-", want, "-", i))
		key := fmt.Sprintf("fails:ref:%x", k[:])
		if srv.nodeOf(t, key) != want {
			continue
		}
		if err := tokens.Put(context.Background(), k, tokenstore.Grant{ClientID: "c", Scopes: []string{scope.AdminWebAPI}, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		return k
	}
	t.Fatalf("no token on master %d in 100", want)
	return tokenstore.Key{}
}
