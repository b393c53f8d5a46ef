package benchmarks

import (
	"context"
	"net/http/httptest"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// BenchmarkIntrospection compares, on one route's validator
// (Config.Introspection beside Keys), a reference token whose introspection answer is
// cached with a JWT whose validation is cached: the warm paths of the two
// kinds. Target (issue 26): the reference token costs at most 0.5 µs
// more. Each iteration validates one token.
//
//	go test -run '^$' -bench Introspection -cpu 1 -count 3 .
func BenchmarkIntrospection(b *testing.B) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	hash := []string{secret.HashSHA256("s").String()}
	iss, err := issuer.New(&issuer.Config{
		Issuer:       srv.URL + "/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "jwt", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}},
			{ClientID: "ref", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference"},
		},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}}},
	})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = iss
	ctx := context.Background()
	aud := []string{iss.URL() + "/resources"}
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: iss.URL(), Audience: aud, Keys: iss, Introspection: &accesstoken.Introspection{ClientID: "api", ClientSecret: "s"}})
	if err != nil {
		b.Fatal(err)
	}
	token := func(id string) string {
		cc := clientcredentials.Config{ClientID: id, ClientSecret: "s", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
		t, err := cc.Token(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return t.AccessToken
	}
	for _, c := range []struct{ name, token string }{{"jwt-warm", token("jwt")}, {"reference-cached", token("ref")}} {
		if _, err := v.Validate(ctx, c.token, accesstoken.Presentation{}); err != nil { // warms the cache
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Validate(ctx, c.token, accesstoken.Presentation{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
