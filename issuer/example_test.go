package issuer_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

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

// A file that holds a service's own settings beside the issuer's names
// them as sections: each is decoded into its value, as strictly as the
// issuer's fields, and an error names its place. The file says durations in
// seconds; the Config says them as time.Duration.
func ExampleParseConfig() {
	file := []byte(`{
  "issuer": "https://host/ids",
  "ephemeralKey": true,
  "clients": [{"clientId": "reporting", "secretHashes": ["sha256:u6YicpSdyMobF4LuzuuGTg56A2pqvxjSmWbkUYMSr/Q="],
               "scopes": ["pd_AdminWebApi"], "accessTokenLifetime": 900}],
  "limits": {"failureWindowSeconds": 120, "trustedProxyHeader": "X-Forwarded-For", "trustedProxies": ["10.0.0.0/8"]},
  "reports": {"folder": "/var/reports"}
}`)
	var reports struct {
		Folder string `json:"folder"`
	}
	cfg, err := issuer.ParseConfig(file, "/etc/idsauth", map[string]any{"reports": &reports})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Clients[0].AccessTokenLifetime, cfg.Limits.FailureWindow, cfg.Limits.TrustedProxies, reports.Folder)

	_, err = issuer.ParseConfig([]byte(`{"issuer": "https://host/ids", "reports": {"folder": "/tmp", "colour": "red"}}`), "", map[string]any{"reports": &reports})
	fmt.Println(err)
	// Output:
	// 15m0s 2m0s [10.0.0.0/8] /var/reports
	// issuer config: reports: unknown field "colour"
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

// Rotate the signing key in one configuration push: the old key signs
// until the new one's signAt, and stays published until its tokens have
// expired; the new one is published ahead of its signAt for validators to
// fetch it. Every replica switches at the same instants, without a reload.
func ExampleIssuer_KeySchedule() {
	june1 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	cfg := &issuer.Config{
		Issuer: "https://host/ids",
		Dir:    "testdata",
		Keys: []issuer.KeyConfig{
			{File: "example-es256.pem", RetireAt: june1.Add(2 * time.Hour)},
			{File: "example-ed25519.pem", PublishAt: june1.Add(-24 * time.Hour), SignAt: june1},
		},
		Clients: []issuer.ClientConfig{{
			ClientID:     "reporting",
			SecretHashes: []string{secret.HashSHA256("s3cret").String()},
			Scopes:       []string{scope.AdminWebAPI},
			// Tokens live an hour: the old key may retire an hour after
			// the new one signs, and not before.
		}},
	}
	now := time.Date(2026, 5, 30, 0, 0, 0, 0, time.UTC)
	iss, err := issuer.New(cfg, issuer.WithClock(func() time.Time { return now }))
	if err != nil {
		log.Fatal(err)
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-" // since ever, or forever
		}
		return t.Format(time.DateTime)
	}
	for _, k := range iss.KeySchedule() {
		fmt.Printf("%s published %s to %s, signs %s to %s\n", k.Alg,
			when(k.PublishedFrom), when(k.PublishedUntil), when(k.SignsFrom), when(k.SignsUntil))
	}
	for _, at := range []string{"2026-05-30T00:00:00Z", "2026-05-31T00:00:00Z", "2026-06-01T00:00:00Z", "2026-06-01T02:00:00Z"} {
		now, _ = time.Parse(time.RFC3339, at)
		fmt.Println(at, len(iss.KeyIDs()), "published, the first signs:", iss.KeyIDs()[0][:8])
	}
	// Output:
	// ES256 published - to 2026-06-01 02:00:00, signs - to 2026-06-01 00:00:00
	// EdDSA published 2026-05-31 00:00:00 to -, signs 2026-06-01 00:00:00 to -
	// 2026-05-30T00:00:00Z 1 published, the first signs: UcLZgqaL
	// 2026-05-31T00:00:00Z 2 published, the first signs: UcLZgqaL
	// 2026-06-01T00:00:00Z 2 published, the first signs: A9urluuX
	// 2026-06-01T02:00:00Z 1 published, the first signs: A9urluuX
}
