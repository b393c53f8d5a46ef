package redisstore_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const payrollSecret = "payroll-secret"

// counting counts the reservations a store grants: each is one secret
// verified.
type counting struct {
	limit.Store
	granted atomic.Int64
}

func (c *counting) Reserve(ctx context.Context, r limit.Request) (limit.Reservation, error) {
	res, err := c.Store.Reserve(ctx, r)
	if err == nil {
		c.granted.Add(1)
	}
	return res, err
}

// Remember passes on to the store: a wrapper that did not would hide it,
// and the issuer would remember jtis per replica.
func (c *counting) Remember(ctx context.Context, r limit.Replay) (bool, error) {
	return c.Store.(limit.ReplayStore).Remember(ctx, r)
}

// sharedIssuer is the issuer URL of every replica, as behind one load
// balancer: an assertion addressed to one is addressed to all.
const sharedIssuer = "https://ids.example/ids"

// signerKey is the key of the client "signer" (private_key_jwt).
var signerKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

// assertion returns a fresh client assertion of "signer" for the
// replicas' token endpoint.
func assertion(t *testing.T) string {
	t.Helper()
	now := time.Now()
	s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "signer", "sub": "signer", "aud": sharedIssuer + "/connect/token",
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": rand.Text(),
	}).SignedString(signerKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// replica is one issuer on its own loopback server, with its own Store
// on the shared Redis, as a process of its own would have.
type replica struct {
	srv   *httptest.Server
	store *redisstore.Store
	count *counting
}

// replicas starts n issuers that share rdb's budgets.
func replicas(t *testing.T, srv *redisServer, n int, o redisstore.Options, limits limit.Config) []*replica {
	t.Helper()
	var rs []*replica
	for range n {
		rdb := srv.client(t)
		r := &replica{store: redisstore.New(rdb, o)}
		r.count = &counting{Store: r.store}
		mux := http.NewServeMux()
		r.srv = httptest.NewServer(mux)
		t.Cleanup(r.srv.Close)
		limits.TrustedProxyHeader = "X-Forwarded-For"
		iss, err := issuer.New(&issuer.Config{
			Issuer:       sharedIssuer,
			EphemeralKey: true,
			Clients: []issuer.ClientConfig{
				{ClientID: "payroll", SecretHashes: []string{secret.HashSHA256(payrollSecret).String()}, Scopes: []string{scope.AdminWebAPI}},
				{ClientID: "signer", PublicKeys: []issuer.ClientKeyConfig{{Key: signerKey().Public()}}, Scopes: []string{scope.AdminWebAPI}},
			},
			Limits: limits,
		}, issuer.WithLimiterStore(r.count))
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/ids/", iss)
		rs = append(rs, r)
	}
	return rs
}

var httpClient = &http.Client{Timeout: 30 * time.Second} // a failure bound only

// token asks r for a token for client with pass, from addr; it returns the
// status and the error code.
func (r *replica) token(t *testing.T, client, pass, addr string) (int, string) {
	t.Helper()
	return r.post(t, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI}},
		"Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(client)+":"+url.QueryEscape(pass))), addr)
}

// post sends a token request of form, with authz as its Authorization
// header when not empty, from addr; it returns the status and the error
// code.
func (r *replica) post(t *testing.T, form url.Values, authz, addr string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+"/ids/connect/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code := ""
	if i := strings.Index(string(b), `"error":"`); i >= 0 {
		code = strings.SplitN(string(b[i+9:]), `"`, 2)[0]
	}
	if (resp.StatusCode == 429 || resp.StatusCode == 503) && resp.Header.Get("Retry-After") == "" {
		t.Errorf("%d without Retry-After", resp.StatusCode)
	}
	return resp.StatusCode, code
}

// tokenBy asks r for a token with a client assertion, from addr; it
// returns the status and the error code.
func (r *replica) tokenBy(t *testing.T, assertion, addr string) (int, string) {
	t.Helper()
	return r.post(t, url.Values{"grant_type": {"client_credentials"}, "scope": {scope.AdminWebAPI},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}, "", addr)
}

// Two issuers on one Redis enforce one budget per client and one per
// address: failures split across both lock out at the budget; and the
// lockout scenario of issue 11 holds across them: wrong secrets from X on
// replica 1 never keep the right secret from Y on replica 2 from its
// token.
func TestReplicasShareOneBudget(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplicasShareOneBudget(t, k) })
	}
}

