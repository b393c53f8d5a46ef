package issuer_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

func ExampleLoadConfig() {
	cfg, err := issuer.LoadConfig("testdata/example-config.json")
	if err != nil {
		log.Fatal(err) // the file is not strict JSON of this format
	}
	// New checks the values and reads the key files, once.
	iss, err := issuer.New(cfg)
	if err != nil {
		log.Fatal(err) // the error names the field: issuer config: clients[0].clientId: empty
	}
	fmt.Println(iss.URL(), len(cfg.Clients), "clients,", len(iss.KeyIDs()), "keys")
	// Output: http://127.0.0.1:8080/ids 3 clients, 2 keys
}

// Mount the issuer in a mux and get a token from it with the standard
// client_credentials client.
func ExampleNew() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true, // development only; a service configures Keys
		Clients: []issuer.ClientConfig{{
			ClientID:     "reporting",
			SecretHashes: []string{secret.HashSHA256("s3cret").String()},
			Scopes:       []string{scope.AdminWebAPI},
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)

	cc := clientcredentials.Config{
		ClientID:     "reporting",
		ClientSecret: "s3cret",
		TokenURL:     iss.TokenURL(),
		Scopes:       []string{scope.AdminWebAPI},
	}
	tok, err := cc.Token(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.TokenType, tok.Extra("scope"), tok.Extra("expires_in"))
	// Output: Bearer pd_AdminWebApi 3600
}

// Reload applies a new configuration, for example on SIGHUP, without
// dropping a request; a bad one is refused whole and changes nothing.
func ExampleIssuer_Reload() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	cfg := &issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true, // development only; it is kept across reloads
		Clients: []issuer.ClientConfig{
			{ClientID: "reporting", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, Scopes: []string{scope.AdminWebAPI}},
		},
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	billing := func() string {
		cc := clientcredentials.Config{ClientID: "billing", ClientSecret: "b1ll1ng", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
		if _, err := cc.Token(context.Background()); err != nil {
			return "billing is refused"
		}
		return "billing gets a token"
	}
	fmt.Println(billing())

	// The new configuration registers billing (in a service: LoadConfig
	// again).
	next := *cfg
	next.Clients = append(slices.Clone(cfg.Clients),
		issuer.ClientConfig{ClientID: "billing", SecretHashes: []string{secret.HashSHA256("b1ll1ng").String()}, Scopes: []string{scope.AdminWebAPI}})
	if err := iss.Reload(&next); err != nil {
		log.Fatal(err)
	}
	fmt.Println(billing())

	bad := next
	bad.Clients = append(slices.Clone(next.Clients), next.Clients[0])
	fmt.Println(iss.Reload(&bad))
	fmt.Println(billing())
	// Output:
	// billing is refused
	// billing gets a token
	// issuer config: clients[2].clientId: duplicate client ID "reporting"
	// billing gets a token
}
