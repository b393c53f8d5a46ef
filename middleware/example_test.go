package middleware_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/justinas/alice"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// exampleIssuer starts an identity service on loopback with one client,
// "reporting" / "s3cret", allowed pd_AdminWebApi.
func exampleIssuer() (*httptest.Server, *issuer.Issuer) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids",
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret")}, Scopes: []string{scope.AdminWebAPI},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	return srv, iss
}

func ExampleNewValidator() {
	ids, iss := exampleIssuer()
	defer ids.Close()

	// The issuer URL and who this API is, as the issuer writes it in
	// "aud" (this module's issuer and IdentityServer with its static
	// audience on: "{issuer}/resources"). The JWKS is found by discovery
	// and refreshed in the background until ctx ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := middleware.NewValidator(ctx, middleware.ValidatorConfig{
		Issuer:   iss.URL(),
		Audience: []string{iss.URL() + "/resources"},
	})
	if err != nil {
		log.Fatal(err)
	}

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(ctx)
	if err != nil {
		log.Fatal(err)
	}
	claims, err := v.Validate(ctx, tok.AccessToken)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.ClientID, claims.Scopes)

	// One more byte of payload: the signature no longer fits, and the
	// claims are never read.
	tampered := strings.Replace(tok.AccessToken, ".", ".e", 1)
	_, err = v.Validate(ctx, tampered)
	fmt.Println(err)
	// Output:
	// reporting pd_AdminWebApi
	// signature invalid
}

func ExampleRequireBearer() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	// The issuer runs in this process: validate with its keys directly.
	v, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := middleware.ClaimsFrom(r.Context())
		fmt.Fprintf(w, "hello %s", c.ClientID)
	})
	api := httptest.NewServer(middleware.RequireBearerWithConfig(v, middleware.BearerConfig{Realm: "example"})(hello))
	defer api.Close()

	resp, err := http.Get(api.URL)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	resp, err = cc.Client(context.Background()).Get(api.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 401 Bearer realm="example"
	// 200 hello reporting
}

func ExampleRequireScope() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := middleware.NewValidator(context.Background(), middleware.ValidatorConfig{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	authed := alice.New(middleware.RequireBearer(v))
	mux := http.NewServeMux()
	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users", authed.Append(middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(
		func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) }))
	mux.Handle("POST /webapi/api/v3/{datasourceId}/Connect/Documents", authed.Append(middleware.RequireScope(scope.ConnectWebAPI)).ThenFunc(
		func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "document") }))
	api := httptest.NewServer(mux)
	defer api.Close()

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	client := cc.Client(context.Background())
	resp, err := client.Get(api.URL + "/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	resp, err = client.Post(api.URL+"/webapi/api/v3/demo/Connect/Documents", "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	// Output:
	// 200
	// 403 Bearer realm="idsauth", error="insufficient_scope", error_description="token lacks the scope this API requires", scope="pd_ConnectWebApi"
}