func testReplicasShareOneBudget(t *testing.T, kind kind) {
	srv := kind.start(t)
	rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:"}, limit.Config{FailedAttemptsPerSubject: 6, FailedAttemptsPerAddress: 10})

	t.Run("per client", func(t *testing.T) {
		var got []int
		for i := range 10 {
			st, _ := rs[i%2].token(t, "payroll", fmt.Sprint("guess-", i), "203.0.113.9") // a repeated guess is charged once
			got = append(got, st)
		}
		if fmt.Sprint(got) != "[401 401 401 401 401 401 429 429 429 429]" {
			t.Fatalf("wrong secrets from X alternating between replicas: %v, want the client's budget of 6 in all", got)
		}
	})
	t.Run("the right secret from another address on the other replica", func(t *testing.T) {
		for i := range 10 {
			if st, code := rs[1].token(t, "payroll", payrollSecret, "198.51.100.7"); st != 200 {
				t.Fatalf("request %d from Y on replica 2: %d %s", i, st, code)
			}
		}
		if st, code := rs[0].token(t, "payroll", payrollSecret, "198.51.100.8"); st != 200 {
			t.Fatalf("another address that has not failed, on replica 1: %d %s", st, code)
		}
		for _, r := range rs {
			if st, code := r.token(t, "payroll", payrollSecret, "203.0.113.9"); st != 429 || code != "slow_down" {
				t.Fatalf("X with the right secret: %d %s, want 429 slow_down", st, code)
			}
		}
	})
	t.Run("per address", func(t *testing.T) {
		var got []int
		for i := range 14 {
			st, _ := rs[i%2].token(t, fmt.Sprint("unknown-", i), "guess", "192.0.2.1")
			got = append(got, st)
		}
		if fmt.Sprint(got) != "[401 401 401 401 401 401 401 401 401 401 429 429 429 429]" {
			t.Fatalf("unknown clients from one address alternating between replicas: %v, want the address's budget of 10 in all", got)
		}
	})
	if st := rs[0].store.Stats(); st.Errors != 0 || st.Fallback != 0 {
		t.Fatalf("replica 1's stats %+v: Redis should have decided everything", st)
	}
}

// 64 concurrent wrong guesses from one address, 32 to each replica: the
// budget is reserved in Redis before any secret is checked, so exactly
// the client's budget of secrets is verified between both. (The stores
// wait for Redis for up to 5 s, so that a machine slowed down does not
// send a burst to the fallback, whose budgets are per replica.)
func TestReplicasReserveBeforeVerifying(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplicasReserveBeforeVerifying(t, k) })
	}
}

func testReplicasReserveBeforeVerifying(t *testing.T, kind kind) {
	const budget = 5
	srv := kind.start(t)
	rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:", Timeout: 5 * time.Second}, limit.Config{FailedAttemptsPerSubject: budget})
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	start := make(chan struct{})
	for i := range 64 {
		wg.Go(func() {
			<-start
			st, _ := rs[i%2].token(t, "payroll", fmt.Sprint("guess-", i), "203.0.113.9")
			mu.Lock()
			counts[st]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	verified := rs[0].count.granted.Load() + rs[1].count.granted.Load()
	if verified != budget || counts[401] != budget || counts[429] != 64-budget || rs[0].store.Stats().Errors+rs[1].store.Stats().Errors != 0 {
		t.Fatalf("64 concurrent guesses on two replicas: answers %v, %d verified; want exactly the budget, %d (stats %+v, %+v)", counts, verified, budget, rs[0].store.Stats(), rs[1].store.Stats())
	}
}

// Redis dies mid-run. With FailOpen (the default), each replica goes on
// with its own limits: the right secret gets its token, and guesses are
// still limited, per replica. With FailClosed, every request gets 503 and
// no secret is checked. Either way every request is answered, and a dead
// Redis costs each replica one failed call, not one per request; a dead
// cluster one per master at most.
func TestRedisDiesMidRun(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testRedisDiesMidRun(t, k) })
	}
}

