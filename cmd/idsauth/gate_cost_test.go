package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/nginxtest"
	"github.com/idsauth/idsauth/internal/proctest"
)

// BenchmarkGateBehindNginx measures what the gate costs behind nginx: the
// same nginx auth_request, on two servers of one nginx, asks the gate
// (/auth/nginx, a warm token: its validation and its answer's headers
// cached) on one and a stub that answers 200 at once on the other, both
// in front of one static upstream (an nginx server that returns 200),
// the gate and the stub in this process alike. The two are measured
// interleaved: with wrk when it is installed, in rounds of 4 s (gate,
// stub, gate, stub, ... five of each; 2 threads, 16 connections), else
// with a Go loopback load of 32 workers, each alternating the two request
// by request for 12 s. It reports each one's requests per second and
// median latency, and the cost: the ratios gate/stub of the latencies and
// stub/gate of the throughputs, each the median of the rounds, so that a
// round another process disturbed counts for little (docs/GATEWAY.md has
// the figures).
//
//	cd cmd/idsauth && go test -run '^$' -bench BenchmarkGateBehindNginx -benchtime 1x .
func BenchmarkGateBehindNginx(b *testing.B) {
	iss := testIssuer(b)
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	b.Cleanup(stub.Close)
	gatePort, stubPort, staticPort := proctest.FreePort(b), proctest.FreePort(b), proctest.FreePort(b)
	file := issuerGate(b, iss.URL(), "127.0.0.1:"+gatePort, nil)
	_, gsrv := startGate(b, file)
	auth := func(name, backend, path, port string) string {
		return fmt.Sprintf(`
	upstream %[1]s { server %[2]s; keepalive 64; }
	server {
		listen 127.0.0.1:%[4]s;
		location / {
			auth_request /_auth;
			auth_request_set $client_id $upstream_http_x_client_id;
			proxy_set_header X-Client-Id $client_id;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_pass http://static;
		}
		location = /_auth {
			internal;
			proxy_pass http://%[1]s%[3]s;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Forwarded-Method $request_method;
			proxy_set_header X-Forwarded-Host $http_host;
			proxy_set_header X-Forwarded-Uri $request_uri;
			proxy_set_header X-Request-Id $request_id;
		}
	}`, name, backend, path, port)
	}
	conf := fmt.Sprintf(`
	upstream static { server 127.0.0.1:%[1]s; keepalive 64; }
	server { listen 127.0.0.1:%[1]s; location / { return 200 "ok\n"; } }
	server { listen 127.0.0.1:{{port}}; location / { return 404; } }`, staticPort) +
		auth("gate", strings.TrimPrefix(gsrv.URL, "http://"), "/auth/nginx", gatePort) +
		auth("stub", strings.TrimPrefix(stub.URL, "http://"), "/", stubPort)
	ngx := nginxtest.Start(b, b.TempDir(), conf)
	tok := runnerToken(b, iss, "runner", "pd_AdminWebApi")
	gateURL := "http://127.0.0.1:" + gatePort + "/webapi/api/v3/demo/Admin/Users"
	stubURL := "http://127.0.0.1:" + stubPort + "/webapi/api/v3/demo/Admin/Users"
	for _, u := range []string{gateURL, stubURL} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s: %v %v\n%s", u, err, resp, ngx.Log())
		}
		resp.Body.Close()
	}
	b.ResetTimer()
	const round = 4 * time.Second
	if wrk, err := exec.LookPath("wrk"); err == nil {
		var gate, stubbed []loadResult
		for range 5 {
			gate = append(gate, runWrk(b, wrk, gateURL, tok, round))
			stubbed = append(stubbed, runWrk(b, wrk, stubURL, tok, round))
		}
		reportCost(b, "wrk", gate, stubbed)
		return
	}
	gate, stubbed := goLoad(gateURL, stubURL, tok, 3*round)
	reportCost(b, "Go loopback load", []loadResult{gate}, []loadResult{stubbed})
}

// loadResult is one measure's requests per second and median latency.
type loadResult struct {
	rps     float64
	latency time.Duration
}

func (r loadResult) String() string { return fmt.Sprintf("%.0f req/s %v", r.rps, r.latency) }

var (
	wrkRPS     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkLatency = regexp.MustCompile(`\s50%\s+([0-9.]+)(us|ms|s)`)
)

func runWrk(b *testing.B, wrk, u, tok string, d time.Duration) loadResult {
	b.Helper()
	out, err := exec.Command(wrk, "-t2", "-c16", "--latency", "-d"+strconv.Itoa(int(d.Seconds()))+"s", "-H", "Authorization: Bearer "+tok, u).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "Non-2xx") || strings.Contains(string(out), "Socket errors") {
		b.Fatalf("wrk saw refusals or errors:\n%s", out)
	}
	m, l := wrkRPS.FindStringSubmatch(string(out)), wrkLatency.FindStringSubmatch(string(out))
	if m == nil || l == nil {
		b.Fatalf("wrk's output:\n%s", out)
	}
	rps, _ := strconv.ParseFloat(m[1], 64)
	v, _ := strconv.ParseFloat(l[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[l[2]]
	return loadResult{rps: rps, latency: time.Duration(v * float64(unit))}
}

// goLoad alternates the two URLs request by request in 32 workers for d.
func goLoad(a, s, tok string, d time.Duration) (loadResult, loadResult) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	var sums [2]time.Duration
	var counts [2]int
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				req, _ := http.NewRequest(http.MethodGet, []string{a, s}[i%2], nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				start := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				el := time.Since(start)
				mu.Lock()
				sums[i%2] += el
				counts[i%2]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res := func(i int) loadResult {
		return loadResult{rps: float64(counts[i]) / d.Seconds(), latency: sums[i] / time.Duration(max(1, counts[i]))}
	}
	return res(0), res(1)
}

func reportCost(b *testing.B, how string, gate, stub []loadResult) {
	median := func(rs []loadResult) (float64, time.Duration) {
		rps := make([]float64, len(rs))
		lat := make([]time.Duration, len(rs))
		for i, r := range rs {
			rps[i], lat[i] = r.rps, r.latency
		}
		slices.Sort(rps)
		slices.Sort(lat)
		return rps[len(rs)/2], lat[len(rs)/2]
	}
	grps, glat := median(gate)
	srps, slat := median(stub)
	b.ReportMetric(grps, "gate-req/s")
	b.ReportMetric(srps, "stub-req/s")
	b.ReportMetric(float64(glat.Microseconds()), "gate-µs/req")
	b.ReportMetric(float64(slat.Microseconds()), "stub-µs/req")
	b.ReportMetric(float64(glat)/float64(slat), "cost-latency-x")
	b.ReportMetric(srps/grps, "cost-throughput-x")
	fmt.Fprintf(os.Stderr, "%s: gate %v, stub %v\n", how, gate, stub)
}
