package grpcauthtest_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/grpcauth/grpcauthtest"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestHealthIsProtected runs the contract's cases against a method of a
// real server on loopback: the health service, protected here as your own
// service would be. A streaming method's call opens the stream, sends and
// receives once.
func TestHealthIsProtected(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth, err := grpcauth.New(grpcauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(auth.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := healthpb.NewHealthClient(conn)

	grpcauthtest.CheckMethod(t, iss, "/grpc.health.v1.Health/Check", func(ctx context.Context) error {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}, scope.AdminWebAPI)
	grpcauthtest.CheckMethod(t, iss, "/grpc.health.v1.Health/Watch", func(ctx context.Context) error {
		s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}, scope.AdminWebAPI)
}
