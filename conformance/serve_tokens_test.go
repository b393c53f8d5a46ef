package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// TestServeReplicasShareReferenceTokens: two serve processes with a
// tokenStore section on one redis-server (of the tokens' own) see each
// other's reference tokens and revocations; each serves RFC 8414
// metadata at the host root; a tokenStore on the limiter's Redis, or on
// one that may evict, is refused at start.
func TestServeReplicasShareReferenceTokens(t *testing.T) {
	tokensRedis := redistest.Start(t, "--appendonly", "yes")
	d := newDeployment(t, "reporting")
	path := filepath.Join(d.dir, "idsauth.json")
	edit := func(change func(cfg map[string]any)) {
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
	edit(func(cfg map[string]any) {
		clients := cfg["clients"].([]any)
		clients[0].(map[string]any)["accessTokenType"] = "reference"
		cfg["apiResources"] = []map[string]any{{"name": "api", "secretHashes": []string{secret.HashSHA256("api-secret").String()}, "scopes": []string{"pd_AdminWebApi"}}}
		cfg["tokenStore"] = map[string]any{"redis": map[string]any{"address": tokensRedis.Addr, "prefix": "ci:" + t.Name() + ":"}}
	})
	a := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	b := start(t, nil, "-addr", "127.0.0.1:0", "-ops-addr", "127.0.0.1:0", "-config", path)
	post := func(base, endpoint, id, pass string, form url.Values) (int, map[string]any) {
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
	status, m := post(a.base, "token", "reporting", d.secrets["reporting"], url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}})
	tok, _ := m["access_token"].(string)
	if status != 200 || tok == "" || strings.Contains(tok, ".") {
		t.Fatalf("a reference token: %d %v", status, m)
	}
	if _, m := post(b.base, "introspect", "api", "api-secret", url.Values{"token": {tok}}); m["active"] != true {
		t.Fatalf("the other replica does not see it: %v", m)
	}
	if status, _ := post(b.base, "revocation", "reporting", d.secrets["reporting"], url.Values{"token": {tok}}); status != 200 {
		t.Fatalf("revocation: %d", status)
	}
	if _, m := post(a.base, "introspect", "api", "api-secret", url.Values{"token": {tok}}); m["active"] != false {
		t.Fatalf("the revocation did not reach the first replica: %v", m)
	}
	// /readyz says whether the token store answers.
	if got := readyz(t, a); got != http.StatusOK {
		t.Fatalf("/readyz with the token store up: %d", got)
	}
	tokensRedis.Pause(t)
	if got := readyz(t, a); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the token store hung: %d, want 503", got)
	}
	tokensRedis.Resume(t)
	resp, err := http.Get(a.base + "/.well-known/oauth-authorization-server/ids")
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if resp.StatusCode != 200 || md["issuer"] != "https://auth.example/ids" || md["introspection_endpoint"] != "https://auth.example/ids/connect/introspect" {
		t.Fatalf("RFC 8414 at the root: %d %v", resp.StatusCode, md)
	}

	// Refused at start: the limiter's Redis, and a Redis that may evict.
	edit(func(cfg map[string]any) {
		cfg["limiterStore"] = map[string]any{"redis": map[string]any{"address": tokensRedis.Addr}}
	})
	if out, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path); err == nil || !strings.Contains(out, "the limiter's Redis") {
		t.Fatalf("a tokenStore on the limiter's Redis started: %v\n%s", err, out)
	}
	evicting := redistest.Start(t)
	edit(func(cfg map[string]any) {
		delete(cfg, "limiterStore")
		cfg["tokenStore"] = map[string]any{"redis": map[string]any{"address": evicting.Addr}}
	})
	configSet(t, evicting.Addr, "maxmemory-policy", "allkeys-lru")
	if out, err := runOnce(t, "-addr", "127.0.0.1:0", "-ops-addr", "off", "-config", path); err == nil || !strings.Contains(out, `"allkeys-lru"`) {
		t.Fatalf("a tokenStore on an evicting Redis started: %v\n%s", err, out)
	}
}

// runOnce runs serve expecting it to refuse to start: it returns its
// output and exit error, or kills it after 20 s (it started).
func runOnce(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, append([]string{"serve"}, args...)...).CombinedOutput()
	return string(out), err
}

// configSet sends CONFIG SET name value to the Redis at addr, in RESP.
func configSet(t *testing.T, addr, name, value string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	b.WriteString("*4\r\n")
	for _, part := range []string{"CONFIG", "SET", name, value} {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(part), part)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 64)
	n, err := c.Read(reply)
	if err != nil || !strings.HasPrefix(string(reply[:n]), "+OK") {
		t.Fatalf("CONFIG SET %s %s: %q %v", name, value, reply[:n], err)
	}
}
