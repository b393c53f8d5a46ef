package accesstoken_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const (
	refClientSecret = "ref-secret"
	apiSecret       = "admin-api-secret"
)

// refIssuer is a real issuer on loopback with a reference-token client
// "ref" and a JWT client "jwt" (both pd_AdminWebApi), a client "connect"
// (pd_ConnectWebApi, reference tokens) and the API resource admin-api
// (pd_AdminWebApi). It counts the introspection calls it gets, and a test
// may put a handler of its own in front (down, slow, garbage).
type refIssuer struct {
	*httptest.Server
	iss   *issuer.Issuer
	calls atomic.Int64
	mu    sync.Mutex
	front http.HandlerFunc // when set, answers introspection instead
	gate  chan struct{}    // when set, introspection waits for it to close
}

func newRefIssuer(t *testing.T) *refIssuer {
	t.Helper()
	ri := &refIssuer{}
	ri.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/connect/introspect") {
			ri.calls.Add(1)
			ri.mu.Lock()
			front, gate := ri.front, ri.gate
			ri.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if front != nil {
				front(w, r)
				return
			}
		}
		ri.iss.ServeHTTP(w, r)
	}))
	t.Cleanup(ri.Close)
	hash := func(s string) []string { return []string{secret.HashSHA256(s).String()} }
	var err error
	ri.iss, err = issuer.New(&issuer.Config{
		Issuer:       ri.URL + "/ids",
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "ref", SecretHashes: hash(refClientSecret), Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference"},
			{ClientID: "jwt", SecretHashes: hash("jwt-secret"), Scopes: []string{scope.AdminWebAPI}},
			{ClientID: "connect", SecretHashes: hash("connect-secret"), Scopes: []string{scope.ConnectWebAPI}, AccessTokenType: "reference"},
		},
		APIResources: []issuer.APIResourceConfig{
			{Name: "admin-api", SecretHashes: hash(apiSecret), Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}},
			{Name: "key-api", PublicKeys: []issuer.ClientKeyConfig{{Key: apiKey().Public()}}, Scopes: []string{scope.AdminWebAPI}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ri
}

// apiKey is the key of the API resource key-api (private_key_jwt).
var apiKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

func (ri *refIssuer) issuerURL() string { return ri.URL + "/ids" }

func (ri *refIssuer) token(t *testing.T, id, pass, sc string) string {
	t.Helper()
	cc := clientcredentials.Config{ClientID: id, ClientSecret: pass, TokenURL: ri.issuerURL() + "/connect/token", Scopes: []string{sc}}
	tok, err := cc.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

func (ri *refIssuer) revoke(t *testing.T, id, pass, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ri.issuerURL()+"/connect/revocation", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("revocation: %s", resp.Status)
	}
}

// introspector is a validator that introspects every token at ri's
// endpoint as the API resource admin-api, its config changed by edit.
func (ri *refIssuer) introspector(t *testing.T, edit func(*accesstoken.Config)) *accesstoken.Validator {
	t.Helper()
	cfg := accesstoken.Config{
		Issuer:        ri.issuerURL(),
		Audience:      []string{ri.issuerURL() + "/resources"},
		Introspection: &accesstoken.Introspection{ClientID: "admin-api", ClientSecret: apiSecret},
	}
	if edit != nil {
		edit(&cfg)
	}
	v, err := accesstoken.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestIntrospectorOverHTTP: one route accepts JWTs and reference tokens
// with the same claims; a revoked reference token keeps working only
// until the cached answer's CacheMaxAge, then gets 401 invalid_token; a token
// without the route's scope gets 403.
func TestIntrospectorOverHTTP(t *testing.T) {
	ri := newRefIssuer(t)
	clk := newClock(time.Now())
	// JWTs checked with the issuer's keys, the rest introspected.
	both := ri.introspector(t, func(c *accesstoken.Config) {
		c.Now = clk.now
		c.Introspection.CacheMaxAge = 30 * time.Second
		c.Keys = ri.iss
	})
	h := middleware.RequireBearer(both)(middleware.RequireScope(scope.AdminWebAPI)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		_ = json.NewEncoder(w).Encode(map[string]any{"client": c.ClientID, "scopes": c.Scopes, "iss": c.Issuer, "aud": c.Audience})
	})))
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	call := func(token string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, api.URL+"/webapi/api/v3/demo/Admin/Users", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("WWW-Authenticate")
	}
	ref := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	jwt := ri.token(t, "jwt", "jwt-secret", scope.AdminWebAPI)
	want := map[string]string{ref: `"client":"ref"`, jwt: `"client":"jwt"`}
	for tok, client := range want {
		status, body, _ := call(tok)
		if status != 200 || !strings.Contains(body, client) || !strings.Contains(body, `"scopes":["pd_AdminWebApi"]`) || !strings.Contains(body, `"iss":"`+ri.issuerURL()+`"`) {
			t.Fatalf("%d %s", status, body)
		}
	}
	if ri.calls.Load() != 1 {
		t.Fatalf("%d introspection calls, want 1 (the JWT needs none)", ri.calls.Load())
	}
	ri.revoke(t, "ref", refClientSecret, ref)
	if status, _, _ := call(ref); status != 200 {
		t.Fatalf("within CacheMaxAge the cached answer holds: %d", status)
	}
	clk.add(31 * time.Second)
	status, body, challenge := call(ref)
	if status != 401 || !strings.Contains(challenge, `error="invalid_token"`) || strings.Contains(body, ref) {
		t.Fatalf("revoked, after CacheMaxAge: %d %q %s", status, challenge, body)
	}
	if ri.calls.Load() != 2 {
		t.Fatalf("%d calls", ri.calls.Load())
	}
	// A token with another scope: active for admin-api, 403 here.
	connect := ri.token(t, "connect", "connect-secret", scope.ConnectWebAPI)
	if status, body, _ := call(connect); status != 403 || !strings.Contains(body, "insufficient_scope") {
		t.Fatalf("connect token: %d %s", status, body)
	}
}

