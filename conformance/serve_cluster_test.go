package conformance

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/internal/redistest"
)

// TestServeOnRedisClusters: two serve processes whose limiterStore is a
// Redis Cluster of three masters, named by its first node only, and whose
// tokenStore is another cluster of three (appendonly yes), named by all
// of its nodes. check-config shows both clusters; the replicas see each
// other's reference tokens and share one budget per address; the
// limiter's keys are spread over the masters; /readyz answers 200.
func TestServeOnRedisClusters(t *testing.T) {
	limiter := redistest.StartCluster(t, 3)
	tokens := redistest.StartCluster(t, 3, "--appendonly", "yes")
	d, path := referenceDeployment(t, "", nil)
	prefix := "ci:" + t.Name() + ":"
	editConfig(t, path, func(cfg map[string]any) {
		cfg["tokenStore"] = map[string]any{"redis": map[string]any{"cluster": tokens.Addrs(), "prefix": prefix + "ref:"}}
		cfg["limiterStore"] = map[string]any{"redis": map[string]any{"cluster": limiter.Addrs()[:1], "prefix": prefix}}
		cfg["limits"] = map[string]any{"failedAttemptsPerAddress": 4, "failedAttemptsPerClient": 100}
	})
	code, out := checkConfig(t, path)
	for _, want := range []string{
		"Limiter store (idsauth serve): Redis Cluster at " + limiter.Nodes[0].Addr + ", TLS false, fails open",
		"Token store (idsauth serve): Redis Cluster at " + strings.Join(tokens.Addrs(), ", ") + ", TLS false",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("check-config: exit %d, want %q in\n%s", code, want, out)
		}
	}
	args := []string{"-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path}
	a, b := start(t, nil, args...), start(t, nil, args...)
	ctx := context.Background()

	status, m := postForm(t, a.base, "token", "reporting", d.secrets["reporting"], url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}})
	tok, _ := m["access_token"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("a reference token: %d %v", status, m)
	}
	if _, m := postForm(t, b.base, "introspect", "api", "api-secret", url.Values{"token": {tok}}); m["active"] != true {
		t.Fatalf("the other replica does not see it: %v", m)
	}
	for i := range 4 {
		_, err := token(ctx, a.base, nil, "reporting", "wrong-"+string(rune('a'+i)))
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
			t.Fatalf("wrong secret %d at the first replica: %v, want invalid_client", i, err)
		}
	}
	_, err := token(ctx, b.base, nil, "reporting", "wrong-e")
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusTooManyRequests || re.ErrorCode != "slow_down" {
		t.Fatalf("a fifth wrong secret at the second replica: %v, want 429 slow_down (one budget between them)", err)
	}
	masters := 0
	for _, n := range limiter.Nodes {
		if keys, err := n.Do("EVAL", "return #redis.call('KEYS', ARGV[1])", "0", prefix+"*"); err != nil {
			t.Fatal(err)
		} else if keys != "0" {
			masters++
		}
	}
	if masters < 2 {
		t.Errorf("the limiter's keys are on %d master(s) of 3: want them spread", masters)
	}

	for _, r := range []*running{a, b} {
		if got := readyz(t, r); got != http.StatusOK {
			t.Errorf("/readyz: %d, want 200", got)
		}
	}
}

// TestServeChecksEveryNodeOfAClusterTokenStore: serve and check-config
// ask each node of a tokenStore cluster, not one: a cluster of three
// with persistence is accepted; with one master keeping nothing across a
// restart, or one under an evicting policy, both refuse it, naming that
// master.
func TestServeChecksEveryNodeOfAClusterTokenStore(t *testing.T) {
	tokens := redistest.StartCluster(t, 3, "--appendonly", "yes")
	_, path := referenceDeployment(t, "", nil)
	editConfig(t, path, func(cfg map[string]any) {
		cfg["tokenStore"] = map[string]any{"redis": map[string]any{"cluster": tokens.Addrs()[:1], "prefix": "ci:" + t.Name() + ":"}}
	})
	if code, out := checkConfig(t, path); code != 0 {
		t.Fatalf("check-config of a cluster with persistence: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		name, setting, value, reset, want string
	}{
		{"a master keeps nothing", "appendonly", "no", "yes", "keeps nothing across a restart"},
		{"a master may evict", "maxmemory-policy", "allkeys-lru", "noeviction", `maxmemory-policy "allkeys-lru"`},
	} {
		for i, n := range tokens.Nodes {
			configSet(t, n.Addr, c.setting, c.value)
			code, out := checkConfig(t, path)
			serveOut, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path)
			checked, served := lastError(out, "check-config"), lastError(serveOut, "serve")
			if code != 1 || err == nil || !strings.Contains(checked, c.want) || !strings.Contains(checked, n.Addr) || checked != served {
				t.Errorf("%s (master %d): check-config (exit %d): %s\nserve (%v): %s\nwant both to refuse it, naming %s", c.name, i, code, checked, err, served, n.Addr)
			}
			configSet(t, n.Addr, c.setting, c.reset)
		}
	}
}
