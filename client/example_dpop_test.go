package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"log"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/scope"
)

// With a DPoP key, the client's tokens are bound to it (RFC 9449): each
// token request and each call carries a new proof, so a stolen token is
// useless without the key. Against the example service, demo-dpop must.
func ExampleConfig_Client_dPoP() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // once per process; any crypto.Signer
	if err != nil {
		log.Fatal(err)
	}
	cfg := client.Config{
		ClientID: "demo-dpop", ClientSecret: "demo-dpop-secret",
		BaseURL: "http://127.0.0.1:8080", Scopes: []string{scope.AdminWebAPI},
		DPoPKey: key,
	}
	resp, err := cfg.Client(context.Background()).Get("http://127.0.0.1:8080/webapi/api/v3/demo/Admin/Users")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
}
