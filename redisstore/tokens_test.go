package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
	"github.com/idsauth/idsauth/tokenstore/tokenstoretest"
)

// TestTokenStoreKeepsTheRules runs the rules every tokenstore.Store keeps
// on a real redis-server, each case under a prefix of its own.
func TestTokenStoreKeepsTheRules(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testTokenStoreKeepsTheRules(t, k) })
	}
}

func testTokenStoreKeepsTheRules(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	n := 0
	tokenstoretest.Run(t, func(*testing.T) tokenstore.Store {
		n++
		return redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: fmt.Sprintf("test%d:ref:", n)})
	})
}

// TestTokenStoreKeysHoldNoTokenAndExpire: a grant's key is the prefix and
// the token's SHA-256, and Redis expires it at the grant's exp.
func TestTokenStoreKeysHoldNoTokenAndExpire(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testTokenStoreKeysHoldNoTokenAndExpire(t, k) })
	}
}

func testTokenStoreKeysHoldNoTokenAndExpire(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	s := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	ctx := context.Background()
	token := "x8Qm4n2Zk1Vb7Tc5Yd3Wf9Hg6Jh0Lk2Pn4Rs6Tu8Vw"
	exp := time.Now().Add(90 * time.Second)
	if err := s.Put(ctx, tokenstore.KeyOf(token), tokenstore.Grant{ClientID: "c", Scopes: []string{scope.AdminWebAPI}, IssuedAt: time.Now(), ExpiresAt: exp, ID: "j"}); err != nil {
		t.Fatal(err)
	}
	keys := srv.keys(t, "*")
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "idsauth:ref:") || len(keys[0]) != len("idsauth:ref:")+64 {
		t.Fatalf("keys %q", keys)
	}
	dump, _ := rdb.HGetAll(ctx, keys[0]).Result()
	for _, v := range dump {
		if strings.Contains(v, token) || strings.Contains(keys[0], token) {
			t.Fatal("Redis holds the token itself")
		}
	}
	ttl, err := rdb.PTTL(ctx, keys[0]).Result()
	if err != nil || ttl <= 80*time.Second || ttl > 90*time.Second {
		t.Fatalf("PTTL %v (%v), want about 90 s", ttl, err)
	}
}

// TestTokenStoreFullRedisIsErrFull: a Redis at maxmemory with noeviction
// refuses the write, and Put says tokenstore.ErrFull; the grants already
// stored are all still found.
func TestTokenStoreFullRedisIsErrFull(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testTokenStoreFullRedisIsErrFull(t, k) })
	}
}

func testTokenStoreFullRedisIsErrFull(t *testing.T, kind kind) {
	srv := kind.start(t)
	rdb := srv.client(t)
	ctx := context.Background()
	srv.eachNode(t, func(node *redis.Client) {
		setMaxMemory(t, node, 256<<10, "noeviction")
	})
	s := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "idsauth:ref:", Timeout: 5 * time.Second})
	var kept []tokenstore.Key
	for i := 0; ; i++ {
		k := tokenstore.KeyOf(fmt.Sprint("token-", i))
		err := s.Put(ctx, k, tokenstore.Grant{ClientID: "c", Scopes: []string{scope.AdminWebAPI}, IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour), ID: fmt.Sprintf("%032d", i)})
		if errors.Is(err, tokenstore.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, k)
		if i > 100000 {
			t.Fatal("256 KiB never filled")
		}
	}
	if len(kept) < 100 {
		t.Fatalf("only %d grants stored", len(kept))
	}
	for _, k := range kept {
		if _, ok, err := s.Get(ctx, k, time.Now()); !ok || err != nil {
			t.Fatalf("a stored grant is gone: %v", err)
		}
	}
}

// TestReplicasShareReferenceTokens: two issuers on one redis-server see
// each other's reference tokens and revocations: a token issued by one is
// active at the other's introspection, revoked at the other, and then
// inactive at both; an API behind an Introspector of one replica refuses
// it at its next check.
func TestReplicasShareReferenceTokens(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplicasShareReferenceTokens(t, k) })
	}
}

