package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/internal/redistest"
)

// withRedis adds a limiterStore section on r, and small failure budgets,
// to the deployment's file.
func (d *deployment) withRedis(t *testing.T, addr string) {
	t.Helper()
	path := filepath.Join(d.dir, "idsauth.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["limiterStore"] = map[string]any{"redis": map[string]any{"address": addr, "prefix": "ci:" + t.Name() + ":"}}
	cfg["limits"] = map[string]any{"failedAttemptsPerAddress": 4, "failedAttemptsPerClient": 100}
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readyz(t *testing.T, r *running) int {
	t.Helper()
	resp, err := http.Get(r.ops + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeIsNotReadyWhileRedisIsDown: /readyz answers 503 while the
// shared store does not answer (a hung redis-server), and 200 once it
// does again, while the service keeps issuing tokens on its fallback.
func TestServeIsNotReadyWhileRedisIsDown(t *testing.T) {
	redis := redistest.Start(t)
	d := newDeployment(t, "reporting")
	d.withRedis(t, redis.Addr)
	r := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json"))
	if got := readyz(t, r); got != http.StatusOK {
		t.Fatalf("/readyz with Redis up: %d, want 200", got)
	}
	redis.Pause(t)
	if got := readyz(t, r); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis hung: %d, want 503", got)
	}
	if _, err := token(context.Background(), r.base, nil, "reporting", d.secrets["reporting"]); err != nil {
		t.Errorf("a token while Redis is hung (fail open): %v", err)
	}
	redis.Resume(t)
	deadline := time.Now().Add(20 * time.Second)
	for readyz(t, r) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz stayed 503 after Redis came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeReplicasShareOneBudget: two serve processes on one Redis keep
// one failure budget per address: four wrong secrets at the first spend
// the address's budget at the second too.
func TestServeReplicasShareOneBudget(t *testing.T) {
	redis := redistest.Start(t)
	d := newDeployment(t, "reporting")
	d.withRedis(t, redis.Addr)
	args := []string{"-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", filepath.Join(d.dir, "idsauth.json")}
	a, b := start(t, nil, args...), start(t, nil, args...)
	ctx := context.Background()
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
	m := scrape(t, b.ops)
	if got := sample(m, "idsauth_limiter_refusals_total", map[string]string{"endpoint": "token", "limit": "address"}); got != 1 {
		t.Errorf("idsauth_limiter_refusals_total{limit=address} at the second replica = %v, want 1", got)
	}
}
