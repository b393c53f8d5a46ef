package idsauthtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/kit"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// TB is what this package needs of a test: *testing.T and *testing.B are
// one, and so is anything that reports the way a test does.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Issuer is a real idsauth issuer on an httptest.Server, mounted at
// /ids, with one registered client allowed every scope: the product's
// two, and those of WithScopes. NewIssuer closes it when the test ends.
type Issuer struct {
	*issuer.Issuer

	// Server serves the issuer under /ids; mount your own handlers
	// elsewhere on your own server.
	Server *httptest.Server
	// ClientID and ClientSecret are the registered client's credentials.
	ClientID     string
	ClientSecret string
	// Audience is the "aud" of the issuer's tokens: "{issuer}/resources".
	Audience string

	key       *keys.Key
	refSecret string // the secret of the reference-token client
	dpop      *clientauth.Signer
	dpopJKT   string
	own       []string // WithScopes' scopes
}

// The issuer's other registrations: a client whose tokens are reference
// tokens, and the API resource that introspects them. Both have every
// scope, as the registered client has.
const (
	referenceClient = "test-reference-client"
	testAPI         = "test-api"
)

// Option changes what NewIssuer makes.
type Option func(*options)

type options struct {
	alg      string
	lifetime time.Duration
	scopes   []string // beside the product's
}

// WithAlgorithm makes the issuer sign with alg: "ES256" (the default),
// "RS256" or "EdDSA".
func WithAlgorithm(alg string) Option { return func(o *options) { o.alg = alg } }

// WithLifetime sets the lifetime of the client's tokens. The default is
// one hour.
func WithLifetime(d time.Duration) Option { return func(o *options) { o.lifetime = d } }

// WithScopes makes the issuer know scopes of your own beside the
// product's two (issuer.Config.Scopes), and allows them to its clients
// and its API resource: a service with scopes of its own gets its tokens
// from the token endpoint (Config, ReferenceToken) as from Token, and
// its routes through CheckProtected, whose token without the route's
// scope then has another of them, or one of the product's. Each is a
// scope name of RFC 6749 §3.3; NewIssuer fails the test on one that is
// not, or that differs from one of the product's only in case.
func WithScopes(scopes ...string) Option {
	return func(o *options) { o.scopes = append(o.scopes, scopes...) }
}

// NewIssuer starts an issuer on a loopback httptest.Server, with a fresh
// signing key and one client ("test-client", a random secret) allowed
// every scope (the product's, and those of WithScopes). It is closed with
// t.Cleanup.
func NewIssuer(t TB, opts ...Option) *Issuer {
	t.Helper()
	o := options{alg: "ES256", lifetime: time.Hour}
	for _, opt := range opts {
		opt(&o)
	}
	k, err := keys.Generate(o.alg)
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	plain, hash := secret.Generate()
	refPlain, refHash := secret.Generate()
	_, apiHash := secret.Generate() // introspection is in process: nobody needs the API's secret
	url := srv.URL + "/ids"
	lifetime := o.lifetime
	all := append(scope.All(), o.scopes...)
	iss, err := issuer.New(&issuer.Config{
		Issuer: url,
		Keys:   []issuer.KeyConfig{{Key: k.Private, Alg: k.Alg}},
		Scopes: o.scopes,
		Clients: []issuer.ClientConfig{
			{ClientID: "test-client", SecretHashes: []string{hash.String()}, Scopes: all, AccessTokenLifetime: lifetime},
			{ClientID: referenceClient, SecretHashes: []string{refHash.String()}, Scopes: all, AccessTokenLifetime: lifetime, AccessTokenType: "reference"},
		},
		APIResources: []issuer.APIResourceConfig{{Name: testAPI, SecretHashes: []string{apiHash.String()}, Scopes: all}},
	}, issuer.WithLogger(slog.New(slog.DiscardHandler))) // a fixture: its refusals are the test's cases, not news
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	mux.Handle("/ids/", iss)
	prover, jkt, err := kit.NewProver()
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	return &Issuer{Issuer: iss, Server: srv, ClientID: "test-client", ClientSecret: plain, Audience: url + "/resources", key: k, refSecret: refPlain, dpop: prover, dpopJKT: jkt, own: o.scopes}
}

// Config returns a clientcredentials.Config for the registered client,
// asking for scopes, sending the secret by HTTP Basic.
func (i *Issuer) Config(scopes ...string) *clientcredentials.Config {
	// HTTP Basic, said outright: x/oauth2's default auto-detection sends
	// a wrong secret twice, once in the header and once in the body.
	return &clientcredentials.Config{ClientID: i.ClientID, ClientSecret: i.ClientSecret, TokenURL: i.TokenURL(), Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
}

// Validator returns a validator for the issuer's tokens that reads the
// keys in process: RequireBearer needs no HTTP round trip to the issuer.
func (i *Issuer) Validator() *accesstoken.Validator {
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer: i.URL(), Audience: []string{i.Audience}, Keys: i.Issuer,
	})
	if err != nil {
		panic("idsauthtest: " + err.Error())
	}
	return v
}

// ValidatorWithReferences returns a validator that accepts the issuer's
// JWTs, as Validator's, and its reference tokens, which it asks the
// issuer about in process (accesstoken.Introspection), without a cache: a
// revoked token is refused at once.
func (i *Issuer) ValidatorWithReferences() *accesstoken.Validator {
	v, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuer: i.URL(), Audience: []string{i.Audience}, Keys: i.Issuer,
		Introspection: &accesstoken.Introspection{ClientID: testAPI, Local: i.Issuer, CacheBytes: -1},
	})
	if err != nil {
		panic("idsauthtest: " + err.Error())
	}
	return v
}

