package issuer_test

import (
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Secrets of the test clients. They hold characters that Basic
// credentials must form-urlencode.
const (
	adminSecret   = "adm:in%2B+secret/=="
	connectSecret = "connect-secret"
)

// The keys of the private_key_jwt test clients, made once for the test
// binary: signer holds signerKey (ES256, in code), ed holds edKey, pss
// holds pssKey (an RSA key given as an inline JWK, for PS256).
var (
	signerKey = sync.OnceValue(func() *keys.Key { return generate("ES256") })
	pssKey    = sync.OnceValue(func() *keys.Key { return generate("PS256") })
	edKey     = sync.OnceValue(func() *keys.Key { return generate("EdDSA") })
)

func generate(alg string) *keys.Key {
	k, err := keys.Generate(alg)
	if err != nil {
		panic(err)
	}
	return k
}

// Audiences the signer client may ask for by resource (RFC 8707).
const (
	ordersAPI  = "https://api.example/orders"
	billingAPI = "urn:example:billing"
)

// testConfig returns a configuration for issuerURL with an ephemeral key
// and three clients: admin (pd_AdminWebApi), connect (pd_ConnectWebApi)
// and codeonly, which may not use client_credentials.
func testConfig(issuerURL string) *issuer.Config {
	return &issuer.Config{
		Issuer:       issuerURL,
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "admin", SecretHashes: []string{secret.HashSHA256(adminSecret).String()}, Scopes: []string{scope.AdminWebAPI}},
			{ClientID: "connect", SecretHashes: []string{secret.HashSHA256(connectSecret).String()}, Scopes: []string{scope.ConnectWebAPI, scope.AdminWebAPI}, AccessTokenLifetime: 600 * time.Second},
			{ClientID: "codeonly", SecretHashes: []string{secret.HashSHA256("x").String()}, GrantTypes: []string{"authorization_code"}, Scopes: []string{scope.AdminWebAPI}},
		},
	}
}

// withMachineClients adds to c the clients of issue 17: all, whose
// requests without a scope get both scopes, and the private_key_jwt
// clients signer (pd_AdminWebApi, three audiences), ed (pd_AdminWebApi)
// and pss (pd_ConnectWebApi).
func withMachineClients(c *issuer.Config) {
	c.Clients = append(c.Clients,
		issuer.ClientConfig{ClientID: "all", SecretHashes: []string{secret.HashSHA256(allSecret).String()}, Scopes: []string{scope.ConnectWebAPI, scope.AdminWebAPI}, ScopeWhenOmitted: "all"},
		issuer.ClientConfig{ClientID: "signer", PublicKeys: []issuer.ClientKeyConfig{{Key: signerKey().Public()}}, Scopes: []string{scope.AdminWebAPI},
			Audience: []string{c.Issuer + "/resources", ordersAPI, billingAPI}},
		issuer.ClientConfig{ClientID: "ed", PublicKeys: []issuer.ClientKeyConfig{{Key: edKey().Public()}}, Scopes: []string{scope.AdminWebAPI}},
		issuer.ClientConfig{ClientID: "pss", PublicKeys: []issuer.ClientKeyConfig{{JWK: json.RawMessage(publicJWK(pssKey().Public(), "PS256"))}}, Scopes: []string{scope.ConnectWebAPI}},
	)
}

const allSecret = "all-secret"

// humanSecret is the secret of the client humanClient returns.
const humanSecret = "correct horse"

// humanClient returns a client "human" (pd_AdminWebApi) whose secret,
// humanSecret, is held as a bcrypt hash (of cost 4: slow, but not for
// tests).
func humanClient(t *testing.T) issuer.ClientConfig {
	t.Helper()
	bc, err := secret.HashBcrypt(humanSecret, 4)
	if err != nil {
		t.Fatal(err)
	}
	return issuer.ClientConfig{ClientID: "human", SecretHashes: []string{bc.String()}, Scopes: []string{scope.AdminWebAPI}}
}

// publicJWK returns pub as a JWK, with alg when it is not empty.
func publicJWK(pub crypto.PublicKey, alg string) string {
	j, err := keys.PublicJWKOf(pub)
	if err != nil {
		panic(err)
	}
	j.Alg = alg
	b, err := json.Marshal(j)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// assertionFor returns a private_key_jwt assertion for client, signed by
// k, valid for a minute at the token endpoint tokenURL, with a fresh jti;
// edit may change the claims (a nil value removes one) and header entries.
func assertionFor(t testing.TB, k *keys.Key, client, tokenURL string, claims, header map[string]any) string {
	t.Helper()
	now := time.Now()
	c := map[string]any{"iss": client, "sub": client, "aud": tokenURL, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": rand.Text()}
	for name, v := range claims {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	h := map[string]any{"typ": nil}
	maps.Copy(h, header)
	return jwktest.Sign(t, k, h, c)
}

// assertionForm is a private_key_jwt token request's body, kv added.
func assertionForm(assertion string, kv ...string) string {
	return form(append([]string{"grant_type", "client_credentials", "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion", assertion}, kv...)...)
}

type server struct {
	*httptest.Server
	iss  *issuer.Issuer
	logs *testlog.Buffer
}

func (s *server) issuerURL() string { return s.URL + "/ids" }
func (s *server) tokenURL() string  { return s.URL + "/ids/connect/token" }

// newServer mounts an issuer, logging to s.logs, on a loopback server;
// edit may change the configuration first, and opts are New's after the
// logger.
func newServer(t *testing.T, edit func(*issuer.Config), opts ...issuer.Option) *server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL + "/ids")
	logs, logger := testlog.New()
	if edit != nil {
		edit(cfg)
	}
	iss, err := issuer.New(cfg, append([]issuer.Option{issuer.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	return &server{Server: srv, iss: iss, logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// post sends a token request; form is the raw body.
func post(t *testing.T, url, contentType, form string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

const formType = "application/x-www-form-urlencoded"

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}

// basic returns a Basic Authorization value with both parts
// form-urlencoded, as RFC 6749 §2.3.1 says.
func basic(id, pass string) string {
	return "Basic " + b64(url.QueryEscape(id)+":"+url.QueryEscape(pass))
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// load runs workers that each repeat one request until ended, counting the
// requests each has finished, so that a test can wait until no worker
// still holds what it got before a change (a token of an old key, say).
type load struct {
	rounds []atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

// startLoad starts workers goroutines, each calling request in a loop.
func startLoad(workers int, request func()) *load {
	l := &load{rounds: make([]atomic.Int64, workers), stop: make(chan struct{})}
	for w := range l.rounds {
		l.wg.Go(func() {
			defer l.rounds[w].Add(1 << 40) // an ended worker holds nothing
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				request()
				l.rounds[w].Add(1)
			}
		})
	}
	return l
}

// settle waits until every worker has finished two more requests: the one
// it was in, and one started after settle was called.
func (l *load) settle() {
	for w := range l.rounds {
		for n := l.rounds[w].Load(); l.rounds[w].Load() < n+2; {
			time.Sleep(time.Millisecond)
		}
	}
}

// end stops the workers and waits for them.
func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}
