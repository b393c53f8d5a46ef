package accesstoken_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestValidatorTakesBothProfiles: a token of the identityserver profile
// (scope an array, no sub, aud the API resource's name, client_ claims)
// and one of the rfc profile give the same Claims fields, with no
// setting but the audience each issuer writes; the client claims are in
// Claims.ClientClaims.
func TestValidatorTakesBothProfiles(t *testing.T) {
	for profile, aud := range map[string]func(iss string) string{
		"identityserver": func(string) string { return "admin-api" },
		"rfc":            func(iss string) string { return iss + "/resources" },
	} {
		srv := httptest.NewServer(nil)
		t.Cleanup(srv.Close)
		iss, err := issuer.New(&issuer.Config{
			Issuer: srv.URL + "/ids", EphemeralKey: true, Profile: profile,
			Clients: []issuer.ClientConfig{{ClientID: "multi", SecretHashes: []string{secret.HashSHA256("s").String()},
				Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI},
				Claims: []issuer.ClientClaim{{Type: "tenant", Value: "acme"}, {Type: "role", Value: "a"}, {Type: "role", Value: "b"}}}},
			APIResources: []issuer.APIResourceConfig{
				{Name: "admin-api", SecretHashes: []string{secret.HashSHA256("x").String()}, Scopes: []string{scope.AdminWebAPI}},
				{Name: "connect-api", SecretHashes: []string{secret.HashSHA256("x").String()}, Scopes: []string{scope.ConnectWebAPI}},
			},
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
		// Over HTTP, by discovery and the JWKS, as a service would.
		v := newValidator(t, accesstoken.Config{Issuer: iss.URL(), Audience: []string{aud(iss.URL())}})
		c, err := v.Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if c.ClientID != "multi" || c.Issuer != iss.URL() || !slices.Equal([]string(c.Scopes), []string{scope.AdminWebAPI}) || !slices.Contains(c.Audience, aud(iss.URL())) ||
			!slices.Equal(c.ClientClaims["tenant"], []string{"acme"}) || !slices.Equal(c.ClientClaims["role"], []string{"a", "b"}) || c.ExpiresAt.IsZero() || c.ID == "" {
			t.Errorf("%s: claims %+v", profile, c)
		}
		if (c.Subject == "") != (profile == "identityserver") {
			t.Errorf("%s: sub %q", profile, c.Subject)
		}
		// And through RequireBearer and RequireScope, for the route's family.
		h := middleware.RequireBearer(v)(middleware.RequireFamily(scope.Admin)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
		req := httptest.NewRequest(http.MethodGet, "/webapi/api/v3/demo/Admin/Users", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("%s: %d %q", profile, rec.Code, rec.Header().Values("WWW-Authenticate"))
		}
	}
}

// TestClientClaimsOfOtherShapes: a client_ claim that is no string or
// array of strings (another issuer's) is left in Raw, never refused.
func TestClientClaimsOfOtherShapes(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(k)})
	c, err := v.Validate(context.Background(), jwktest.Sign(t, k, nil, jwktest.With(jwktest.Claims(iss, scope.AdminWebAPI, time.Hour),
		"client_n", 5, "client_obj", map[string]any{"a": 1}, "client_tenant", "acme", "client_", "x")), accesstoken.Presentation{})

	if err != nil {
		t.Fatal(err)
	}
	if len(c.ClientClaims) != 1 || c.ClientClaims["tenant"][0] != "acme" {
		t.Fatalf("ClientClaims %v", c.ClientClaims)
	}
}
