package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/redistest"
)

// TestServeTokenStoreFailover: serve on a token store cluster of three
// masters and three replicas, under a bounded loopback load (four
// workers, each in turn issuing a reference token, introspecting it and
// revoking it); one master is killed. While it is down, /readyz answers
// 200 "ready, degraded" naming it (every replica shares the cluster: a
// 503 would take them all out), and idsauth_token_store_master_up is 0
// for it and 1 for the others. Once its replica is promoted, every
// operation answers again within 10 s (the store asks the cluster for
// its slots after a failed call, rather than dialling the dead address
// until its client's minute-long refresh): 40 rounds in a row succeed,
// and tokens issued before the kill on the dead master's slots are
// introspected and revoked; then /readyz answers plain "ready" and the
// gauge is 1 for each master, the promoted one in the dead one's place.
// Neither /readyz nor /metrics is asked between the promotion and the
// operations' return: their probe reloads the slots too, and would hide
// a store that does not.
func TestServeTokenStoreFailover(t *testing.T) {
	tokens := redistest.StartCluster(t, 3, "--appendonly", "yes", "--cluster-node-timeout", "2000")
	for i := range tokens.Nodes {
		tokens.AddReplica(t, i)
	}
	victim, heir := tokens.Nodes[2], tokens.Replicas[2]
	d, path := referenceDeployment(t, "", nil)
	prefix := "ci:" + t.Name() + ":ref:"
	editConfig(t, path, func(cfg map[string]any) {
		cfg["tokenStore"] = map[string]any{"redis": map[string]any{"cluster": tokens.Addrs(), "prefix": prefix}}
	})
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	untilReady(t, r)
	if status, body := readyzBody(t, r); status != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz before the kill: %d %q", status, body)
	}

	// Tokens on the victim's slots, issued before the kill and replicated.
	onVictim := func(tok string) bool {
		t.Helper()
		sum := sha256.Sum256([]byte(tok))
		slot, err := tokens.Nodes[0].Do("CLUSTER", "KEYSLOT", prefix+hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(slot)
		return tokens.NodeOf(n) == 2
	}
	var before []string
	for i := 0; len(before) < 3; i++ {
		if i == 100 {
			t.Fatal("no three tokens on the third master's slots in 100")
		}
		status, m := postForm(t, r.base, "token", "reporting", d.secrets["reporting"], url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}})
		tok, _ := m["access_token"].(string)
		if status != http.StatusOK || tok == "" {
			t.Fatalf("a reference token: %d %v", status, m)
		}
		if onVictim(tok) {
			before = append(before, tok)
		}
	}
	if n, err := victim.Do("WAIT", "1", "5000"); err != nil || n != "1" {
		t.Fatalf("WAIT for the replica: %s, %v", n, err)
	}

	load := startReferenceLoad(r.base, d.secrets["reporting"], 4)
	defer load.stop()
	load.await(t, 20, time.Time{}, 30*time.Second, "before the kill")

	victim.Kill()
	status, body := readyzBody(t, r)
	if status != http.StatusOK || !strings.HasPrefix(body, "ready, degraded:") || !strings.Contains(body, victim.Addr) {
		t.Errorf("/readyz with a master down: %d %q, want 200 \"ready, degraded: ...\" naming %s", status, body, victim.Addr)
	}
	m := scrape(t, r.ops)
	for _, n := range tokens.Nodes {
		want := 1.0
		if n == victim {
			want = 0
		}
		if got := sample(m, "idsauth_token_store_master_up", map[string]string{"node": n.Addr}); got != want {
			t.Errorf("idsauth_token_store_master_up{node=%q} with %s down: %v, want %v", n.Addr, victim.Addr, got, want)
		}
	}

	// Counted, not timed: the promotion follows cluster-node-timeout and
	// an election.
	var promoted time.Time
	for i := 0; promoted.IsZero(); i++ {
		if info, err := heir.Do("INFO", "replication"); err == nil && strings.Contains(info, "role:master\r\n") {
			promoted = time.Now()
		}
		load.drain()
		if i == 1500 {
			t.Fatalf("the replica %s was never promoted:\n%s", heir.Addr, heir.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	back := load.await(t, 40, promoted, 20*time.Second, "after the promotion")
	if late := back.Sub(promoted); late > 10*time.Second {
		t.Errorf("the operations answered again %v after the promotion, want within 10 s", late)
	}
	t.Logf("killed %s; its replica promoted; every operation answering %v later", victim.Addr, back.Sub(promoted).Round(time.Millisecond))
	for _, tok := range before {
		if _, m := postForm(t, r.base, "introspect", "api", "api-secret", url.Values{"token": {tok}}); m["active"] != true {
			t.Errorf("a token issued before the kill, on the promoted master's slots: %v", m)
		}
		if status, _ := postForm(t, r.base, "revocation", "reporting", d.secrets["reporting"], url.Values{"token": {tok}}); status != http.StatusOK {
			t.Errorf("its revocation: %d", status)
		}
		if _, m := postForm(t, r.base, "introspect", "api", "api-secret", url.Values{"token": {tok}}); m["active"] != false {
			t.Errorf("revoked, it still introspects %v", m)
		}
	}

	if status, body := readyzBody(t, r); status != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz after the failover: %d %q, want \"ready\"", status, body)
	}
	m = scrape(t, r.ops)
	for _, n := range []*redistest.Server{tokens.Nodes[0], tokens.Nodes[1], heir} {
		if got := sample(m, "idsauth_token_store_master_up", map[string]string{"node": n.Addr}); got != 1 {
			t.Errorf("idsauth_token_store_master_up{node=%q} after the failover: %v, want 1", n.Addr, got)
		}
	}
	if got := sample(m, "idsauth_token_store_master_up", map[string]string{"node": victim.Addr}); got != -1 {
		t.Errorf("the dead master, a master no more, still has a gauge: %v", got)
	}
}

