// Package benchmarks measures idsauth against its Go peers on the same
// requests and tokens. It is a module of its own so that the peers never
// enter the library's go.mod. README.md has the commands and results.
package benchmarks

import (
	"context"
	"crypto"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	jwtmiddleware "github.com/auth0/go-jwt-middleware/v2"
	"github.com/auth0/go-jwt-middleware/v2/validator"
	"github.com/go-chi/jwtauth/v5"
	"github.com/golang-jwt/jwt/v5"
	"github.com/justinas/alice"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

var bare = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

// setup is one algorithm's key, its JWKS on loopback and one valid token.
type setup struct {
	key   *keys.Key
	jwks  *jwktest.JWKS
	token string
}

func newSetup(b *testing.B, alg string) *setup {
	k := jwktest.NewKey(b, alg)
	j := jwktest.NewJWKS(b, k)
	claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, 24*time.Hour)
	claims["aud"] = []string{j.Issuer() + "/resources"}
	return &setup{key: k, jwks: j, token: jwktest.Sign(b, k, nil, claims)}
}

// run sends the same request through h b.N times and checks the answer.
func run(b *testing.B, h http.Handler, token string) {
	req := httptest.NewRequest(http.MethodGet, "/webapi/api/v3/demo/Admin/Users", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	check := httptest.NewRecorder()
	h.ServeHTTP(check, req)
	if check.Code != http.StatusNoContent {
		b.Fatalf("the handler answered %d %s", check.Code, check.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func idsauth(b *testing.B, s *setup, cacheSize int) http.Handler {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	v, err := accesstoken.New(ctx, accesstoken.Config{Issuer: s.jwks.Issuer(), Audience: []string{s.jwks.Issuer() + "/resources"}, CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	return alice.New(middleware.RequireBearer(v), middleware.RequireScope(scope.AdminWebAPI)).Then(bare)
}

// parseOnly is the floor of a JWKS-backed check: golang-jwt with keyfunc,
// nothing else.
func parseOnly(b *testing.B, s *setup) http.Handler {
	kf, err := keyfunc.NewDefaultCtx(b.Context(), []string{s.jwks.JWKSURL()})
	if err != nil {
		b.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("Authorization")[len("Bearer "):]
		if _, err := jwt.Parse(tok, kf.Keyfunc); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		bare(w, r)
	})
}

func auth0(b *testing.B, s *setup) http.Handler {
	pub := s.key.Public()
	v, err := validator.New(func(context.Context) (any, error) { return pub, nil },
		validator.SignatureAlgorithm(s.key.Alg), s.jwks.Issuer(), []string{s.jwks.Issuer() + "/resources"})
	if err != nil {
		b.Fatal(err)
	}
	return jwtmiddleware.New(v.ValidateToken).CheckJWT(bare)
}

func chiJWTAuth(b *testing.B, s *setup) http.Handler {
	var pub crypto.PublicKey = s.key.Public()
	ja := jwtauth.New(s.key.Alg, nil, pub)
	return alice.New(jwtauth.Verifier(ja), jwtauth.Authenticator(ja)).Then(bare)
}

// BenchmarkMiddleware runs one protected request per iteration through each
// implementation, with the same token.
func BenchmarkMiddleware(b *testing.B) {
	for _, alg := range jwktest.Algs {
		b.Run(alg, func(b *testing.B) {
			s := newSetup(b, alg)
			b.Run("bare", func(b *testing.B) { run(b, bare, s.token) })
			b.Run("idsauth-warm", func(b *testing.B) { run(b, idsauth(b, s, 0), s.token) })
			b.Run("idsauth-cold", func(b *testing.B) { run(b, idsauth(b, s, -1), s.token) })
			b.Run("golang-jwt+keyfunc-parse-only", func(b *testing.B) { run(b, parseOnly(b, s), s.token) })
			b.Run("auth0-go-jwt-middleware", func(b *testing.B) { run(b, auth0(b, s), s.token) })
			b.Run("go-chi-jwtauth", func(b *testing.B) { run(b, chiJWTAuth(b, s), s.token) })
		})
	}
}
