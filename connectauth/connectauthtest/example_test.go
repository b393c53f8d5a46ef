package connectauthtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idsauth/idsauth/connectauth"
	"github.com/idsauth/idsauth/connectauth/connectauthtest"
	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/scope"
)

// TestProcedureIsProtected runs the contract's cases against a procedure
// of a real handler on loopback.
func TestProcedureIsProtected(t *testing.T) {
	iss := idsauthtest.NewIssuer(t)
	auth, err := connectauth.New(connectauth.Config{Validator: iss.Validator(), DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	const procedure = "/docs.v1.UserService/WhoAmI"
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure,
		func(ctx context.Context, _ *connect.Request[wrapperspb.StringValue]) (*connect.Response[wrapperspb.StringValue], error) {
			return connect.NewResponse(wrapperspb.String("")), nil
		}, connect.WithInterceptors(auth)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := connect.NewClient[wrapperspb.StringValue, wrapperspb.StringValue](http.DefaultClient, srv.URL+procedure)

	connectauthtest.CheckProcedure(t, iss, procedure, func(ctx context.Context) error {
		_, err := c.CallUnary(ctx, connect.NewRequest(wrapperspb.String("")))
		return err
	}, scope.AdminWebAPI)
}
