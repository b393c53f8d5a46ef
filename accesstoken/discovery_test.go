package accesstoken_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TestDiscoveryByRFC8414: an issuer that publishes no OpenID Connect
// discovery document (an OAuth server that is no OpenID provider) is
// found by its RFC 8414 metadata, at the well-known path inserted before
// its own: its keys and its introspection endpoint both. A document of
// another issuer there is refused as the OpenID one is.
func TestDiscoveryByRFC8414(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids", EphemeralKey: true,
		Clients:      []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference"}},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: []string{scope.AdminWebAPI}}},
	}, issuer.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/.well-known/openid-configuration", http.NotFoundHandler())
	mux.Handle("/ids/", iss)
	mux.Handle("/.well-known/oauth-authorization-server/", iss.MetadataHandler())
	ctx := t.Context()
	if _, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{Issuer: iss.URL()}); err != nil {
		t.Fatalf("the keys of an issuer with RFC 8414 metadata alone: %v", err)
	}
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"},
		Introspection: &accesstoken.Introspection{ClientID: "api", ClientSecret: "api-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	cc := clientcredentials.Config{ClientID: "c", ClientSecret: "s", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(ctx, tok.AccessToken, accesstoken.Presentation{}); err != nil {
		t.Fatalf("a reference token introspected at the endpoint RFC 8414 names: %v", err)
	}
	if _, err := accesstoken.NewJWKS(ctx, accesstoken.JWKSConfig{Issuer: srv.URL + "/other"}); err == nil {
		t.Fatal("an issuer whose metadata is nowhere was found")
	}
}
