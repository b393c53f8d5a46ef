package conformance

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/redistest"
	"github.com/idsauth/idsauth/secret"
)

// editConfig rewrites the configuration file at path through change.
func editConfig(t *testing.T, path string, change func(cfg map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	change(cfg)
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// referenceDeployment is a deployment whose client gets reference tokens
// kept in a tokenStore on the Redis at addr, and an API resource "api"
// (secret "api-secret") that may introspect them.
func referenceDeployment(t *testing.T, addr string, extra map[string]any) (*deployment, string) {
	t.Helper()
	d := newDeployment(t, "reporting")
	path := filepath.Join(d.dir, "idsauth.json")
	editConfig(t, path, func(cfg map[string]any) {
		cfg["clients"].([]any)[0].(map[string]any)["accessTokenType"] = "reference"
		cfg["apiResources"] = []map[string]any{{"name": "api", "secretHashes": []string{secret.HashSHA256("api-secret").String()}, "scopes": []string{"pd_AdminWebApi"}}}
		ts := map[string]any{"redis": map[string]any{"address": addr, "prefix": "ci:" + t.Name() + ":"}}
		for k, v := range extra {
			ts[k] = v
		}
		cfg["tokenStore"] = ts
	})
	return d, path
}

// checkConfig runs check-config on path: its exit status and output.
func checkConfig(t *testing.T, path string) (int, string) {
	t.Helper()
	out, err := exec.Command(binary, "check-config", path).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// lastError is the text after "idsauth CMD: " on the last line that has it.
func lastError(out, cmd string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		if e, ok := strings.CutPrefix(l, "idsauth "+cmd+": "); ok {
			last = e
		}
	}
	return last
}

// TestServeWarnsWhenTheTokenStoreHidesItsPolicy: a Redis that refuses
// CONFIG, as a managed one may, cannot tell its maxmemory-policy:
// check-config accepts its tokenStore and warns, where it refuses one
// whose policy may evict.
func TestServeWarnsWhenTheTokenStoreHidesItsPolicy(t *testing.T) {
	hidden := redistest.Start(t, "--rename-command", "CONFIG", "")
	_, path := referenceDeployment(t, hidden.Addr, map[string]any{"allowNoPersistence": true})
	if code, out := checkConfig(t, path); code != 0 || !strings.Contains(out, "cannot read the Redis's maxmemory-policy") {
		t.Fatalf("a Redis that refuses CONFIG: exit %d, want 0 with a warning\n%s", code, out)
	}
}

// TestServeRefusesATokenStoreThatForgets: on a real redis-server without
// persistence (appendonly no, no save points), serve and check-config
// refuse the tokenStore, saying what a restart costs, unless the section
// says allowNoPersistence; with appendonly yes both accept it; with
// snapshots only both accept it with a warning.
func TestServeRefusesATokenStoreThatForgets(t *testing.T) {
	volatile := redistest.Start(t)
	aof := redistest.Start(t, "--appendonly", "yes")
	snapshots := redistest.Start(t, "--save", "3600 1")
	const refusal = "keeps nothing across a restart (appendonly no, save \"\"): a restart of it would end every live reference token"
	const snapshotWarning = "keeps snapshots only"
	for _, c := range []struct {
		name    string
		addr    string
		extra   map[string]any
		refused bool
		warned  bool
	}{
		{"without persistence", volatile.Addr, nil, true, false},
		{"without persistence, allowed", volatile.Addr, map[string]any{"allowNoPersistence": true}, false, false},
		{"appendonly yes", aof.Addr, nil, false, false},
		{"snapshots only", snapshots.Addr, nil, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, path := referenceDeployment(t, c.addr, c.extra)
			code, out := checkConfig(t, path)
			if c.refused {
				if code != 1 || !strings.Contains(out, refusal) || !strings.Contains(out, "allowNoPersistence") {
					t.Errorf("check-config: exit %d\n%s", code, out)
				}
				if out, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path); err == nil || !strings.Contains(out, refusal) {
					t.Errorf("serve started: %v\n%s", err, out)
				}
				return
			}
			if code != 0 || strings.Contains(out, snapshotWarning) != c.warned {
				t.Errorf("check-config: exit %d, want 0, warned %v\n%s", code, c.warned, out)
			}
			r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
			warned := false
			for _, l := range r.log() {
				warned = warned || strings.Contains(l, snapshotWarning)
			}
			if warned != c.warned {
				t.Errorf("serve warned of snapshots only: %v, want %v", warned, c.warned)
			}
		})
	}
}

