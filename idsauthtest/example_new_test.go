package idsauthtest_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// A route that takes DPoP-bound tokens passes every DPoP case, and the
// bearer ones too; in a test, pass t.
func ExampleIssuer_CheckProtectedDPoP() {
	t := &printer{}
	defer t.close()
	iss := idsauthtest.NewIssuer(t)
	cfg := middleware.DPoPConfig{PublicURL: "https://api.example.test"}
	dpop, err := middleware.NewDPoP(cfg)
	if err != nil {
		panic(err)
	}
	h := alice.New(middleware.RequireBearerWithConfig(iss.Validator(), middleware.BearerConfig{DPoP: dpop}),
		middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(listUsers)
	iss.CheckProtectedDPoP(t, h, cfg, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI) // the route's own DPoPConfig
	iss.CheckProtected(t, h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	fmt.Println("checked")
	// Output: checked
}

// A route that takes reference tokens too gets their cases from
// CheckProtected.
func ExampleIssuer_ReferenceToken() {
	t := &printer{}
	defer t.close()
	iss := idsauthtest.NewIssuer(t)
	h := alice.New(middleware.RequireBearer(iss.ValidatorWithReferences()),
		middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(listUsers)
	iss.CheckProtected(t, h, "GET /webapi/api/v3/demo/Admin/Users", scope.AdminWebAPI)
	fmt.Println(len(iss.ReferenceToken(t, scope.AdminWebAPI)), "characters")
	// Output: 43 characters
}

// Run IdentityServer's table against a token endpoint: this issuer under
// its identityserver profile answers as IdentityServer does.
func ExampleCheckTokenEndpoint() {
	t := &printer{}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids", EphemeralKey: true, Profile: "identityserver",
		Clients: []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}}},
	})
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = iss
	idsauthtest.CheckTokenEndpoint(t, iss.TokenURL(), "c", "s", "identityserver")
	fmt.Println("checked")
	// Output: checked
}

// A service with scopes of its own names them: the kit's issuer grants
// them, and CheckProtected runs every case on a route that needs one.
func ExampleWithScopes() {
	t := &printer{}
	defer t.close()
	iss := idsauthtest.NewIssuer(t, idsauthtest.WithScopes("orders.read", "orders.write"))
	h := alice.New(middleware.RequireBearer(iss.ValidatorWithReferences()),
		middleware.RequireScope("orders.read")).ThenFunc(listUsers)
	iss.CheckProtected(t, h, "GET /orders", "orders.read")
	tok, err := iss.Config("orders.read").Token(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(tok.TokenType, "token for orders.read")
	// Output: Bearer token for orders.read
}