func testRedisDiesMidRun(t *testing.T, kind kind) {
	limits := limit.Config{FailedAttemptsPerSubject: 3, FailedAttemptsPerAddress: 100}
	t.Run("FailOpen", func(t *testing.T) {
		srv := kind.start(t)
		rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:", RetryInterval: time.Hour}, limits)
		for i := range 3 {
			if st, _ := rs[i%2].token(t, "payroll", fmt.Sprint("guess-", i), "203.0.113.9"); st != 401 {
				t.Fatalf("guess %d: %d", i, st)
			}
		}
		srv.kill()
		for i := range 10 {
			if st, code := rs[i%2].token(t, "payroll", payrollSecret, "198.51.100.7"); st != 200 {
				t.Fatalf("the right secret on replica %d after Redis died: %d %s", i%2+1, st, code)
			}
		}
		for _, r := range rs {
			before := r.count.granted.Load()
			counts := map[int]int{}
			for i := range 10 {
				st, _ := r.token(t, "payroll", fmt.Sprint("guess-", i), "192.0.2.1")
				counts[st]++
			}
			if counts[401] != 3 || counts[429] != 7 || r.count.granted.Load()-before != 3 {
				t.Fatalf("10 guesses on one replica after Redis died: %v; want its own budget of 3, then 429", counts)
			}
			if st := r.store.Stats(); st.Errors < 1 || st.Errors > uint64(len(srv.nodes)) || st.Fallback != 15 {
				t.Fatalf("stats %+v: want 1 failed call (on a cluster, 1 per master at most), then 15 decided by the fallback", st)
			}
		}
	})
	t.Run("FailClosed", func(t *testing.T) {
		srv := kind.start(t)
		rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:", OnUnavailable: redisstore.FailClosed, RetryInterval: time.Hour}, limits)
		if st, _ := rs[0].token(t, "payroll", payrollSecret, "198.51.100.7"); st != 200 {
			t.Fatalf("before: %d", st)
		}
		srv.kill()
		counts := map[string]int{}
		for i := range 20 {
			pass := payrollSecret
			if i%2 == 1 {
				pass = "guess"
			}
			st, code := rs[i%2].token(t, "payroll", pass, fmt.Sprint("198.51.100.", i))
			counts[fmt.Sprint(st, " ", code)]++
		}
		if counts["503 temporarily_unavailable"] != 20 {
			t.Fatalf("answers after Redis died: %v, want 20 × 503 temporarily_unavailable", counts)
		}
		for _, r := range rs {
			if st := r.store.Stats(); st.Errors < 1 || st.Errors > uint64(len(srv.nodes)) || st.Unavailable != 10 {
				t.Fatalf("stats %+v: want 1 failed call (on a cluster, 1 per master at most), then 10 refused", st)
			}
		}
		if n := rs[0].count.granted.Load() + rs[1].count.granted.Load(); n != 1 {
			t.Fatalf("%d secrets verified, want only the one before Redis died", n)
		}
	})
}

// SCIMAuth on two replicas with one Redis: a tenant's budget is one, and
// its right token from another address is admitted by either.
func TestSCIMReplicasShareOneBudget(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testSCIMReplicasShareOneBudget(t, k) })
	}
}

func testSCIMReplicasShareOneBudget(t *testing.T, kind kind) {
	srv := kind.start(t)
	tenants, err := middleware.NewTenants([]middleware.TenantConfig{{Tenant: "acme", TokenHashes: []string{secret.HashSHA256("acme-token").String()}}})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range 2 {
		cfg := middleware.SCIMConfig{
			Limits: limit.Config{FailedAttemptsPerSubject: 4, TrustedProxyHeader: "X-Forwarded-For"},
			Store:  redisstore.New(srv.client(t), redisstore.Options{Prefix: "idsauth:scim:"}),
		}
		mux := http.NewServeMux()
		mux.Handle("GET /scim/{tenant}/Users", middleware.SCIMAuthWithConfig(tenants, cfg)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		s := httptest.NewServer(mux)
		t.Cleanup(s.Close)
		urls = append(urls, s.URL+"/scim/acme/Users")
	}
	call := func(url, tok, addr string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("X-Forwarded-For", addr)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var got []int
	for i := range 8 {
		got = append(got, call(urls[i%2], "guess", "203.0.113.9"))
	}
	if fmt.Sprint(got) != "[401 401 401 401 429 429 429 429]" {
		t.Fatalf("wrong tokens alternating between replicas: %v", got)
	}
	for i := range 4 {
		if st := call(urls[i%2], "acme-token", "198.51.100.7"); st != 200 {
			t.Fatalf("the right token from another address: %d", st)
		}
	}
}

// Two issuers on one Redis accept an assertion once between them (issue
// 17): a replay at the other replica, or at the same one, is refused as a
// reused jti is; a fresh assertion gets a token at either.
func TestReplicasRefuseAReplayedAssertion(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplicasRefuseAReplayedAssertion(t, k) })
	}
}

