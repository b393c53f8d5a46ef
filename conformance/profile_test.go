package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestTokensOfBothProfilesVerifyWithGoJOSE: the tokens of each profile,
// bearer and DPoP-less, verify with go-jose (a JWT library that is not
// golang-jwt) against the issuer's published JWKS, and carry each
// profile's shape: under identityserver, scope an array, no sub, aud the
// API resource's name, client_ claims; under rfc, RFC 9068's.
func TestTokensOfBothProfilesVerifyWithGoJOSE(t *testing.T) {
	for _, profile := range []string{"rfc", "identityserver"} {
		srv := httptest.NewServer(nil)
		t.Cleanup(srv.Close)
		iss, err := issuer.New(&issuer.Config{
			Issuer: srv.URL + "/ids", EphemeralKey: true, Profile: profile,
			Clients: []issuer.ClientConfig{{ClientID: "multi", SecretHashes: []string{secret.HashSHA256("s").String()},
				Scopes: []string{scope.AdminWebAPI}, Claims: []issuer.ClientClaim{{Type: "tenant", Value: "acme"}}}},
			APIResources: []issuer.APIResourceConfig{{Name: "admin-api", SecretHashes: []string{secret.HashSHA256("x").String()}, Scopes: []string{scope.AdminWebAPI}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		srv.Config.Handler = iss
		cc := clientcredentials.Config{ClientID: "multi", ClientSecret: "s", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(iss.JWKSURL())
		if err != nil {
			t.Fatal(err)
		}
		var jwks jose.JSONWebKeySet
		err = json.NewDecoder(resp.Body).Decode(&jwks)
		resp.Body.Close()
		if err != nil || len(jwks.Keys) == 0 {
			t.Fatalf("JWKS: %v", err)
		}
		parsed, err := josejwt.ParseSigned(tok.AccessToken, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			t.Fatalf("%s: go-jose cannot parse the token: %v", profile, err)
		}
		keys := jwks.Key(parsed.Headers[0].KeyID)
		if len(keys) != 1 {
			t.Fatalf("%s: no JWK for kid %q", profile, parsed.Headers[0].KeyID)
		}
		var std josejwt.Claims
		var rest map[string]any
		if err := parsed.Claims(keys[0].Key, &std, &rest); err != nil {
			t.Fatalf("%s: go-jose refuses the signature: %v", profile, err)
		}
		wantAud := iss.URL() + "/resources"
		if profile == "identityserver" {
			wantAud = "admin-api"
		}
		if err := std.ValidateWithLeeway(josejwt.Expected{Issuer: iss.URL(), AnyAudience: josejwt.Audience{wantAud}, Time: time.Now()}, time.Minute); err != nil {
			t.Fatalf("%s: go-jose's claim checks: %v", profile, err)
		}
		_, arrayScope := rest["scope"].([]any)
		if rest["client_tenant"] != "acme" || (std.Subject == "") != (profile == "identityserver") || arrayScope != (profile == "identityserver") {
			t.Errorf("%s: sub %q, claims %v", profile, std.Subject, rest)
		}
		if !slices.Contains(std.Audience, wantAud) {
			t.Errorf("%s: aud %v", profile, std.Audience)
		}
	}
}