// TestServeAndCheckConfigLoadAFileAlike: check-config accepts the
// tokenStore section serve accepts, and refuses each bad file serve
// refuses with the same error, naming the file: among them the ways to
// name a Redis Cluster wrongly.
func TestServeAndCheckConfigLoadAFileAlike(t *testing.T) {
	tokens := redistest.Start(t, "--appendonly", "yes")
	volatile := redistest.Start(t)
	_, path := referenceDeployment(t, tokens.Addr, nil)
	if code, out := checkConfig(t, path); code != 0 || !strings.Contains(out, "Token store (idsauth serve): Redis at "+tokens.Addr) {
		t.Fatalf("check-config of a good tokenStore: exit %d\n%s", code, out)
	}
	start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)

	for _, c := range []struct {
		name   string
		change func(cfg map[string]any)
		want   string
	}{
		{"a tokenStore with a fallback", func(cfg map[string]any) {
			cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)["onUnavailable"] = "open"
		}, "tokenStore.redis.onUnavailable: the token store has no fallback"},
		{"a tokenStore without an address", func(cfg map[string]any) {
			delete(cfg["tokenStore"].(map[string]any)["redis"].(map[string]any), "address")
		}, "tokenStore.redis.address: required"},
		{"a tokenStore on a Redis without persistence", func(cfg map[string]any) {
			cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)["address"] = volatile.Addr
		}, "keeps nothing across a restart"},
		{"a redis with an address and a cluster", func(cfg map[string]any) {
			cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)["cluster"] = []string{tokens.Addr}
		}, `tokenStore.redis.cluster: give "address" (one Redis) or "cluster" (a Redis Cluster's nodes), not both`},
		{"a cluster with an empty node", func(cfg map[string]any) {
			r := cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)
			delete(r, "address")
			r["cluster"] = []string{tokens.Addr, ""}
		}, "tokenStore.redis.cluster[1]: empty"},
		{"a cluster with a database", func(cfg map[string]any) {
			r := cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)
			delete(r, "address")
			r["cluster"], r["db"] = []string{tokens.Addr}, 2
		}, "tokenStore.redis.db: a Redis Cluster has database 0 only"},
		{"a cluster with a hash tag in its prefix", func(cfg map[string]any) {
			r := cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)
			delete(r, "address")
			r["cluster"], r["prefix"] = []string{tokens.Addr}, "{idsauth}:ref:"
		}, `tokenStore.redis.prefix: "{idsauth}:ref:" has a hash tag`},
		{"a tokenStore cluster with a node of the limiter's", func(cfg map[string]any) {
			r := cfg["tokenStore"].(map[string]any)["redis"].(map[string]any)
			delete(r, "address")
			r["cluster"] = []string{"127.0.0.1:1", volatile.Addr}
			cfg["limiterStore"] = map[string]any{"redis": map[string]any{"address": volatile.Addr}}
		}, "tokenStore.redis.cluster: the limiter's Redis (" + volatile.Addr + ")"},
		{"a near miss", func(cfg map[string]any) {
			cfg["token_store"] = cfg["tokenStore"]
			delete(cfg, "tokenStore")
		}, `unknown field "token_store" (did you mean "tokenStore"?)`},
		{"allowNoPersistence in the limiter's section", func(cfg map[string]any) {
			cfg["limiterStore"] = map[string]any{"redis": map[string]any{"address": volatile.Addr}, "allowNoPersistence": true}
		}, `limiterStore: unknown field "allowNoPersistence"`},
		{"an unknown scope", func(cfg map[string]any) {
			cfg["clients"].([]any)[0].(map[string]any)["scopes"] = []string{"no_such_scope"}
		}, `unknown scope "no_such_scope"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, path := referenceDeployment(t, tokens.Addr, nil)
			editConfig(t, path, c.change)
			code, out := checkConfig(t, path)
			serveOut, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path)
			checked, served := lastError(out, "check-config"), lastError(serveOut, "serve")
			if code != 1 || err == nil || !strings.Contains(checked, c.want) || !strings.Contains(checked, path) || checked != served {
				t.Errorf("check-config (exit %d): %s\nserve (%v): %s\nwant both to say the same, naming %s and holding %q", code, checked, err, served, path, c.want)
			}
		})
	}
}

// TestServeReadinessUsesTheTokenStoresBound: behind a proxy that delays
// each round trip to the token store's Redis by 300 ms (past its 150 ms
// bound, so every reference operation fails), /readyz answers 503; with
// the delay gone it answers 200 again.
func TestServeReadinessUsesTheTokenStoresBound(t *testing.T) {
	tokens := redistest.Start(t, "--appendonly", "yes")
	proxy := redistest.StartProxy(t, tokens.Addr)
	_, path := referenceDeployment(t, proxy.Addr, nil)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	untilReady(t, r)
	proxy.SetDelay(300 * time.Millisecond)
	if got := readyz(t, r); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with every token store call timing out: %d, want 503", got)
	}
	proxy.SetDelay(0)
	untilReady(t, r)
}

// untilReady polls /readyz until it answers 200, within a deadline.
func untilReady(t *testing.T, r *running) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); readyz(t, r) != http.StatusOK; {
		if time.Now().After(deadline) {
			t.Fatal("/readyz stayed 503")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeReferenceTokensRecoverBehindASlowRedis: a replica that starts
// while the token store's Redis answers each round trip in 80 ms (under
// the 150 ms bound) issues and introspects reference tokens, and does
// again after a 2 s spike. Outcomes are counted, never timed: each phase
// polls, within a deadline, for five tokens issued and found in a row.
func TestServeReferenceTokensRecoverBehindASlowRedis(t *testing.T) {
	tokens := redistest.Start(t, "--appendonly", "yes")
	proxy := redistest.StartProxy(t, tokens.Addr)
	proxy.SetDelay(80 * time.Millisecond)
	d, path := referenceDeployment(t, proxy.Addr, nil)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	// once issues a reference token and introspects it.
	once := func() bool {
		status, m := postForm(t, r.base, "token", "reporting", d.secrets["reporting"], url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}})
		tok, _ := m["access_token"].(string)
		if status != http.StatusOK || tok == "" {
			return false
		}
		status, m = postForm(t, r.base, "introspect", "api", "api-secret", url.Values{"token": {tok}})
		return status == http.StatusOK && m["active"] == true
	}
	recovers := func(phase string) {
		t.Helper()
		failed, inRow := 0, 0
		for deadline := time.Now().Add(30 * time.Second); inRow < 5; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d tokens failed, never 5 in a row issued and found", phase, failed)
			}
			if once() {
				inRow++
				continue
			}
			failed++
			inRow = 0
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%s: %d failed before 5 in a row", phase, failed)
	}
	recovers("starting at 80 ms a round trip")
	proxy.SetDelay(2 * time.Second)
	failed := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		if !once() {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no token failed during the spike: the proxy delays nothing")
	}
	proxy.SetDelay(80 * time.Millisecond)
	recovers("after a 2 s spike, back at 80 ms")
}

// postForm posts form to an endpoint of the issuer at base with Basic
// credentials, and returns the status and the JSON answer.
func postForm(t *testing.T, base, endpoint, id, pass string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/ids/connect/"+endpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return resp.StatusCode, m
}
