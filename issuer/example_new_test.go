package issuer_test

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// The RFC 8414 metadata sits at the host root with the issuer's path
// inserted: mount it beside the issuer.
func ExampleIssuer_MetadataHandler() {
	iss, err := issuer.New(&issuer.Config{
		Issuer: "https://docs.example.com/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{{ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, Scopes: []string{scope.AdminWebAPI}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	mux.Handle("/.well-known/oauth-authorization-server/", iss.MetadataHandler())

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server/ids", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `"issuer":"https://docs.example.com/ids"`))
	// Output: 200 true
}

// A client with reference tokens, and the API resource that may
// introspect them; the tokens' grants stay in the issuer's memory unless
// WithTokenStore names a store the replicas share (redisstore's).
func ExampleAPIResourceConfig() {
	hash := func(s string) []string { return []string{secret.HashSHA256(s).String()} }
	cfg := &issuer.Config{
		Issuer: "https://docs.example.com/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{{
			ClientID: "reporting", SecretHashes: hash("s3cret"), Scopes: []string{scope.AdminWebAPI},
			AccessTokenType: "reference",
			Claims:          []issuer.ClientClaim{{Type: "tenant", Value: "acme"}}, // client_tenant in its tokens
		}},
		APIResources: []issuer.APIResourceConfig{{Name: "admin-api", SecretHashes: hash("api-secret"), Scopes: []string{scope.AdminWebAPI}}},
	}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("ok")
	// Output: ok
}

// A registry (such as pgregistry) gives the issuer its clients beside the
// file's, whole, when it loads them; what does not fit is left out,
// named, and the rest served.
func ExampleIssuer_SetRegistered() {
	hash := func(s string) []string { return []string{secret.HashSHA256(s).String()} }
	iss, err := issuer.New(&issuer.Config{
		Issuer: "https://docs.example.com/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{{ClientID: "reporting", SecretHashes: hash("s3cret"), Scopes: []string{scope.AdminWebAPI}}},
	}, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	err = iss.SetRegistered([]issuer.ClientConfig{
		{ClientID: "billing", SecretHashes: hash("b1ll"), Scopes: []string{scope.AdminWebAPI}},
		{ClientID: "reporting", SecretHashes: hash("other"), Scopes: []string{scope.AdminWebAPI}}, // the file's wins
	}, nil)
	fmt.Println(err)
	// Output: issuer config: clients ("reporting").clientId: a client of the configuration file, which wins
}

// After its first load, a registry gives each change as a change: the
// clients registered or replaced, and the IDs removed. It costs what the
// change holds, whatever the number of clients served.
func ExampleIssuer_UpdateRegistered() {
	hash := func(s string) []string { return []string{secret.HashSHA256(s).String()} }
	iss, err := issuer.New(&issuer.Config{Issuer: "https://docs.example.com/ids", EphemeralKey: true},
		issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	err = iss.SetRegistered([]issuer.ClientConfig{
		{ClientID: "billing", SecretHashes: hash("b1ll"), Scopes: []string{scope.AdminWebAPI}},
		{ClientID: "reporting", SecretHashes: hash("r3port"), Scopes: []string{scope.AdminWebAPI}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// billing's secret rotated, reporting removed, audit registered.
	err = iss.UpdateRegistered([]issuer.ClientConfig{
		{ClientID: "billing", SecretHashes: hash("n3w"), Scopes: []string{scope.AdminWebAPI}},
		{ClientID: "audit", SecretHashes: hash("4udit"), Scopes: []string{scope.ConnectWebAPI}},
	}, []string{"reporting"})
	clients, apis, left := iss.Registered()
	fmt.Println(err, clients, apis, left)
	// Output: <nil> 2 0 0
}