// referenceLoad is workers issuing, introspecting and revoking reference
// tokens in a loop, as fast as serve answers them, until stop.
type referenceLoad struct {
	rounds chan round
	done   chan struct{}
	wg     sync.WaitGroup
}

// round is one token issued, introspected and revoked: when it began,
// and whether all three answered (or what failed).
type round struct {
	at     time.Time
	failed string // "" when all three answered
}

func startReferenceLoad(base, secret string, workers int) *referenceLoad {
	l := &referenceLoad{rounds: make(chan round, 64), done: make(chan struct{})}
	post := func(endpoint, id, pass string, form url.Values) (int, map[string]any, error) {
		req, _ := http.NewRequest(http.MethodPost, base+"/ids/connect/"+endpoint, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return resp.StatusCode, m, nil
	}
	once := func() string {
		status, m, err := post("token", "reporting", secret, url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}})
		tok, _ := m["access_token"].(string)
		if err != nil || status != http.StatusOK || tok == "" {
			return fmt.Sprintf("issuance: %d %v %v", status, m, err)
		}
		if status, m, err := post("introspect", "api", "api-secret", url.Values{"token": {tok}}); err != nil || m["active"] != true {
			return fmt.Sprintf("introspection: %d %v %v", status, m, err)
		}
		if status, m, err := post("revocation", "reporting", secret, url.Values{"token": {tok}}); err != nil || status != http.StatusOK {
			return fmt.Sprintf("revocation: %d %v %v", status, m, err)
		}
		return ""
	}
	for range workers {
		l.wg.Go(func() {
			for {
				at := time.Now()
				failed := once()
				select {
				case l.rounds <- round{at, failed}:
				case <-l.done:
					return
				}
			}
		})
	}
	return l
}

// await reads rounds until n in a row, each begun after since, have
// succeeded, and returns when the first of them began; it fails t when
// that has not happened within limit.
func (l *referenceLoad) await(t *testing.T, n int, since time.Time, limit time.Duration, phase string) time.Time {
	t.Helper()
	var first time.Time
	inRow, total, failed := 0, 0, 0
	var last string
	deadline := time.After(limit)
	for inRow < n {
		select {
		case <-deadline:
			t.Fatalf("%s: %d rounds, %d failed, never %d in a row within %v; the last failure: %s", phase, total, failed, n, limit, last)
		case r := <-l.rounds:
			if r.at.Before(since) {
				continue
			}
			total++
			if r.failed != "" {
				failed++
				inRow, last = 0, r.failed
				continue
			}
			if inRow == 0 {
				first = r.at
			}
			inRow++
		}
	}
	t.Logf("%s: %d rounds, %d failed, before %d in a row", phase, total, failed, n)
	return first
}

// drain throws away the rounds done so far, so that the workers go on.
func (l *referenceLoad) drain() {
	for {
		select {
		case <-l.rounds:
		default:
			return
		}
	}
}

func (l *referenceLoad) stop() {
	close(l.done)
	l.wg.Wait()
}
