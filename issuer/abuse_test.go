package issuer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// heapAfterGC is the live heap, measured after a full collection.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFailuresDoNotGrowMemory: 1,000 failures with distinct 200 KiB client
// IDs from distinct addresses, then 10,000 with distinct IDs of the
// longest length allowed, leave the heap as it was: over-long IDs are
// refused before anything is remembered, and the limiter is a table of
// fixed bytes allocated at start.
func TestFailuresDoNotGrowMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 requests with 200 KiB client IDs and 10,000 more: run without -short")
	}
	if issuer.RaceEnabled {
		// 200 MiB of headers through the detector took 70 s of the
		// package's 108; CI's pass without -race runs it.
		t.Skip("a measure of the heap, slow under the race detector: run without -race")
	}
	s := newServer(t, func(c *issuer.Config) {
		c.Limits = limit.Config{TrustedProxyHeader: "X-Forwarded-For", FailedAttemptsPerAddress: 1 << 20}
	}, issuer.WithLogger(slog.New(slog.DiscardHandler))) // the test's log buffer would be what grows
	if got := issuer.LimiterBytes(s.iss); got != 1<<20 {
		t.Fatalf("limiter holds %d bytes, want the default 1 MiB", got)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	try := func(id, addr string) answer {
		req := mustRequest(t, http.MethodPost, s.tokenURL())
		req.Body = http.NoBody
		req.Header.Set("Content-Type", formType)
		req.Header.Set("Authorization", basic(id, "guess"))
		req.Header.Set("X-Forwarded-For", addr)
		req.ContentLength = 0
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return answer{status: resp.StatusCode, body: body}
	}
	try("warm-up", "192.0.2.1")
	before := heapAfterGC()
	long := strings.Repeat("x", 200<<10)
	for i := range 1000 {
		if a := try(fmt.Sprint(long, i), fmt.Sprint("10.0.", i/256, ".", i%256)); a.status != 400 || a.body["error"] != "invalid_request" {
			t.Fatalf("a 200 KiB client ID got %d %v", a.status, a.body)
		}
	}
	maxLen := strings.Repeat("y", 100-6)
	for i := range 10_000 {
		if a := try(fmt.Sprintf("%s%06d", maxLen, i), fmt.Sprint("10.1.", i/256%256, ".", i%256)); a.status != 401 && a.status != 400 {
			t.Fatalf("attempt %d: %d %v", i, a.status, a.body)
		}
	}
	after := heapAfterGC()
	const bound = 512 << 10 // connections' buffers and GC noise; no per-ID state
	if after > before && after-before > bound {
		t.Fatalf("the heap grew by %d bytes, bound %d", after-before, bound)
	}
}

// TestConcurrentGuessesAreVerifiedAtMostTheBudget: 64 wrong secrets for a
// bcrypt client at once from one address; the budget is reserved before
// each check, so at most the budget of bcrypt checks ever runs.
func TestConcurrentGuessesAreVerifiedAtMostTheBudget(t *testing.T) {
	const budget = 5
	human := humanClient(t)
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, human)
		c.Limits = limit.Config{FailedAttemptsPerSubject: budget}
		c.Verifier.FailureFloor = -1 // none
	})
	before := issuer.VerifierCounts(s.iss)
	statuses := make(chan int, 64)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 64 {
		wg.Go(func() {
			<-start
			a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "human", "client_secret", fmt.Sprint("guess-", i), "scope", scope.AdminWebAPI))
			statuses <- a.status
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for st := range statuses {
		counts[st]++
	}
	slow := issuer.VerifierCounts(s.iss).Slow - before.Slow
	if slow > budget || counts[401] != int(slow) || counts[429] != 64-int(slow) {
		t.Fatalf("%d bcrypt checks for 64 concurrent guesses (answers %v), want at most %d", slow, counts, budget)
	}
}