// TestIntrospectorWithAKey: an API resource registered with a public key
// introspects with private_key_jwt; an assertion is accepted once, so
// each call signs a new one; another key is refused (no answer).
func TestIntrospectorWithAKey(t *testing.T) {
	ri := newRefIssuer(t)
	in := ri.introspector(t, func(c *accesstoken.Config) {
		c.Introspection.ClientID, c.Introspection.ClientSecret, c.Introspection.Key, c.Introspection.CacheBytes = "key-api", "", apiKey(), -1
	})
	tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	for range 3 {
		c, err := in.Validate(context.Background(), tok, accesstoken.Presentation{})
		if err != nil || c.ClientID != "ref" {
			t.Fatalf("%+v %v", c, err)
		}
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	wrong := ri.introspector(t, func(c *accesstoken.Config) {
		c.Introspection.ClientID, c.Introspection.ClientSecret, c.Introspection.Key = "key-api", "", other
	})
	if _, err := wrong.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
		t.Fatalf("another key: %v", err)
	}
}

// TestIntrospectorCollapsesConcurrentChecks: a thousand concurrent checks
// of one new token cost one introspection call, with the cache off, so
// that only the collapsing can explain it.
func TestIntrospectorCollapsesConcurrentChecks(t *testing.T) {
	ri := newRefIssuer(t)
	in := ri.introspector(t, func(c *accesstoken.Config) { c.Introspection.CacheBytes = -1 })
	tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	gate := make(chan struct{})
	ri.mu.Lock()
	ri.gate = gate
	ri.mu.Unlock()
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
				errs <- err
			}
		})
	}
	// Every check but the one that makes the call waits for it before the
	// endpoint answers: counted, not timed.
	for i := 0; accesstoken.IntrospectionWaiters(in, tok) < n-1; i++ {
		if i == 20000 { // a bound on the loop, not a timing: the count is the test
			close(gate)
			wg.Wait()
			t.Fatalf("%d of %d concurrent checks wait for the one call", accesstoken.IntrospectionWaiters(in, tok), n-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := ri.calls.Load(); got != 1 {
		t.Fatalf("%d calls for %d concurrent checks of one token, want 1", got, n)
	}
	// Control: with nothing in flight, each check calls again.
	ri.mu.Lock()
	ri.gate = nil
	ri.mu.Unlock()
	for range 3 {
		if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ri.calls.Load(); got != 4 {
		t.Fatalf("%d calls, want 4: the cache is off", got)
	}
}

// TestIntrospectorEndpointFailures: an endpoint that is slow, down, or
// answers what is no introspection answer refuses the token with
// ErrIntrospectionUnavailable, logs why without the token, and never
// lets it through.
func TestIntrospectorEndpointFailures(t *testing.T) {
	for name, front := range map[string]http.HandlerFunc{
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			w.Write([]byte(`{"active":true}`))
		},
		"500":      func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
		"not JSON": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`<html>`)) },
		"active text": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"active":"true","scope":"pd_AdminWebApi"}`))
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"active":true,"x":"` + strings.Repeat("a", 100<<10) + `"}`))
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/steal", http.StatusTemporaryRedirect)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ri := newRefIssuer(t)
			logs, logger := testlog.New()
			in := ri.introspector(t, func(c *accesstoken.Config) { c.Introspection.Timeout = 200 * time.Millisecond; c.Logger = logger })
			tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
			ri.mu.Lock()
			ri.front = front
			ri.mu.Unlock()
			_, err := in.Validate(context.Background(), tok, accesstoken.Presentation{})
			if !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(logs.String(), "token introspection") || strings.Contains(logs.String(), tok) {
				t.Fatalf("log: %s", logs.String())
			}
		})
	}
	// Answers read by the one claims reader: a member named twice, or an
	// "active" that is null, is no introspection answer, however good the
	// rest.
	for name, answer := range map[string]string{
		"a member named twice": `{"active":true,"iss":%q,"aud":%q,"exp":%d,"scope":"pd_ConnectWebApi","scope":"pd_AdminWebApi"}`,
		"active twice":         `{"active":false,"iss":%q,"aud":%q,"exp":%d,"scope":"pd_AdminWebApi","active":true}`,
		"active null":          `{"active":null,"iss":%q,"aud":%q,"exp":%d,"scope":"pd_AdminWebApi"}`,
	} {
		t.Run(name, func(t *testing.T) {
			ri := newRefIssuer(t)
			in := ri.introspector(t, nil)
			tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
			ri.mu.Lock()
			ri.front = func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, answer, ri.issuerURL(), ri.issuerURL()+"/resources", time.Now().Add(time.Hour).Unix())
			}
			ri.mu.Unlock()
			if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		ri := newRefIssuer(t)
		in := ri.introspector(t, nil)
		tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
		ri.Close()
		if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestIntrospectorRefusals: an unknown token, another API's scope only,
// and a wrong API secret (which the issuer answers 401: no answer about
// the token) are all refused; an inactive answer is reused for
// InactiveCacheMaxAge.
func TestIntrospectorRefusals(t *testing.T) {
	ri := newRefIssuer(t)
	in := ri.introspector(t, nil)
	for range 3 {
		if _, err := in.Validate(context.Background(), "x8Qm4n2Zk1Vb7Tc5Yd3Wf9Hg6Jh0Lk2Pn4Rs6Tu8Vw", accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrInactive) {
			t.Fatalf("unknown token: %v", err)
		}
	}
	if got := ri.calls.Load(); got != 1 {
		t.Fatalf("%d calls for one unknown token asked thrice, want 1", got)
	}
	if _, err := in.Validate(context.Background(), strings.Repeat("a", 512+1), accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrTooLarge) || ri.calls.Load() != 1 {
		t.Fatalf("over-long token: %v, %d calls", err, ri.calls.Load())
	}
	wrong := ri.introspector(t, func(c *accesstoken.Config) { c.Introspection.ClientSecret = "wrong" })
	tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	if _, err := wrong.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrIntrospectionUnavailable) {
		t.Fatalf("wrong API secret: %v", err)
	}
	// Another audience than the API's: refused as a JWT's would be.
	other := ri.introspector(t, func(c *accesstoken.Config) { c.Audience = []string{"https://elsewhere"} })
	if _, err := other.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrAudience) {
		t.Fatalf("audience: %v", err)
	}
}

