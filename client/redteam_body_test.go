package client_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/client"
)

// The red-team pass over issue 32, item 4: the client reads ahead of a
// 401 (and of a DPoP 400) to find its error code. These tests try to make
// that read ahead leak a connection, grow without bound, hang on a body
// that never ends, or send a request body twice wrong; each is a
// regression guard.

// connCounter counts a server's connections by state.
type connCounter struct {
	mu     sync.Mutex
	opened int
	open   map[net.Conn]bool
}

func newConnCounter() *connCounter { return &connCounter{open: map[net.Conn]bool{}} }

func (c *connCounter) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch s {
	case http.StateNew:
		c.opened++
		c.open[conn] = true
	case http.StateClosed, http.StateHijacked:
		delete(c.open, conn)
	}
}

func (c *connCounter) counts() (opened, open int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, len(c.open)
}

// waitFor polls cond until it holds, failing after 20 seconds: a bound
// for a failure only, never a measure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestRedTeamEndlessInvalidTokenBody: a service that answers every call
// 401 invalid_token with a body that never ends (it writes until the
// connection is gone) gets each call's connection closed: the first 401
// is closed unread, the second is read 64 KiB ahead and closed, the
// caller gets an *InvalidTokenError whose body gives those 64 KiB and
// then an error, and every handler of the service ends, its connection
// closed, with 16 callers at once. The client reads at most 64 KiB of
// each answer, however much the service writes.
func TestRedTeamEndlessInvalidTokenBody(t *testing.T) {
	w := newWorld(t, 0, nil)
	conns := newConnCounter()
	var started, ended atomic.Int64
	chunk := []byte(strings.Repeat("x", 16<<10))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		started.Add(1)
		defer ended.Add(1)
		rw.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		rw.WriteHeader(http.StatusUnauthorized)
		for {
			if _, err := rw.Write(chunk); err != nil {
				return
			}
			rw.(http.Flusher).Flush()
		}
	}))
	srv.Config.ConnState = conns.track
	srv.Start()
	t.Cleanup(srv.Close)
	c := w.client(func(cfg *client.Config) { cfg.Origins = []string{srv.URL} })
	const callers = 16
	var wg sync.WaitGroup
	var typed atomic.Int64
	for range callers {
		wg.Go(func() {
			_, err := c.Get(srv.URL)
			var ite *client.InvalidTokenError
			if !errors.As(err, &ite) {
				t.Errorf("got %v, want *InvalidTokenError", err)
				return
			}
			got, rerr := io.ReadAll(ite.Response.Body)
			if len(got) != 64<<10 || rerr == nil {
				t.Errorf("the error's body: %d bytes and %v, want 64 KiB and an error", len(got), rerr)
				return
			}
			typed.Add(1)
		})
	}
	wg.Wait()
	if typed.Load() != callers {
		t.Fatalf("%d of %d callers got the typed error", typed.Load(), callers)
	}
	waitFor(t, "every handler ended", func() bool { return started.Load() == 2*callers && ended.Load() == started.Load() })
	waitFor(t, "every connection closed", func() bool { _, open := conns.counts(); return open == 0 })
}

// TestRedTeamErrorBodiesReleaseTheirConnections: after calls whose first
// answer is a 401 invalid_token and whose retry succeeds, the service
// holds no connection of the client's but the idle ones the pool keeps:
// a short error body read whole while looking ahead leaves its
// connection reusable, so twenty calls in a row use one; one the
// challenge already marks invalid_token, or a long one (1 MiB, past the
// look-ahead), closes its connection, so nothing is held either way.
func TestRedTeamErrorBodiesReleaseTheirConnections(t *testing.T) {
	for _, c := range []struct {
		name      string
		body      string
		header    bool // invalid_token in WWW-Authenticate; else in the JSON body
		maxOpened int
	}{
		{"short JSON body", `{"error":"invalid_token"}`, false, 1},
		// The challenge answers without a look at the body, which is then
		// closed unread: its connection goes, even for 25 bytes (a new
		// handshake per rejected call; noted in the red-team report, not
		// a leak).
		{"short body, the challenge says it", `{"error":"invalid_token"}`, true, 21},
		{"1 MiB body, the challenge says it", strings.Repeat("x", 1<<20), true, 21},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 0, nil)
			conns := newConnCounter()
			var calls atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if calls.Add(1)%2 == 1 {
					if c.header {
						rw.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
					}
					rw.WriteHeader(http.StatusUnauthorized)
					_, _ = io.WriteString(rw, c.body)
					return
				}
				_, _ = io.WriteString(rw, "ok")
			}))
			srv.Config.ConnState = conns.track
			srv.Start()
			t.Cleanup(srv.Close)
			hc := w.client(func(cfg *client.Config) { cfg.Origins = []string{srv.URL} })
			for i := range 20 {
				status, body, err := get(t, hc, srv.URL)
				if err != nil || status != 200 || body != "ok" {
					t.Fatalf("call %d: %d %q %v", i, status, body, err)
				}
			}
			if n := w.tokenCalls.Load(); n != 21 {
				t.Errorf("%d token requests for 20 rejected calls, want 21 (one each, and the first)", n)
			}
			opened, _ := conns.counts()
			if opened > c.maxOpened {
				t.Errorf("%d connections opened for 40 requests, want at most %d", opened, c.maxOpened)
			}
			waitFor(t, "at most one connection (the idle one) held", func() bool { _, open := conns.counts(); return open <= 1 })
		})
	}
}

// TestRedTeamConcurrentRetriesSendTheirOwnBodies: 32 callers at once POST
// bodies of their own with a token the service rejects (invalid_token in
// the JSON body of a 401, found by the look-ahead); each retry sends its
// own body whole, once more, with the new token; the 32 share one token
// request; nobody gets another's answer.
func TestRedTeamConcurrentRetriesSendTheirOwnBodies(t *testing.T) {
	w := newWorld(t, 0, nil)
	var mu sync.Mutex
	var rejected string
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		b, _ := io.ReadAll(r.Body)
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		if rejected == "" {
			rejected = tok
		}
		reject := tok == rejected
		mu.Unlock()
		if reject {
			rw.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(rw, `{"error":"invalid_token","error_description":"`+strings.Repeat("p", 1000)+`"}`)
			return
		}
		_, _ = rw.Write(b)
	}))
	t.Cleanup(srv.Close)
	hc := w.client(func(cfg *client.Config) { cfg.Origins = []string{srv.URL} })
	// The first token, before the callers: the service rejects it.
	if status, _, err := get(t, hc, srv.URL); err != nil || status != 200 {
		t.Fatalf("the first call: %d %v", status, err)
	}
	mu.Lock()
	rejected = ""
	mu.Unlock()
	before := w.tokenCalls.Load()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			body := fmt.Sprintf("caller %d %s", i, strings.Repeat("b", 100*i))
			resp, err := hc.Post(srv.URL, "text/plain", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(got) != body {
				t.Errorf("caller %d: %d, %d bytes back of %d", i, resp.StatusCode, len(got), len(body))
			}
		})
	}
	wg.Wait()
	if n := w.tokenCalls.Load() - before; n != 1 {
		t.Errorf("%d token requests for 32 callers rejected at once, want 1", n)
	}
}
