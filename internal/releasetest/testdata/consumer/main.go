// Command consumer is a service built on idsauth's published modules, as a
// user builds one: an issuer whose failure budgets are kept in Redis (by
// redisstore) and whose events are OpenTelemetry metrics and spans (by
// idsauthotel), an Admin API route behind middleware, and a caller with
// client; a gRPC service behind grpcauth and a Connect handler behind
// connectauth, called with and without the client's token.
// TestPublishedModulesInstall builds it in a fresh module, against the
// modules in a file-based proxy.
//
// The Redis it is given does not listen, so redisstore falls back to
// budgets in memory (FailOpen), nor does the PostgreSQL of its client
// registry (pgregistry): nothing outside the process is needed.
// It prints what it saw, and exits 1 when something went wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/idsauthotel"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/pgregistry"
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

	// A client registry on a PostgreSQL that does not listen: the issuer
	// serves the file's clients, and the registry says it is not up.
	reg, err := pgregistry.New(ctx, pgregistry.Config{URL: "postgres://idsauth:pw@" + addr + "/idsauth", Issuer: iss,
		Logger: slog.New(slog.DiscardHandler), Timeout: time.Second})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = reg.WaitLoaded(wctx)
	cancel()
	reg.Close()
	fmt.Fprintf(out, "pgregistry without PostgreSQL: loaded %t, up %t\n", err == nil, reg.Status().Up)

	if err := callGRPC(ctx, out, v, cfg); err != nil {
		return err
	}
	return callConnect(ctx, out, v, cfg)
}

// callGRPC serves the health service behind grpcauth on loopback and
// calls it without a token, then with the client's.
func callGRPC(ctx context.Context, out io.Writer, v accesstoken.TokenValidator, cfg client.Config) error {
	auth, err := grpcauth.New(grpcauth.Config{Validator: v, DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	who := make(chan string, 1)
	srv := grpc.NewServer(append(auth.ServerOptions(), grpc.ChainUnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if c, ok := accesstoken.ClaimsFrom(ctx); ok {
				who <- c.ClientID
			}
			return h(ctx, req)
		}))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	plain, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer plain.Close()
	_, err = healthpb.NewHealthClient(plain).Check(ctx, &healthpb.HealthCheckRequest{})
	st := status.Convert(err)
	fmt.Fprintf(out, "grpc without a token: %s %q\n", st.Code(), st.Message())

	creds, err := grpcauth.NewCredentials(ctx, grpcauth.ClientConfig{Tokens: &cfg, InsecureLoopback: true})
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), append(creds.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		return err
	}
	fmt.Fprintf(out, "grpc with client's token: %q\n", <-who)
	return nil
}

// callConnect serves a Connect procedure behind connectauth and calls it
// without a token, then with the client's.
func callConnect(ctx context.Context, out io.Writer, v accesstoken.TokenValidator, cfg client.Config) error {
	auth, err := connectauth.New(connectauth.Config{Validator: v, DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		return err
	}
	const procedure = "/consumer.v1.WhoService/Who"
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure,
		func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			c, _ := accesstoken.ClaimsFrom(ctx)
			return connect.NewResponse(wrapperspb.String(c.ClientID)), nil
		}, connect.WithInterceptors(auth)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	plain := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient, srv.URL+procedure)
	_, err = plain.CallUnary(ctx, connect.NewRequest(wrapperspb.String("")))
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("connect without a token: %v", err)
	}
	fmt.Fprintf(out, "connect without a token: %s %q\n", ce.Code(), ce.Message())

	cfg.Origins = []string{srv.URL}
	ic, err := connectauth.NewClientInterceptor(ctx, connectauth.ClientConfig{Tokens: &cfg, InsecureLoopback: true})
	if err != nil {
		return err
	}
	authed := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](ic.HTTPClient(http.DefaultClient), srv.URL+procedure, connect.WithInterceptors(ic))
	resp, err := authed.CallUnary(ctx, connect.NewRequest(wrapperspb.String("")))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "connect with client's token: %q\n", resp.Msg.GetValue())
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