// TestIntrospectorInProcess: with the issuer as Local, reference tokens
// are checked with nothing on the wire, and revocation shows at once
// when the cache is off.
func TestIntrospectorInProcess(t *testing.T) {
	ri := newRefIssuer(t)
	in := ri.introspector(t, func(c *accesstoken.Config) {
		c.Introspection.Local, c.Introspection.ClientSecret, c.Introspection.CacheBytes = ri.iss, "", -1
	})
	tok := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	c, err := in.Validate(context.Background(), tok, accesstoken.Presentation{})
	if err != nil || c.ClientID != "ref" || !c.Scopes.Has(scope.AdminWebAPI) {
		t.Fatalf("%+v %v", c, err)
	}
	ri.revoke(t, "ref", refClientSecret, tok)
	if _, err := in.Validate(context.Background(), tok, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrInactive) {
		t.Fatalf("after revocation: %v", err)
	}
	if got := ri.calls.Load(); got != 0 {
		t.Fatalf("%d introspection calls on the wire, want 0", got)
	}
}

// TestIntrospectedClaimsMatchTheJWTs: a reference token's Claims, from
// introspection, have what the same client's JWT would: sub (rfc
// profile) and the client's claims.
func TestIntrospectedClaimsMatchTheJWTs(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	hash := []string{secret.HashSHA256("s").String()}
	iss, err := issuer.New(&issuer.Config{
		Issuer: srv.URL + "/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "ref", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference", Claims: []issuer.ClientClaim{{Type: "tenant", Value: "acme"}}},
			{ClientID: "jwt", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}, Claims: []issuer.ClientClaim{{Type: "tenant", Value: "acme"}}},
		},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = iss
	aud := []string{iss.URL() + "/resources"}
	v := newValidator(t, accesstoken.Config{Issuer: iss.URL(), Audience: aud, Keys: iss, Introspection: &accesstoken.Introspection{ClientID: "api", Local: iss}})
	for _, client := range []string{"ref", "jwt"} {
		cc := clientcredentials.Config{ClientID: client, ClientSecret: "s", TokenURL: iss.TokenURL(), Scopes: []string{scope.AdminWebAPI}}
		tok, err := cc.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.Validate(context.Background(), tok.AccessToken, accesstoken.Presentation{})
		if err != nil || c.Subject != client || c.ClientID != client || len(c.ClientClaims["tenant"]) != 1 || c.ClientClaims["tenant"][0] != "acme" {
			t.Errorf("%s: %+v %v", client, c, err)
		}
	}
}

