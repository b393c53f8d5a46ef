package connectauth_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/scope"
)

// Protect Connect handlers: every procedure needs pd_AdminWebApi. A call
// without a token gets the contract's answer.
func ExampleNew() {
	// The issuer's keys, fetched and kept fresh (a failed first fetch
	// is no error: tokens are refused until one succeeds).
	keys, err := accesstoken.NewJWKS(context.Background(), accesstoken.JWKSConfig{URL: "https://docs.example.com/ids/.well-known/openid-configuration/jwks"})
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Keys:     keys,
		Issuer:   "https://docs.example.com/ids",
		Audience: []string{"https://docs.example.com/ids/resources"},
	})
	if err != nil {
		log.Fatal(err)
	}
	auth, err := connectauth.New(connectauth.Config{Validator: v, DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		log.Fatal(err)
	}
	const procedure = "/docs.v1.UserService/WhoAmI"
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure,
		func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			claims, _ := accesstoken.ClaimsFrom(ctx)
			return connect.NewResponse(wrapperspb.String(claims.ClientID)), nil
		}, connect.WithInterceptors(auth)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient, srv.URL+procedure)
	_, err = c.CallUnary(context.Background(), connect.NewRequest(wrapperspb.String("")))
	var ce *connect.Error
	if errors.As(err, &ce) {
		fmt.Println(ce.Code(), ce.Message(), ce.Meta().Get("WWW-Authenticate"))
	}
	// Output: unauthenticated no bearer token Bearer realm="idsauth"
}

// Call a protected service with the client's tokens: the interceptor
// chooses them, and its HTTP client sends them to the service's https
// origin alone.
func ExampleNewClientInterceptor() {
	ctx := context.Background()
	tokens, err := connectauth.NewClientInterceptor(ctx, connectauth.ClientConfig{
		Tokens: &client.Config{
			ClientID:     "reporting",
			ClientSecret: os.Getenv("REPORTING_SECRET"),
			BaseURL:      "https://docs.example.com",
			Scopes:       []string{scope.AdminWebAPI},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	whoAmI := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](tokens.HTTPClient(http.DefaultClient),
		"https://docs.example.com/docs.v1.UserService/WhoAmI", connect.WithInterceptors(tokens))
	_ = whoAmI // whoAmI.CallUnary(ctx, connect.NewRequest(...))
}
