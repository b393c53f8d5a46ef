package accesstoken_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

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

// An API that trusts one issuer: the keys are found by the issuer's
// discovery, and every claim is checked.
func ExampleNew() {
	ids, iss := exampleIssuer()
	defer ids.Close()

	// The issuer URL and who this API is, as the issuer writes it in
	// "aud" (this module's issuer and IdentityServer with its static
	// audience on: "{issuer}/resources"). The JWKS is found by discovery
	// and refreshed in the background until ctx ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := accesstoken.New(ctx, accesstoken.Config{
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
	claims, err := v.Validate(ctx, tok.AccessToken, accesstoken.Presentation{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(claims.ClientID, claims.Scopes)

	// A payload of one's own under the issuer's signature, granting more:
	// the signature no longer fits, and no claim but "iss" is read.
	header, rest, _ := strings.Cut(tok.AccessToken, ".")
	_, sig, _ := strings.Cut(rest, ".")
	more := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + iss.URL() + `","scope":"pd_AdminWebApi pd_ConnectWebApi"}`))
	_, err = v.Validate(ctx, header+"."+more+"."+sig, accesstoken.Presentation{})
	fmt.Println(err)
	// Output:
	// reporting pd_AdminWebApi
	// signature invalid
}

// During a move from the product's IdentityServer to this module's
// issuer, an API accepts the tokens of both: each issuer with its own
// keys, found by discovery, and its own "aud". IdentityServer puts
// "{issuer}/resources" there with EmitStaticAudienceClaim on and the API
// resource names (here "admin-api") with it off; this module's issuer puts
// "{issuer}/resources". A token is checked against the issuer its "iss"
// names, exactly, and no other; an "iss" on no list is refused before any
// key is fetched.
func ExampleConfig_issuers() {
	// Stand-ins on loopback: "legacy" writes tokens as IdentityServer does
	// with its static audience off (aud "admin-api", scope an array).
	legacySrv, legacy := exampleIssuerWith(func(c *issuer.Config) {
		c.ScopeFormat = "array"
		c.Clients[0].Audience = []string{"admin-api"}
	})
	defer legacySrv.Close()
	idsSrv, ids := exampleIssuer()
	defer idsSrv.Close()
	strangerSrv, stranger := exampleIssuer()
	defer strangerSrv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := accesstoken.New(ctx, accesstoken.Config{
		Issuers: []accesstoken.TrustedIssuer{
			{Issuer: legacy.URL(), Audience: []string{"admin-api"}},
			{Issuer: ids.URL(), Audience: []string{ids.URL() + "/resources"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Claims.Issuer is the "iss" of the issuer that accepted the token.
	name := map[string]string{legacy.URL(): "IdentityServer", ids.URL(): "idsauth"}
	for _, from := range []*issuer.Issuer{legacy, ids, stranger} {
		cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: from.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
		tok, err := cc.Token(ctx)
		if err != nil {
			log.Fatal(err)
		}
		claims, err := v.Validate(ctx, tok.AccessToken, accesstoken.Presentation{})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(name[claims.Issuer], strings.ReplaceAll(fmt.Sprint(claims.Audience), from.URL(), "{issuer}"), claims.Scopes)
	}
	// Output:
	// IdentityServer [admin-api] pd_AdminWebApi
	// idsauth [{issuer}/resources] pd_AdminWebApi
	// token issuer not accepted
}

// A TokenValidator of one's own (here one that trusts an upstream
// gateway's verification) builds its Claims with NewClaims, so that
// RequireScope, ClaimsFrom and Decode work as with a Validator.
func ExampleNewClaims() {
	payload := []byte(`{"iss":"https://ids.example/ids","client_id":"reporting","scope":"pd_AdminWebApi","exp":1900000000,"tenant":"acme"}`)
	c, err := accesstoken.NewClaims(payload)
	if err != nil {
		log.Fatal(err)
	}
	var extra struct {
		Tenant string `json:"tenant"`
	}
	if err := c.Decode(&extra); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.ClientID, c.Scopes, c.ExpiresAt.UTC().Format(time.RFC3339), extra.Tenant)

	_, err = accesstoken.NewClaims([]byte(`{"exp":"tomorrow"}`))
	var ve *accesstoken.ValidationError
	fmt.Println(errors.As(err, &ve), ve.Code)
	// Output:
	// reporting pd_AdminWebApi 2030-03-17T17:46:40Z acme
	// true malformed
}

// A refusal says on the wire only its fixed reason; the ValidationError
// holds the facts for a log line.
func ExampleValidationError() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	later := func() time.Time { return time.Now().Add(2 * time.Hour) } // the default token lives an hour
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss, Now: later})
	if err != nil {
		log.Fatal(err)
	}
	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	_, err = v.Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
	var ve *accesstoken.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(errors.Is(err, accesstoken.ErrExpired), ve.Code, ve.Expiry.Before(ve.Now))
	}
	// Output: true expired true
}

// A handler reads the validated claims from the request context; Decode
// reads the whole claim set, for claims Claims does not name.
func ExampleClaimsFrom() {
	ids, iss := exampleIssuer()
	defer ids.Close()
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		log.Fatal(err)
	}
	whoami := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := accesstoken.ClaimsFrom(r.Context())
		if !ok {
			http.Error(w, "no claims", http.StatusInternalServerError)
			return
		}
		var all map[string]any
		if err := c.Decode(&all); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		names := slices.Sorted(maps.Keys(all))
		fmt.Fprintf(w, "%s has %s; claims %v", c.ClientID, c.Scopes, names)
	})
	api := httptest.NewServer(middleware.RequireBearer(v)(whoami))
	defer api.Close()

	cc := clientcredentials.Config{ClientID: "reporting", ClientSecret: "s3cret", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
	resp, err := cc.Client(context.Background()).Get(api.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))
	// Output: reporting has pd_AdminWebApi; claims [aud client_id exp iat iss jti nbf scope sub]
}

// gateway is a TokenValidator of one's own: it trusts the claims an
// upstream gateway verified (here the token is their base64url), and
// reads no presentation.
type gateway struct{}

func (gateway) Validate(_ context.Context, token string, _ accesstoken.Presentation) (*accesstoken.Claims, error) {
	payload, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, err
	}
	return accesstoken.NewClaims(payload)
}

// Decide is what a transport does with a token: the validator's answer,
// then the binding the claims ask for, checked whatever the validator
// made of the presentation. A token bound to a client certificate passes
// with it, and is refused with another, though this validator never
// looks.
func ExampleDecide() {
	mine := "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"
	token := base64.RawURLEncoding.EncodeToString([]byte(`{"client_id":"reporting","scope":"pd_AdminWebApi","exp":1900000000,"cnf":{"x5t#S256":"` + mine + `"}}`))
	for _, cert := range []string{mine, "x4Bq3TmyvKkdnSBp8sU0vbsrQ3KdDYpH8iFqTw0d1sE"} {
		c, err := accesstoken.Decide(context.Background(), gateway{}, token, accesstoken.Presentation{CertThumbprint: cert})
		if err != nil {
			fmt.Println("refused:", accesstoken.ReasonCode(err))
			continue
		}
		fmt.Println(c.ClientID, c.Scopes)
	}
	// Output:
	// reporting pd_AdminWebApi
	// refused: wrong_certificate
}
