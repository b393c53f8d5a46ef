package grpcauth_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/grpcauth"
	"github.com/idsauth/idsauth/scope"
)

// Protect a gRPC server: every method of the service needs
// pd_AdminWebApi, any other method is refused, health checking is open.
// Here the health service stands in for yours, checked as a protected
// service would be.
func ExampleNew() {
	ctx := context.Background()
	// The issuer's keys, fetched and kept fresh (a failed first fetch
	// is no error: tokens are refused until one succeeds).
	keys, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{URL: "https://docs.example.com/ids/.well-known/openid-configuration/jwks"})
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Keys:     keys,
		Issuer:   "https://docs.example.com/ids",
		Audience: []string{"https://docs.example.com/ids/resources"},
	})
	if err != nil {
		log.Fatal(err)
	}
	auth, err := grpcauth.New(grpcauth.Config{
		Validator: v,
		Scopes:    map[string][]string{"/grpc.health.v1.Health/": {scope.AdminWebAPI}},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(auth.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()

	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err), status.Convert(err).Message())
	// Output: Unauthenticated no bearer token
}

// Call a protected server with the client's tokens, over TLS in
// production; here to a loopback target without it, which the caller
// allows explicitly.
func ExampleNewCredentials() {
	ctx := context.Background()
	creds, err := grpcauth.NewCredentials(ctx, grpcauth.ClientConfig{
		Tokens: &client.Config{
			ClientID:     "reporting",
			ClientSecret: os.Getenv("REPORTING_SECRET"),
			BaseURL:      "http://127.0.0.1:8080", // the example service's token endpoint
			Scopes:       []string{scope.AdminWebAPI},
		},
		InsecureLoopback: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient("127.0.0.1:50051", append(creds.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	// healthpb.NewHealthClient(conn).Check(ctx, ...), or your own stubs.
}