// ReferenceToken returns a reference token for scopes from the token
// endpoint: opaque, checked by introspection (see ValidatorWithReferences).
func (i *Issuer) ReferenceToken(t TB, scopes ...string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: referenceClient, ClientSecret: i.refSecret, TokenURL: i.TokenURL(), Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatalf("idsauthtest: a reference token: %v", err)
	}
	return tok.AccessToken
}

// RevokedReferenceToken returns a reference token for scopes that its
// client has revoked at the revocation endpoint.
func (i *Issuer) RevokedReferenceToken(t TB, scopes ...string) string {
	t.Helper()
	tok := i.ReferenceToken(t, scopes...)
	req, err := http.NewRequest(http.MethodPost, i.URL()+"/connect/revocation", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(referenceClient), url.QueryEscape(i.refSecret))
	resp, err := i.Server.Client().Do(req)
	if err != nil {
		t.Fatalf("idsauthtest: revoking a reference token: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("idsauthtest: revoking a reference token: %s", resp.Status)
	}
	return tok
}

// Claims is a claim set to mint: a valid one for the issuer is what
// Issuer.Claims returns; change it as the test needs.
type Claims map[string]any

// Claims returns a valid claim set for the registered client with scopes,
// as the issuer would sign it, living one hour.
func (i *Issuer) Claims(scopes ...string) Claims {
	now := time.Now()
	s := ""
	for n, sc := range scopes {
		if n > 0 {
			s += " "
		}
		s += sc
	}
	return Claims{
		"iss": i.URL(), "sub": i.ClientID, "client_id": i.ClientID, "aud": []string{i.Audience},
		"scope": s, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": rand.Text(),
	}
}

// Mint signs claims with the issuer's key, with the header the issuer
// writes (alg, kid, typ "at+jwt").
func (i *Issuer) Mint(t TB, claims Claims) string {
	t.Helper()
	return sign(t, i.key, claims)
}

func sign(t TB, k *keys.Key, claims Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.Alg), jwt.MapClaims(claims))
	tok.Header["kid"] = k.KID
	tok.Header["typ"] = "at+jwt"
	s, err := tok.SignedString(k.Private)
	if err != nil {
		t.Fatalf("idsauthtest: signing: %v", err)
	}
	return s
}

// Token returns a valid access token for scopes, as the token endpoint
// would issue it.
func (i *Issuer) Token(t TB, scopes ...string) string {
	t.Helper()
	return i.Mint(t, i.Claims(scopes...))
}

// ExpiredToken returns a token for scopes that expired an hour ago.
func (i *Issuer) ExpiredToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	past := time.Now().Add(-2 * time.Hour)
	c["iat"], c["nbf"], c["exp"] = past.Unix(), past.Unix(), past.Add(time.Hour).Unix()
	return i.Mint(t, c)
}

// NotYetValidToken returns a token for scopes whose nbf is an hour ahead.
func (i *Issuer) NotYetValidToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["nbf"] = time.Now().Add(time.Hour).Unix()
	c["exp"] = time.Now().Add(2 * time.Hour).Unix()
	return i.Mint(t, c)
}

// WrongIssuerToken returns a token for scopes, signed by the issuer's key,
// whose "iss" is another issuer's.
func (i *Issuer) WrongIssuerToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["iss"] = "https://other-issuer.example/ids"
	return i.Mint(t, c)
}

// WrongAudienceToken returns a token for scopes, signed by the issuer's
// key, minted for another resource server.
func (i *Issuer) WrongAudienceToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["aud"] = []string{"https://another-api.example"}
	return i.Mint(t, c)
}

// BoundToken returns a token for scopes, signed by the issuer's key, bound
// to a DPoP key by its "cnf" claim (RFC 7800, RFC 9449 §6.1): a bearer-only
// route must refuse it, since whoever presents it as a bearer token is
// not shown to hold the key.
func (i *Issuer) BoundToken(t TB, scopes ...string) string {
	t.Helper()
	c := i.Claims(scopes...)
	c["cnf"] = map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"} // the thumbprint of no key anyone holds
	return i.Mint(t, c)
}

// UnknownKeyToken returns a token for scopes signed by a key the issuer
// does not publish.
func (i *Issuer) UnknownKeyToken(t TB, scopes ...string) string {
	t.Helper()
	k, err := keys.Generate(i.key.Alg)
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	return sign(t, k, i.Claims(scopes...))
}

// AlgNoneToken returns an unsigned token for scopes ("alg": "none").
func (i *Issuer) AlgNoneToken(t TB, scopes ...string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims(i.Claims(scopes...)))
	tok.Header["typ"] = "at+jwt"
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatalf("idsauthtest: %v", err)
	}
	return s
}

// TamperedToken returns a valid token for scopes with one character of its
// signature changed.
func (i *Issuer) TamperedToken(t TB, scopes ...string) string {
	t.Helper()
	tok := i.Token(t, scopes...)
	last := tok[len(tok)-2]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return tok[:len(tok)-2] + string(repl) + tok[len(tok)-1:]
}

// WithClaims returns r carrying claims as RequireBearer would have left
// them after validating a token with those claims: accesstoken.ClaimsFrom
// finds them, Claims.Decode reads every claim, and a RequireScope after it
// checks their scopes. Use it to test a handler alone, without tokens.
// Build claims with Issuer.Claims, or by hand.
func WithClaims(t TB, r *http.Request, claims Claims) *http.Request {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatalf("idsauthtest: claims: %v", err)
	}
	c, err := accesstoken.NewClaims(payload)
	if err != nil {
		t.Fatalf("idsauthtest: claims: %v", err)
	}
	return r.WithContext(accesstoken.ContextWithClaims(r.Context(), c))
}