func testReplicasShareReferenceTokens(t *testing.T, kind kind) {
	srv := kind.start(t)
	var urls []string
	for range 2 {
		tokens := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "idsauth:ref:"})
		mux := http.NewServeMux()
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		iss, err := issuer.New(&issuer.Config{
			Issuer:       sharedIssuer,
			EphemeralKey: true,
			Clients: []issuer.ClientConfig{
				{ClientID: "payroll", SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference"},
			},
			APIResources: []issuer.APIResourceConfig{
				{Name: "admin-api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: []string{scope.AdminWebAPI}},
			},
		}, issuer.WithTokenStore(tokens))
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/ids/", iss)
		urls = append(urls, hs.URL+"/ids")
	}
	post := func(u, path, id, pass string, form url.Values) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, u+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, pass)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	status, answer := post(urls[0], "/connect/token", "payroll", payrollSecret, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}})
	tok, _ := answer["access_token"].(string)
	if status != 200 || tok == "" {
		t.Fatalf("token: %d %v", status, answer)
	}
	introspect := func(u string) bool {
		_, m := post(u, "/connect/introspect", "admin-api", "api-secret", url.Values{"token": {tok}})
		return m["active"] == true
	}
	if !introspect(urls[1]) {
		t.Fatal("the other replica does not see the token")
	}
	in, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer: sharedIssuer, AnyAudience: true,
		Introspection: &accesstoken.Introspection{Endpoint: urls[0] + "/connect/introspect", ClientID: "admin-api", ClientSecret: "api-secret", CacheBytes: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
		t.Fatalf("the API refused a live token: %v", err)
	}
	if status, _ := post(urls[1], "/connect/revocation", "payroll", payrollSecret, url.Values{"token": {tok}}); status != 200 {
		t.Fatalf("revocation: %d", status)
	}
	if introspect(urls[0]) || introspect(urls[1]) {
		t.Fatal("a revocation at one replica did not reach the other")
	}
	if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrInactive) {
		t.Fatalf("the API still accepts the revoked token: %v", err)
	}
}

// TestCheckEviction: a Redis with noeviction passes; one that may evict
// (the limiter's volatile-ttl) is refused, an *EvictionError naming its
// policy; on a cluster, whichever master has it is refused, and named.
func TestCheckEviction(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testCheckEviction(t, k) })
	}
}

func testCheckEviction(t *testing.T, kind kind) {
	srv := kind.start(t)
	ctx := context.Background()
	s := redisstore.NewTokenStore(srv.client(t), redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	policy := func(i int, p string) {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: srv.nodes[i].Addr})
		defer c.Close()
		if err := c.ConfigSet(ctx, "maxmemory-policy", p).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range srv.nodes {
		policy(i, "noeviction")
	}
	if err := s.CheckEviction(ctx); err != nil {
		t.Fatalf("noeviction: %v", err)
	}
	for i, n := range srv.nodes {
		policy(i, "volatile-ttl")
		err := s.CheckEviction(ctx)
		var ee *redisstore.EvictionError
		if !errors.As(err, &ee) || ee.Policy != "volatile-ttl" || ee.Addr != n.Addr || !strings.Contains(err.Error(), `"volatile-ttl"`) || !strings.Contains(err.Error(), n.Addr) {
			t.Fatalf("volatile-ttl on %s: %v", n.Addr, err)
		}
		policy(i, "noeviction")
	}
}

// setMaxMemory gives the Redis of c a maxmemory of room bytes over what
// it uses now, under policy.
func setMaxMemory(t *testing.T, c *redis.Client, room int64, policy string) {
	t.Helper()
	ctx := context.Background()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if used == 0 {
		t.Fatalf("no used_memory in %q", info)
	}
	for k, v := range map[string]string{"maxmemory-policy": policy, "maxmemory": strconv.FormatInt(used+room, 10)} {
		if err := c.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSharedRedisEvicts shows why the tokens need a Redis of their own:
// on a Redis at maxmemory under volatile-ttl (the limiter's policy), one
// client's day-long grants push out another's short-lived live grant.
func TestSharedRedisEvicts(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	setMaxMemory(t, rdb.(*redis.Client), 256<<10, "volatile-ttl")
	s := redisstore.NewTokenStore(rdb, redisstore.TokenOptions{Prefix: "idsauth:ref:"})
	victim := tokenstore.KeyOf("victim")
	now := time.Now()
	if err := s.Put(ctx, victim, tokenstore.Grant{ClientID: "victim", Scopes: []string{scope.AdminWebAPI}, IssuedAt: now, ExpiresAt: now.Add(5 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for i := range 5000 {
		if err := s.Put(ctx, tokenstore.KeyOf(fmt.Sprint("flood-", i)), tokenstore.Grant{ClientID: "greedy", Scopes: []string{scope.AdminWebAPI}, IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour), ID: fmt.Sprintf("%032d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.Get(ctx, victim, time.Now()); !ok {
			if s.CheckEviction(ctx) == nil {
				t.Fatal("CheckEviction passed a Redis that evicted a live grant")
			}
			return // evicted, as the docs warn
		}
	}
	t.Fatal("the victim's grant was never evicted: the warning in the docs would be wrong")
}