// TestIntrospectionBesideKeys: with Keys, a token shaped like a JWT is
// checked with them and costs no call, and the others are introspected;
// without Keys, every token is introspected, JWTs too, up to the size
// the config allows; and an opaque token names no issuer, so that
// Introspection and Issuers exclude each other.
func TestIntrospectionBesideKeys(t *testing.T) {
	ri := newRefIssuer(t)
	jwt := ri.token(t, "jwt", "jwt-secret", scope.AdminWebAPI)
	ref := ri.token(t, "ref", refClientSecret, scope.AdminWebAPI)
	both := ri.introspector(t, func(c *accesstoken.Config) { c.Keys = ri.iss; c.Introspection.CacheBytes = -1 })
	calls := ri.calls.Load()
	if _, err := both.Validate(context.Background(), jwt, accesstoken.Presentation{}); err != nil || ri.calls.Load() != calls {
		t.Fatalf("a JWT beside Keys: %v, %d calls", err, ri.calls.Load()-calls)
	}
	if _, err := both.Validate(context.Background(), ref, accesstoken.Presentation{}); err != nil || ri.calls.Load() != calls+1 {
		t.Fatalf("a reference token: %v, %d calls", err, ri.calls.Load()-calls)
	}
	every := ri.introspector(t, func(c *accesstoken.Config) { c.MaxTokenSize = 16 << 10; c.Introspection.CacheBytes = -1 })
	calls = ri.calls.Load()
	if _, err := every.Validate(context.Background(), jwt, accesstoken.Presentation{}); err != nil || ri.calls.Load() != calls+1 {
		t.Fatalf("a JWT without Keys: %v, %d calls", err, ri.calls.Load()-calls)
	}
	_, err := accesstoken.New(context.Background(), accesstoken.Config{
		Issuers:       []accesstoken.TrustedIssuer{{Issuer: ri.issuerURL(), AnyAudience: true, Keys: ri.iss}},
		Introspection: &accesstoken.Introspection{ClientID: "admin-api", ClientSecret: apiSecret},
	})
	if err == nil || !strings.Contains(err.Error(), "Issuers cannot be combined with Introspection") {
		t.Fatalf("Issuers with Introspection: %v", err)
	}
}

