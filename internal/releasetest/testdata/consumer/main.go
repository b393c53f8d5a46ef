// Command consumer is a service built on idsauth's published modules, as a
// user builds one: an issuer whose failure budgets are kept in Redis (by
// redisstore) and whose events are OpenTelemetry metrics and spans (by
// idsauthotel), an Admin API route behind middleware, and a caller with
// client. TestPublishedModulesInstall builds it in a fresh module, against
// the modules in a file-based proxy.
//
// The Redis it is given does not listen, so redisstore falls back to
// budgets in memory (FailOpen): nothing outside the process is needed.
// It prints what it saw, and exits 1 when something went wrong.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/idsauthotel"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/redisstore"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	ctx := context.Background()

	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	obs, err := idsauthotel.New(idsauthotel.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
	})
	if err != nil {
		return err
	}

	addr, err := closedPort()
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	store := redisstore.New(rdb, redisstore.Options{Prefix: "idsauth:token:"})

	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{{
			ClientID:     "reporting",
			SecretHashes: []string{secret.HashSHA256("s3cret").String()},
			Scopes:       []string{scope.AdminWebAPI},
		}},
	}, issuer.WithObserver(obs), issuer.WithLimiterStore(store), issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	mux.Handle("/ids/", iss)

	// The validator finds the keys as a service elsewhere would: discovery
	// and the JWKS over HTTP.
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer:   iss.URL(),
		Audience: []string{iss.URL() + "/resources"},
		Observer: obs,
	})
	if err != nil {
		return err
	}
	admin := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Observer: obs})
	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", admin(middleware.RequireScope(scope.AdminWebAPI)(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "the users of %s", r.PathValue("datasourceId"))
		}))))
	users := srv.URL + "/webapi/api/v3/demo/Admin/Users"

	resp, err := http.Get(users)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintf(out, "without a token: %d, challenge %q\n", resp.StatusCode, scheme(resp.Header.Get("WWW-Authenticate")))

	cfg := client.Config{
		ClientID:     "reporting",
		ClientSecret: "s3cret",
		BaseURL:      srv.URL,
		Scopes:       []string{scope.AdminWebAPI},
	}
	hc := cfg.Client(ctx)
	resp, err = hc.Get(users)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "with client's token: %d, %q\n", resp.StatusCode, body)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, name := range []string{"idsauth.tokens.issued", "idsauth.validations", "idsauth.rejections"} {
		fmt.Fprintf(out, "metric %s: %d\n", name, sum(rm, name))
	}
	for _, name := range []string{"idsauth.token", "idsauth.validate"} {
		n := 0
		for _, s := range spans.Ended() {
			if s.Name() == name {
				n++
			}
		}
		fmt.Fprintf(out, "spans %s: %d\n", name, n)
	}

	st := store.Stats()
	if st.Errors == 0 || st.Redis != 0 {
		return fmt.Errorf("redisstore reached a Redis that does not listen: %+v", st)
	}
	fmt.Fprintf(out, "redisstore without Redis: decided in memory: %t\n", st.Fallback > 0)
	return nil
}

// closedPort returns a loopback address that nothing listens on.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

func scheme(challenge string) string {
	s, _, _ := strings.Cut(challenge, " ")
	return s
}

// sum adds up the points of the int64 counter name.
func sum(rm metricdata.ResourceMetrics, name string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range s.DataPoints {
					n += p.Value
				}
			}
		}
	}
	return n
}
