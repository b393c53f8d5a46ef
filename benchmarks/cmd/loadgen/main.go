// Command loadgen is a bounded load generator for a running examplesvc on
// this machine. It refuses any target that is not a loopback address, and
// it always stops: after -d or -n, whichever comes first.
//
//	go run ./cmd/loadgen -mode token  -c 64 -d 10s   # client_credentials token requests
//	go run ./cmd/loadgen -mode admin  -c 64 -d 10s   # a protected Admin call with one token
//	go run ./cmd/loadgen -mode health -c 64 -d 10s   # the unprotected /healthz, for comparison
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

func main() {
	target := flag.String("target", "http://127.0.0.1:8080", "base URL of the service; loopback only")
	mode := flag.String("mode", "token", "token, admin or health")
	conns := flag.Int("c", 64, "concurrent connections (keep-alive)")
	dur := flag.Duration("d", 10*time.Second, "duration, at most 10m")
	n := flag.Int("n", 0, "stop after this many requests (0: no count limit)")
	id := flag.String("client-id", "demo-admin", "client ID")
	sec := flag.String("client-secret", "demo-admin-secret", "client secret")
	flag.Parse()
	if err := run(*target, *mode, *conns, *dur, *n, *id, *sec); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// checkLoopback refuses any target whose host is not a loopback address.
func checkLoopback(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("target %q is not a loopback address (127.0.0.0/8, ::1, localhost): refused", host)
	}
	return nil
}

func run(target, mode string, conns int, dur time.Duration, limit int, id, sec string) error {
	if err := checkLoopback(target); err != nil {
		return err
	}
	if conns < 1 || conns > 1024 {
		return errors.New("-c must be from 1 to 1024")
	}
	if dur <= 0 || dur > 10*time.Minute {
		return errors.New("-d must be from 1ns to 10m")
	}
	target = strings.TrimSuffix(target, "/")
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	// Each connection reuses one request, built once with its headers (the
	// Basic header encoded once), its body rewound before each send: the
	// generator spends its CPU on sending, not on building requests.
	var (
		method, path, body string
		header             = http.Header{}
	)
	switch mode {
	case "token":
		method, path = http.MethodPost, "/ids/connect/token"
		body = url.Values{"grant_type": {"client_credentials"}, "scope": {"pd_AdminWebApi"}}.Encode()
		header.Set("Content-Type", "application/x-www-form-urlencoded")
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(sec))))
	case "admin":
		cc := clientcredentials.Config{ClientID: id, ClientSecret: sec, TokenURL: target + "/ids/connect/token", Scopes: []string{"pd_AdminWebApi"}}
		tok, err := cc.Token(context.Background())
		if err != nil {
			return err
		}
		method, path = http.MethodGet, "/webapi/api/v3/demo/Admin/Groups"
		header.Set("Authorization", "Bearer "+tok.AccessToken)
	case "health":
		method, path = http.MethodGet, "/healthz"
	default:
		return fmt.Errorf("unknown -mode %q", mode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var (
		sent     atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		statuses = map[int]int{}
		errs     int
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			localStatus := map[int]int{}
			localErrs := 0
			rb := &rewinder{}
			req, err := http.NewRequestWithContext(ctx, method, target+path, nil)
			if err != nil {
				panic(err) // the target was parsed above
			}
			req.Header = header.Clone()
			if body != "" {
				req.Body, req.ContentLength = rb, int64(len(body))
			}
			for ctx.Err() == nil {
				if limit > 0 && sent.Add(1) > int64(limit) {
					break
				}
				rb.Reset(body)
				t0 := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						localErrs++
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				local = append(local, time.Since(t0))
				localStatus[resp.StatusCode]++
			}
			mu.Lock()
			lat = append(lat, local...)
			for k, v := range localStatus {
				statuses[k] += v
			}
			errs += localErrs
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("mode=%s conns=%d duration=%s requests=%d errors=%d statuses=%v\n", mode, conns, elapsed.Round(time.Millisecond), len(lat), errs, statuses)
	fmt.Printf("requests/s=%.0f p50=%s p99=%s p999=%s\n", float64(len(lat))/elapsed.Seconds(), pct(0.50), pct(0.99), pct(0.999))
	return nil
}

// rewinder is a request body sent again and again: Reset rewinds it,
// Close leaves it for the next send.
type rewinder struct{ strings.Reader }

func (*rewinder) Close() error { return nil }
