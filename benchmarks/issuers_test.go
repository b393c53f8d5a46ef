package benchmarks

import (
	"context"
	"testing"

	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// BenchmarkIssuers runs one protected request per iteration through a
// Validator of one issuer (accesstoken.Config.Issuer) and one of two
// (Issuers, the token's issuer second), warm and cold: what choosing the
// issuer by "iss" costs. The warm path finds the token in the cache before
// any choice; the cold one reads "iss" from the payload once more.
func BenchmarkIssuers(b *testing.B) {
	s := newSetup(b, "ES256")
	other := jwktest.NewJWKS(b, jwktest.NewKey(b, "ES256"))
	one := func(cacheSize int) accesstoken.Config {
		return accesstoken.Config{Issuer: s.jwks.Issuer(), Audience: []string{s.jwks.Issuer() + "/resources"}, CacheSize: cacheSize}
	}
	two := func(cacheSize int) accesstoken.Config {
		return accesstoken.Config{CacheSize: cacheSize, Issuers: []accesstoken.TrustedIssuer{
			{Issuer: other.Issuer(), Audience: []string{other.Issuer() + "/resources"}},
			{Issuer: s.jwks.Issuer(), Audience: []string{s.jwks.Issuer() + "/resources"}},
		}}
	}
	for _, c := range []struct {
		name string
		cfg  accesstoken.Config
	}{
		{"one-issuer-warm", one(0)},
		{"two-issuers-warm", two(0)},
		{"one-issuer-cold", one(-1)},
		{"two-issuers-cold", two(-1)},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			v, err := accesstoken.New(ctx, c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			run(b, alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI)).Then(bare), s.token)
		})
	}
}
