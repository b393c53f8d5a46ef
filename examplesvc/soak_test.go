package main

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/scope"
)

var soak = flag.Duration("soak", 3*time.Second, "how long TestSoak runs (the full run: -soak 60s)")

// TestSoak runs mixed traffic against the example service on loopback for
// -soak (64 connections: 70% valid tokens, 10% expired, 10% garbage, 10%
// missing, and token requests beside them), checks every answer against
// CONTRACT.md, and compares goroutines and heap before and after.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak of mixed traffic for -soak (3 s by default): run without -short")
	}
	if *soak > 10*time.Minute {
		t.Fatal("-soak is bounded to 10m")
	}
	s := newInProcess(t)
	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	cc := clientcredentials.Config{ClientID: "admin", ClientSecret: "admin-secret", TokenURL: s.URL + "/ids/connect/token", Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	expired := jwktest.Sign(t, s.key, nil, jwktest.With(jwktest.Claims(s.issuer(), scope.AdminWebAPI, time.Hour), "exp", time.Now().Add(-time.Hour).Unix()))
	target := s.URL + "/webapi/api/v3/demo/Admin/Groups"

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	var (
		counts               sync.Map // kind → *atomic.Int64
		wrong, fiveXX, total atomic.Int64
		firstWrong           atomic.Value
	)
	count := func(kind string) {
		v, _ := counts.LoadOrStore(kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	judge := func(kind string, ok bool, status int, body string) {
		total.Add(1)
		count(kind)
		if status >= 500 {
			fiveXX.Add(1)
		}
		if !ok {
			wrong.Add(1)
			firstWrong.CompareAndSwap(nil, kind+": "+body)
		}
	}
	deadline := time.Now().Add(*soak)
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; time.Now().Before(deadline); i++ {
				if w < 4 { // token requests beside the calls
					resp, err := hc.PostForm(s.URL+"/ids/connect/token", map[string][]string{
						"grant_type": {"client_credentials"}, "client_id": {"connect"}, "client_secret": {"connect-secret"}, "scope": {scope.ConnectWebAPI}})
					if err != nil {
						judge("token", false, 0, err.Error())
						continue
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					judge("token", resp.StatusCode == 200 && strings.Contains(string(b), `"access_token"`), resp.StatusCode, string(b))
					continue
				}
				req, _ := http.NewRequest("GET", target, nil)
				kind := "valid"
				switch i % 10 {
				case 7:
					kind = "expired"
					req.Header.Set("Authorization", "Bearer "+expired)
				case 8:
					kind = "garbage"
					req.Header.Set("Authorization", "Bearer not.a.token")
				case 9:
					kind = "missing"
				default:
					req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
				}
				resp, err := hc.Do(req)
				if err != nil {
					judge(kind, false, 0, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var m map[string]any
				isJSON := json.Unmarshal(b, &m) == nil
				var ok bool
				switch kind {
				case "valid":
					ok = resp.StatusCode == 200 && isJSON && m["pagingDetails"] != nil
				case "expired":
					ok = resp.StatusCode == 401 && m["error"] == "invalid_token" && m["error_description"] == "token expired"
				case "garbage":
					ok = resp.StatusCode == 401 && m["error"] == "invalid_token"
				case "missing":
					ok = resp.StatusCode == 401 && !isJSON && bareChallenges(resp.Header.Values("WWW-Authenticate"), resp.Request.URL.EscapedPath())
				}
				judge(kind, ok, resp.StatusCode, string(b))
			}
		}()
	}
	wg.Wait()
	tr.CloseIdleConnections()
	s.CloseClientConnections()

	var after runtime.MemStats
	var goroutinesAfter int
	for range 50 { // let server goroutines of closed connections end
		runtime.GC()
		goroutinesAfter = runtime.NumGoroutine()
		if goroutinesAfter <= goroutinesBefore+2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	summary := map[string]int64{}
	counts.Range(func(k, v any) bool { summary[k.(string)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("soak %s: %d answers %v; wrong %d, 5xx %d; goroutines %d → %d; heap %d KiB → %d KiB",
		*soak, total.Load(), summary, wrong.Load(), fiveXX.Load(), goroutinesBefore, goroutinesAfter, before.HeapAlloc>>10, after.HeapAlloc>>10)
	if wrong.Load() != 0 || fiveXX.Load() != 0 {
		t.Fatalf("%d wrong answers, %d 5xx; first: %v", wrong.Load(), fiveXX.Load(), firstWrong.Load())
	}
	for _, kind := range []string{"valid", "expired", "garbage", "missing", "token"} {
		if summary[kind] == 0 {
			t.Fatalf("no %s requests were made", kind)
		}
	}
	if goroutinesAfter > goroutinesBefore+2 {
		t.Fatalf("goroutines %d before, %d after: a leak", goroutinesBefore, goroutinesAfter)
	}
}
