package accesstoken_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// token gets a client_credentials token of "reporting" from iss.
func token(iss *issuer.Issuer) string {
	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	return tok.AccessToken
}

// A JWKS at a URL of one's own, fetched with settings of one's own: a
// client (its proxy, its TLS), a timeout, how often it is fetched again,
// and how often a token with an unknown kid may fetch it. The set is
// refreshed until ctx ends.
func ExampleNewJWKS() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{
		URL:               iss.JWKSURL(),
		HTTPClient:        &http.Client{Transport: http.DefaultTransport},
		Timeout:           5 * time.Second,
		RefreshInterval:   time.Hour,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(time.Minute), 1),
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: keys})
	if err != nil {
		log.Fatal(err)
	}
	claims, err := v.Validate(ctx, token(iss), accesstoken.Presentation{})
	fmt.Println(claims.ClientID, err)
	// Output: reporting <nil>
}

// Keys given rather than fetched, as a JWKS's JSON (a file deployed with
// the service, say): they never change, and nothing goes on the wire.
func ExampleParseJWKS() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	resp, err := http.Get(iss.JWKSURL()) // in production: os.ReadFile
	if err != nil {
		log.Fatal(err)
	}
	jwksJSON, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	keys, err := accesstoken.ParseJWKS(jwksJSON)
	if err != nil {
		log.Fatal(err)
	}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: keys})
	if err != nil {
		log.Fatal(err)
	}
	claims, err := v.Validate(context.Background(), token(iss), accesstoken.Presentation{})
	fmt.Println(claims.ClientID, claims.Scopes, err)
	// Output: reporting pd_AdminWebApi <nil>
}

// The same key set serves golang-jwt's own parser, through keyfunc: for
// code that parses with jwt.Parse and checks the claims itself.
func ExampleJWKS_Keyfunc() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{Issuer: iss.URL()})
	if err != nil {
		log.Fatal(err)
	}
	tok, err := jwt.Parse(token(iss), keys.Keyfunc,
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(iss.URL()), jwt.WithAudience(iss.URL()+"/resources"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.Valid, tok.Claims.(jwt.MapClaims)["client_id"])
	// Output: true reporting
}

// The issuer in the same process is the key source itself: nothing is
// fetched, and its key rotations are followed at once.
func ExampleKeySource() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer:   iss.URL(),
		Audience: []string{iss.URL() + "/resources"}, // the issuer's default "aud"
		Keys:     iss,
	})
	if err != nil {
		log.Fatal(err)
	}
	claims, err := v.Validate(context.Background(), token(iss), accesstoken.Presentation{})
	fmt.Println(claims.ClientID, err)
	// Output: reporting <nil>
}

// One validator takes both kinds of token: a JWT is checked with the
// issuer's keys, a reference token is introspected, here answered by the
// issuer in the same process (against a remote one: Endpoint or
// discovery, and the API's ClientSecret or Key).
func ExampleIntrospection() {
	ids, iss := exampleIssuerWith(func(c *issuer.Config) {
		c.Clients[0].AccessTokenType = "reference"
		c.APIResources = []issuer.APIResourceConfig{{Name: "admin-api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: []string{scope.AdminWebAPI}}}
	})
	defer ids.Close()
	aud := []string{iss.URL() + "/resources"}
	both, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer: iss.URL(), Audience: aud, Keys: iss,
		Introspection: &accesstoken.Introspection{ClientID: "admin-api", Local: iss},
	})
	if err != nil {
		log.Fatal(err)
	}

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	c, err := both.Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
	fmt.Println(len(tok.AccessToken), c.ClientID, c.Scopes, err)
	// Output: 43 reporting pd_AdminWebApi <nil>
}