func testReplicasRefuseAReplayedAssertion(t *testing.T, kind kind) {
	srv := kind.start(t)
	rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:"}, limit.Config{})
	for first := range 2 {
		as := assertion(t)
		if st, code := rs[first].tokenBy(t, as, "198.51.100.7"); st != 200 {
			t.Fatalf("a fresh assertion at replica %d: %d %s", first+1, st, code)
		}
		for _, i := range []int{1 - first, first} {
			if st, code := rs[i].tokenBy(t, as, "203.0.113.9"); st != 401 || code != "invalid_client" {
				t.Fatalf("replayed at replica %d after a token at replica %d: %d %s, want 401 invalid_client", i+1, first+1, st, code)
			}
		}
	}
	if st := rs[0].store.Stats(); st.Errors != 0 || st.Fallback != 0 {
		t.Fatalf("replica 1's stats %+v: Redis should have decided everything", st)
	}
}

// Redis dies with assertions in use. With FailOpen (the default), each
// replica remembers jtis in its own memory: a replay at the replica that
// issued is refused, and one at the other replica is let in once, as the
// package documents (one use per replica while Redis is down). With
// FailClosed, a fresh assertion gets 503 and no token.
func TestReplayWhenRedisDies(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) { testReplayWhenRedisDies(t, k) })
	}
}

func testReplayWhenRedisDies(t *testing.T, kind kind) {
	t.Run("FailOpen", func(t *testing.T) {
		srv := kind.start(t)
		rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:", RetryInterval: time.Hour}, limit.Config{})
		before := assertion(t)
		if st, code := rs[0].tokenBy(t, before, "198.51.100.7"); st != 200 {
			t.Fatalf("before Redis died: %d %s", st, code)
		}
		srv.kill()
		as := assertion(t)
		var got []string
		for _, i := range []int{0, 0, 1, 1, 0} {
			st, code := rs[i].tokenBy(t, as, "198.51.100.7")
			got = append(got, fmt.Sprint(i+1, ":", st, code))
		}
		if want := "[1:200 1:401invalid_client 2:200 2:401invalid_client 1:401invalid_client]"; fmt.Sprint(got) != want {
			t.Fatalf("one assertion at replica 1, 1, 2, 2, 1 after Redis died: %v, want %v", got, want)
		}
		// Used before Redis died, so remembered in Redis only: replica 1
		// lets it in once more.
		got = nil
		for range 2 {
			st, code := rs[0].tokenBy(t, before, "198.51.100.7")
			got = append(got, fmt.Sprint(st, code))
		}
		if fmt.Sprint(got) != "[200 401invalid_client]" {
			t.Fatalf("an assertion used before Redis died, twice at replica 1: %v, want one more use then 401", got)
		}
	})
	t.Run("FailClosed", func(t *testing.T) {
		srv := kind.start(t)
		rs := replicas(t, srv, 2, redisstore.Options{Prefix: "idsauth:token:", OnUnavailable: redisstore.FailClosed, RetryInterval: time.Hour}, limit.Config{})
		if st, code := rs[0].tokenBy(t, assertion(t), "198.51.100.7"); st != 200 {
			t.Fatalf("before Redis died: %d %s", st, code)
		}
		srv.kill()
		for i := range 4 {
			if st, code := rs[i%2].tokenBy(t, assertion(t), "198.51.100.7"); st != 503 || code != "temporarily_unavailable" {
				t.Fatalf("a fresh assertion at replica %d after Redis died: %d %s, want 503 temporarily_unavailable", i%2+1, st, code)
			}
		}
	})
}
