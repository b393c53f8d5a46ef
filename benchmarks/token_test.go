package benchmarks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/storage"
	fjwt "github.com/ory/fosite/token/jwt"
	"golang.org/x/crypto/bcrypt"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const (
	clientID     = "bench-client"
	clientSecret = "bench-client-secret-0123456789abcdef"
)

// tokenForm is the one token request every row answers: client_secret_post.
var tokenForm = "grant_type=client_credentials&client_id=" + clientID + "&client_secret=" + clientSecret + "&scope=" + scope.AdminWebAPI

// runToken posts tokenForm to h b.N times and checks for a 200.
func runToken(b *testing.B, h http.Handler) {
	// One request, its body renewed each time: the endpoint is measured,
	// not the parsing of a request line.
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ids/connect/token", nil)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.ContentLength = int64(len(tokenForm))
	post := func() *httptest.ResponseRecorder {
		req.Body = io.NopCloser(strings.NewReader(tokenForm))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := post(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"access_token"`) {
		b.Fatalf("token endpoint answered %d %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post()
	}
}

func idsauthIssuer(b *testing.B, k *keys.Key) http.Handler {
	iss, err := issuer.New(&issuer.Config{
		Issuer: "http://127.0.0.1/ids",
		Keys:   []issuer.KeyConfig{{Key: k.Private, Alg: k.Alg}},
		Clients: []issuer.ClientConfig{{
			ClientID: clientID, SecretHashes: []string{secret.HashSHA256(clientSecret).String()}, Scopes: []string{scope.AdminWebAPI},
		}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return iss
}

// fositeProvider is ory/fosite's client_credentials flow with its memory
// store and JWT access tokens, signed with the same key.
func fositeProvider(b *testing.B, k *keys.Key, cost int) http.Handler {
	hash, err := bcrypt.GenerateFromPassword([]byte(clientSecret), cost)
	if err != nil {
		b.Fatal(err)
	}
	store := storage.NewMemoryStore()
	store.Clients[clientID] = &fosite.DefaultClient{
		ID: clientID, Secret: hash, GrantTypes: []string{"client_credentials"},
		Scopes: []string{scope.AdminWebAPI}, Audience: []string{"http://127.0.0.1/ids/resources"},
	}
	config := &fosite.Config{
		AccessTokenLifespan: time.Hour,
		GlobalSecret:        []byte("a-32-byte-global-secret-for-hmac"),
		HashCost:            cost,
		AccessTokenIssuer:   "http://127.0.0.1/ids",
	}
	priv := k.Private
	keyGetter := func(context.Context) (any, error) { return priv, nil }
	strategy := compose.NewOAuth2JWTStrategy(keyGetter, compose.NewOAuth2HMACStrategy(config), config)
	provider := compose.Compose(config, store, &compose.CommonStrategy{CoreStrategy: strategy}, compose.OAuth2ClientCredentialsGrantFactory)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		session := &oauth2.JWTSession{JWTClaims: &fjwt.JWTClaims{}, JWTHeader: &fjwt.Headers{}}
		ar, err := provider.NewAccessRequest(ctx, r, session)
		if err != nil {
			provider.WriteAccessError(ctx, w, ar, err)
			return
		}
		for _, s := range ar.GetRequestedScopes() {
			ar.GrantScope(s)
		}
		resp, err := provider.NewAccessResponse(ctx, ar)
		if err != nil {
			provider.WriteAccessError(ctx, w, ar, err)
			return
		}
		provider.WriteAccessResponse(ctx, w, ar, resp)
	})
}

// BenchmarkTokenEndpoint issues one token per iteration, in process.
func BenchmarkTokenEndpoint(b *testing.B) {
	for _, alg := range jwktest.Algs {
		b.Run(alg, func(b *testing.B) {
			k := jwktest.NewKey(b, alg)
			b.Run("idsauth", func(b *testing.B) { runToken(b, idsauthIssuer(b, k)) })
			if alg == "EdDSA" {
				return // fosite signs with RSA and ECDSA keys only
			}
			b.Run("fosite-bcrypt12", func(b *testing.B) { runToken(b, fositeProvider(b, k, 12)) })
			b.Run("fosite-bcrypt4", func(b *testing.B) { runToken(b, fositeProvider(b, k, 4)) })
		})
	}
}

// BenchmarkSign is the raw signing cost of an access token's claims: the
// floor under the token endpoint.
func BenchmarkSign(b *testing.B) {
	for _, alg := range jwktest.Algs {
		b.Run(alg, func(b *testing.B) {
			k := jwktest.NewKey(b, alg)
			claims := jwktest.Claims("http://127.0.0.1/ids", scope.AdminWebAPI, time.Hour)
			method := jwt.GetSigningMethod(alg)
			b.ReportAllocs()
			for b.Loop() {
				t := jwt.NewWithClaims(method, jwt.MapClaims(claims))
				t.Header["kid"] = k.KID
				if _, err := t.SignedString(k.Private); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