// TestEveryFailureDoesTheSameWork: an unknown client, a wrong secret and a
// client with two hashes do the same fast-hash work, for each hash kind;
// with bcrypt clients, the unknown client burns no bcrypt and every
// failure is held to the failure floor instead.
func TestEveryFailureDoesTheSameWork(t *testing.T) {
	bc := func(s string) string {
		h, err := secret.HashBcrypt(s, 4)
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	kinds := map[string][2][]string{
		"sha256": {{secret.HashSHA256("one").String()}, {secret.HashSHA256("old").String(), secret.HashSHA256("new").String()}},
		"sha512": {{"sha512:" + b64(strings.Repeat("\x01", 64))}, {"sha512:" + b64(strings.Repeat("\x02", 64)), "sha512:" + b64(strings.Repeat("\x03", 64))}},
		"bcrypt": {{bc("one")}, {bc("old"), bc("new")}},
	}
	for kind, hashes := range kinds {
		t.Run(kind, func(t *testing.T) {
			s := newServer(t, func(c *issuer.Config) {
				c.Clients = append(c.Clients,
					issuer.ClientConfig{ClientID: "single", SecretHashes: hashes[0], Scopes: []string{scope.AdminWebAPI}},
					issuer.ClientConfig{ClientID: "rotated", SecretHashes: hashes[1], Scopes: []string{scope.AdminWebAPI}})
				c.Verifier.FailureFloor = time.Millisecond
				if kind == "bcrypt" {
					c.Verifier.FailureFloor = 0 // automatic
				}
			})
			work := map[string]secret.Counts{}
			for _, id := range []string{"nobody", "single", "rotated"} {
				before := issuer.VerifierCounts(s.iss)
				a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", id, "client_secret", "guess", "scope", scope.AdminWebAPI))
				if a.status != 401 || a.body["error"] != "invalid_client" || a.body["error_description"] != "client authentication failed" {
					t.Fatalf("%s: %d %s", id, a.status, a.raw)
				}
				after := issuer.VerifierCounts(s.iss)
				work[id] = secret.Counts{Fast: after.Fast - before.Fast, Slow: after.Slow - before.Slow, Floors: after.Floors - before.Floors, Queued: after.Queued - before.Queued}
			}
			turns := uint64(0)
			if kind == "bcrypt" {
				turns = 1 // every failure waits its turn among the slow checks, and holds it alike
			}
			for id, w := range work {
				if w.Fast != work["nobody"].Fast || w.Floors != 1 || w.Queued != turns {
					t.Errorf("%s: work %+v differs from the unknown client's %+v", id, w, work["nobody"])
				}
			}
			if work["nobody"].Slow != 0 {
				t.Errorf("an unknown client burned bcrypt: %+v", work)
			}
		})
	}
}

// TestRefusalLogNamesWho: a refusal names a registered client ID, never an
// unregistered one or a secret, with the address and the budget that
// refused it.
func TestRefusalLogNamesWho(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Limits = limit.Config{FailedAttemptsPerSubject: 1, TrustedProxyHeader: "X-Forwarded-For"}
	})
	for i := range 2 {
		post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "admin", "client_secret", fmt.Sprint("hunter2-", i), "scope", scope.AdminWebAPI), "X-Forwarded-For", "203.0.113.9:4711")
	}
	post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "mallory-<script>", "client_secret", "hunter3", "scope", scope.AdminWebAPI), "X-Forwarded-For", "2001:db8::7")
	logs := s.logs.String()
	for _, want := range []string{`"client_id":"admin"`, `"address":"203.0.113.9"`, `"limit":"client"`, `"client_id":"(unregistered)"`, `"address":"2001:db8::/64"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	for _, never := range []string{"mallory", "hunter2", "hunter3", ":4711"} { // the port; a timestamp may hold 4711
		if strings.Contains(logs, never) {
			t.Errorf("the log holds %q:\n%s", never, logs)
		}
	}
}

// TestEndedRequestsAreCharged: a guess whose request has ended (the client
// hung up, or a deadline in front of the issuer fired) is still charged: an
// attacker cannot buy free bcrypt checks, or free guesses answered by a
// deadline's 503, by ending requests early. The client has two bcrypt
// hashes, as during a rotation.
func TestEndedRequestsAreCharged(t *testing.T) {
	hashes := make([]string, 2)
	for i := range hashes {
		h, err := secret.HashBcrypt(fmt.Sprint("pw-", i), 4)
		if err != nil {
			t.Fatal(err)
		}
		hashes[i] = h.String()
	}
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "rotating", SecretHashes: hashes, Scopes: []string{scope.AdminWebAPI}})
		c.Limits = limit.Config{FailedAttemptsPerSubject: 3}
	})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	counts := map[int]int{}
	for range 10 {
		req := httptest.NewRequestWithContext(ended, http.MethodPost, s.tokenURL(), strings.NewReader(form("grant_type", "client_credentials", "client_id", "rotating", "client_secret", "guess", "scope", scope.AdminWebAPI)))
		req.Header.Set("Content-Type", formType)
		rec := httptest.NewRecorder()
		s.iss.ServeHTTP(rec, req)
		counts[rec.Code]++
	}
	if counts[401] != 3 || counts[429] != 7 {
		t.Fatalf("answers to 10 ended guesses = %v, want 3 charged failures then 429s", counts)
	}
}

// TestSharedVerifier: with WithVerifier, the issuer checks secrets with the
// Verifier it is given, primed with its clients' hashes, so one bound on
// bcrypt work can cover the issuer and SCIMAuth together.
func TestSharedVerifier(t *testing.T) {
	human := humanClient(t)
	shared := secret.NewVerifier(secret.VerifierConfig{MaxConcurrentSlow: 1})
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, human)
		c.Verifier.MaxConcurrentSlow = 8
	}, issuer.WithVerifier(shared))
	if shared.Floor() <= 0 {
		t.Fatal("the shared verifier was not primed with the clients' bcrypt hash")
	}
	before := shared.Counts()
	a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "client_id", "human", "client_secret", humanSecret, "scope", scope.AdminWebAPI))
	if a.status != 200 || shared.Counts().Slow != before.Slow+1 {
		t.Fatalf("answer %d, counts %+v after %+v: the issuer did not use the shared verifier", a.status, shared.Counts(), before)
	}
	if got := issuer.VerifierCounts(s.iss); got != shared.Counts() {
		t.Fatalf("the issuer's verifier is not the shared one: %+v vs %+v", got, shared.Counts())
	}
}