// TestIntrospectingEveryTokenTakesJWTs: with Introspection and no Keys,
// every token is introspected, and the default size bound is the one of
// its shape: 512 bytes for an opaque token, 16 KiB for one shaped like a
// JWT (IdentityServer's are 700 bytes and more), which went unasked as
// too large.
func TestIntrospectingEveryTokenTakesJWTs(t *testing.T) {
	ri := newRefIssuer(t)
	every := ri.introspector(t, func(c *accesstoken.Config) { c.Introspection.CacheBytes = -1 })
	long := "eyJ" + strings.Repeat("a", 300) + "." + strings.Repeat("b", 300) + "." + strings.Repeat("c", 100)
	calls := ri.calls.Load()
	if _, err := every.Validate(context.Background(), long, accesstoken.Presentation{}); !errors.Is(err, accesstoken.ErrInactive) || ri.calls.Load() != calls+1 {
		t.Fatalf("a %d-byte JWT-shaped token: %v after %d calls, want it asked about (inactive)", len(long), err, ri.calls.Load()-calls)
	}
	opaque := strings.Repeat("r", 600)
	var ve *accesstoken.ValidationError
	if _, err := every.Validate(context.Background(), opaque, accesstoken.Presentation{}); !errors.As(err, &ve) || ve.Code != "too_large" || ri.calls.Load() != calls+1 {
		t.Fatalf("a 600-byte opaque token: %v after %d calls, want too_large without a call", err, ri.calls.Load()-calls-1)
	}
}

// TestIntrospectedJWTIsAskedOnce: an API that introspects every token
// caches a JWT's answer as a reference token's, under the token's
// SHA-256 (a JWT is longer than the 128 bytes a token is cached under as
// it is): 1,000 requests of one JWT make one call (issue 41: one each).
func TestIntrospectedJWTIsAskedOnce(t *testing.T) {
	ri := newRefIssuer(t)
	every := ri.introspector(t, nil)
	tok := ri.token(t, "jwt", "jwt-secret", scope.AdminWebAPI)
	if strings.Count(tok, ".") != 2 || len(tok) <= 128 {
		t.Fatalf("not a JWT of more than 128 bytes: %q", tok)
	}
	calls := ri.calls.Load()
	for i := range 1000 {
		if _, err := every.Validate(context.Background(), tok, accesstoken.Presentation{}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if n := ri.calls.Load() - calls; n != 1 {
		t.Fatalf("1,000 requests of one JWT made %d calls, want 1", n)
	}
}
