// Command example serves a small gRPC service behind grpcauth: gRPC's
// interop TestService (unary and streaming methods), with health checking
// and server reflection open to all, accepting the tokens of idsauth's
// example service (go run ./examplesvc, at the repository's root).
//
//	go run ./example                                     serve on 127.0.0.1:50051, tokens of http://127.0.0.1:8080/ids
//	go run ./example -addr 127.0.0.1:9000 -issuer URL    another port, another issuer
//
// It serves without TLS, so on a loopback address only. Try it with
// grpcurl, as its banner shows. SIGINT and SIGTERM stop it gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/scope"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "listen address, host:port, on a loopback address (the example has no TLS)")
	issuer := flag.String("issuer", "http://127.0.0.1:8080/ids", "the issuer whose tokens are accepted; its audience is {issuer}/resources")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *issuer, logger, os.Stdout); err != nil {
		logger.Error("example stopped", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, addr, issuer string, logger *slog.Logger, banner io.Writer) error {
	if host, _, err := net.SplitHostPort(addr); err != nil || !loopback(host) {
		return fmt.Errorf("-addr %q: the example serves without TLS, so on a loopback address only (127.0.0.1:port, [::1]:port, localhost:port)", addr)
	}
	// The keys come from the issuer's discovery document and JWKS, as for
	// any service that is not the issuer.
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuer:   issuer,
		Audience: []string{issuer + "/resources"},
		Logger:   logger,
	})
	if err != nil {
		return err
	}
	auth, err := grpcauth.New(grpcauth.Config{
		Validator: v,
		Scopes: map[string][]string{
			"/grpc.testing.TestService/":          {scope.AdminWebAPI},   // every method of the service...
			"/grpc.testing.TestService/EmptyCall": {scope.ConnectWebAPI}, // ...but this one
		},
		PublicHealth:     true,
		PublicReflection: true,
		Logger:           logger,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(auth.ServerOptions()...)
	testgrpc.RegisterTestServiceServer(srv, testService{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	printBanner(banner, ln.Addr().String(), issuer)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		srv.GracefulStop()
		return nil
	}
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// testService answers with who called: the client ID and scopes of the
// token, which grpcauth left in the context.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
}

func caller(ctx context.Context) (*accesstoken.Claims, error) {
	c, ok := accesstoken.ClaimsFrom(ctx)
	if !ok {
		return nil, status.Error(codes.Internal, "no claims: is grpcauth installed?")
	}
	return c, nil
}

func (testService) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

// UnaryCall answers the caller's client ID and scopes.
func (testService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	c, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{Username: c.ClientID, OauthScope: strings.Join(c.Scopes, " ")}, nil
}

// StreamingOutputCall sends one message per response parameter, each
// holding the caller's client ID.
func (testService) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	c, err := caller(stream.Context())
	if err != nil {
		return err
	}
	if len(req.GetResponseParameters()) > 100 {
		return status.Error(codes.InvalidArgument, "at most 100 response parameters")
	}
	for range req.GetResponseParameters() {
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(c.ClientID)}}); err != nil {
			return err
		}
	}
	return nil
}

// FullDuplexCall answers each message with the caller's client ID.
func (testService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	c, err := caller(stream.Context())
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(c.ClientID)}}); err != nil {
			return err
		}
	}
}

func printBanner(w io.Writer, addr, issuer string) {
	// The example service serves its demo issuer at http://<its -addr>/ids.
	issuerAddr := issuer
	if u, err := url.Parse(issuer); err == nil && u.Host != "" {
		issuerAddr = u.Host
	}
	fmt.Fprintf(w, `idsauth gRPC example listening on %[1]s (no TLS), tokens of %[2]s

  grpc.testing.TestService             pd_AdminWebApi (EmptyCall: pd_ConnectWebApi)
  grpc.health.v1.Health                no token
  grpc.reflection.v1.ServerReflection  no token

Try it, with the example service as that issuer (go run ./examplesvc -addr %[3]s):

  grpcurl -plaintext %[1]s list
  TOKEN=$(curl -s -u demo-admin:demo-admin-secret -d grant_type=client_credentials -d scope=pd_AdminWebApi %[2]s/connect/token | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  grpcurl -plaintext -H "authorization: Bearer $TOKEN" -d '{}' %[1]s grpc.testing.TestService/UnaryCall
  grpcurl -plaintext -H "authorization: Bearer $TOKEN" -d '{"responseParameters":[{},{}]}' %[1]s grpc.testing.TestService/StreamingOutputCall
`, addr, issuer, issuerAddr)
}
