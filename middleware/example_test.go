package middleware_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/justinas/alice"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// exampleIssuer starts an identity service on loopback with one client,
// "reporting" / "s3cret", allowed pd_AdminWebApi.
func exampleIssuer() (*httptest.Server, *issuer.Issuer) {
	return exampleIssuerWith(func(*issuer.Config) {})
}

// exampleIssuerWith is exampleIssuer with its config changed by edit.
func exampleIssuerWith(edit func(*issuer.Config)) (*httptest.Server, *issuer.Issuer) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	cfg := &issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true, // a key made at start: for examples and tests only
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, Scopes: []string{scope.AdminWebAPI},
		}},
	}
	edit(cfg)
	iss, err := issuer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	return srv, iss
}

func ExampleRequireBearer() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	// The issuer runs in this process: validate with its keys directly.
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
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
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
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

// The issuer and the API it protects in one process, on one mux: the
// validator takes its keys from the issuer (Keys: iss), so nothing is
// fetched and nothing waits for a listening server at start.
func Example_issuerInProcess() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true, // in production: Keys, from files made by "idsauth gen-key"
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, Scopes: []string{scope.AdminWebAPI},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer:   iss.URL(),
		Audience: []string{iss.URL() + "/resources"}, // the issuer's default "aud"
		Keys:     iss,
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users",
		alice.New(middleware.RequireBearer(v), middleware.RequireFamily(scope.Admin)).ThenFunc(
			func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"data":[]}`) }))

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	resp, err := cc.Client(context.Background()).Get(srv.URL + "/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"data":[]}
}
