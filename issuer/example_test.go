package issuer_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

func ExampleLoadConfig() {
	cfg, err := issuer.LoadConfig("testdata/example-config.json")
	if err != nil {
		log.Fatal(err) // the error names the field: issuer config: clients[0].clientId: empty
	}
	fmt.Println(cfg.Issuer, len(cfg.Clients), "clients,", len(cfg.Keys), "keys")
	// Output: http://127.0.0.1:8080/ids 2 clients, 2 keys
}

// Mount the issuer in a mux and get a token from it with the standard
// client_credentials client.
func ExampleNew() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()

	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids",
		Clients: []issuer.ClientConfig{{
			ClientID:     "reporting",
			SecretHashes: []string{secret.HashSHA256("s3cret")},
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
