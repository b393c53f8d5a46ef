package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// BenchmarkFailureTiming measures, over loopback HTTP, how long the token
// endpoint takes to answer 401 invalid_client for an unknown client ID, a
// wrong secret, and a wrong secret for a client with two hashes (a secret
// being rotated), with every client's hashes of one kind. The three are
// sent in turn, so drift hits them alike; each sub-benchmark reports the
// median of each and max/min, the ratio of the slowest median to the
// fastest. The bar: they answer alike.
//
//	go test -run '^$' -bench FailureTiming -benchtime 400x .
func BenchmarkFailureTiming(b *testing.B) {
	hash := map[string]func(string) string{
		"sha256": func(s string) string { return secret.HashSHA256(s).String() },
		"sha512": func(s string) string { return "sha512:" + strings.Repeat("A", 86) + "==" },
		"bcrypt-10": func(s string) string {
			h, err := bcrypt.GenerateFromPassword([]byte(s), 10)
			if err != nil {
				b.Fatal(err)
			}
			return "bcrypt:" + string(h)
		},
	}
	for _, kind := range []string{"sha256", "sha512", "bcrypt-10"} {
		b.Run(kind, func(b *testing.B) {
			h := hash[kind]
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			defer srv.Close()
			iss, err := issuer.New(&issuer.Config{
				Issuer:       srv.URL + "/ids",
				EphemeralKey: true,
				Clients: []issuer.ClientConfig{
					{ClientID: "single", SecretHashes: []string{h("one")}, Scopes: []string{scope.AdminWebAPI}},
					{ClientID: "rotated", SecretHashes: []string{h("old"), h("new")}, Scopes: []string{scope.AdminWebAPI}},
				},
				// Out of reach: the limiter is not what is measured.
				Limits: limit.Config{FailedAttemptsPerSubject: 1 << 30, FailedAttemptsPerAddress: 1 << 30},
			})
			if err != nil {
				b.Fatal(err)
			}
			mux.Handle("/ids/", iss)
			client := srv.Client()
			paths := []string{"unknown", "wrong", "rotated"}
			ids := map[string]string{"unknown": "nobody-at-all", "wrong": "single", "rotated": "rotated"}
			bodies := map[string]string{}
			for _, p := range paths {
				bodies[p] = url.Values{"grant_type": {"client_credentials"}, "client_id": {ids[p]}, "client_secret": {"guess"}, "scope": {scope.AdminWebAPI}}.Encode()
			}
			send := func(p string) time.Duration {
				start := time.Now()
				resp, err := client.Post(srv.URL+"/ids/connect/token", "application/x-www-form-urlencoded", strings.NewReader(bodies[p]))
				d := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					b.Fatalf("%s: %d", p, resp.StatusCode)
				}
				return d
			}
			for _, p := range paths { // warm the connection
				send(p)
			}
			samples := map[string][]time.Duration{}
			b.ResetTimer()
			i := 0
			for b.Loop() {
				for j := range paths {
					p := paths[(i+j)%len(paths)]
					samples[p] = append(samples[p], send(p))
				}
				i++
			}
			b.StopTimer()
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for _, p := range paths {
				m := median(samples[p])
				lo, hi = min(lo, m), max(hi, m)
				b.ReportMetric(float64(m.Microseconds()), p+"-µs")
			}
			b.ReportMetric(float64(hi)/float64(lo), "max/min")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
