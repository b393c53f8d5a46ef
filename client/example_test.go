package client_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/justinas/alice"
	"golang.org/x/oauth2"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Call the Admin API. Against the example service (go run ./examplesvc)
// the configuration is
//
//	client.Config{ClientID: "demo-admin", ClientSecret: "demo-admin-secret",
//		BaseURL: "http://127.0.0.1:8080", Scopes: []string{scope.AdminWebAPI}}
//
// Here the same routes run in process so the example runs anywhere.
func ExampleConfig_Client() {
	base := startExampleService()
	defer base.Close()

	cfg := client.Config{
		ClientID:     "demo-admin",
		ClientSecret: "demo-admin-secret",
		BaseURL:      base.URL,
		Scopes:       []string{scope.AdminWebAPI},
	}
	hc := cfg.Client(context.Background())
	resp, err := hc.Get(base.URL + "/webapi/api/v3/demo/Admin/Users?page=1&pageSize=10")
	if err != nil {
		log.Fatal(err) // a *client.TokenError or *client.InvalidTokenError, with errors.As
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"data":[],"pagingDetails":{"page":1,"pageSize":10,"totalPages":0,"totalCount":0}}
}

// Authenticate with a key instead of a secret (private_key_jwt, RFC 7523):
// the issuer's registration holds the public key (in its file,
// "publicKeys": [{"file": "reporting.pub.pem"}]), the client the private
// one, from a PEM file or in a KMS: any crypto.Signer. Every token request
// carries a new signed assertion.
func ExampleConfig_Client_privateKeyJWT() {
	_, key, err := ed25519.GenerateKey(rand.Reader) // yours: ES256, RS256, PS256 or EdDSA
	if err != nil {
		log.Fatal(err)
	}
	base := startExampleService(issuer.ClientConfig{
		ClientID: "reporting", PublicKeys: []issuer.ClientKeyConfig{{Key: key.Public()}}, Scopes: []string{scope.AdminWebAPI},
	})
	defer base.Close()

	cfg := client.Config{
		ClientID: "reporting",
		Key:      key, // KeyID defaults to the key's RFC 7638 thumbprint
		BaseURL:  base.URL,
		Scopes:   []string{scope.AdminWebAPI},
	}
	resp, err := cfg.Client(context.Background()).Get(base.URL + "/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 200
}

// startExampleService mounts an issuer with the demo-admin client (and
// more) and an Admin route, as examplesvc does.
func startExampleService(more ...issuer.ClientConfig) *httptest.Server {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true, // as examplesvc's demo configuration
		Clients: append([]issuer.ClientConfig{{
			ClientID: "demo-admin", SecretHashes: []string{secret.HashSHA256("demo-admin-secret").String()}, Scopes: []string{scope.AdminWebAPI},
		}}, more...),
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	mux.Handle("GET /webapi/api/v3/{datasourceId}/Admin/Users",
		alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI)).ThenFunc(
			func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{"data":[],"pagingDetails":{"page":1,"pageSize":10,"totalPages":0,"totalCount":0}}`)
			}))
	return srv
}

// A TokenSource feeds anything that takes an oauth2.TokenSource: here an
// oauth2.Transport; gRPC's oauth.TokenSource{TokenSource: ts} takes it
// the same way.
func ExampleConfig_TokenSource() {
	cfg := client.Config{
		ClientID:     "reporting",
		ClientSecret: os.Getenv("REPORTING_SECRET"),
		BaseURL:      "https://docs.example.com",
		Scopes:       []string{scope.AdminWebAPI},
	}
	ts := cfg.TokenSource(context.Background())
	hc := oauth2.NewClient(context.Background(), ts)
	_ = hc
}

// Tokens is for a caller that sends the token itself and reads the answer:
// on invalid_token it drops the token it sent and retries once with a new
// one, never the same. The gRPC and Connect modules
// (github.com/idsauth/idsauth/grpcauth, .../connectauth) do this for you.
func ExampleConfig_Tokens() {
	base := startExampleService()
	defer base.Close()
	cfg := client.Config{ClientID: "demo-admin", ClientSecret: "demo-admin-secret", BaseURL: base.URL, Scopes: []string{scope.AdminWebAPI}}
	ctx := context.Background()
	toks := cfg.Tokens(ctx)

	call := func(token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base.URL+"/webapi/api/v3/demo/Admin/Users", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tok, err := toks.Token(ctx)
	if err != nil {
		log.Fatal(err) // a *client.TokenError
	}
	status := call(tok.AccessToken)
	if status == http.StatusUnauthorized { // with error="invalid_token"
		toks.Drop(tok.AccessToken)
		if fresh, err := toks.Token(ctx); err == nil && fresh.AccessToken != tok.AccessToken {
			status = call(fresh.AccessToken)
		}
	}
	fmt.Println(status)
	// Output: 200
}
