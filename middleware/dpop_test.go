package middleware_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// dpopWorld is an issuer and an API on loopback, the API accepting
// Bearer and DPoP (or DPoP only), its Admin route behind RequireScope.
type dpopWorld struct {
	iss      *issuer.Issuer
	issSrv   *httptest.Server
	api      *httptest.Server
	adminURL string
	key      *clientauth.Signer // the client's DPoP key
}

func newDPoPWorld(t *testing.T, dcfg middleware.DPoPConfig) *dpopWorld {
	t.Helper()
	w := &dpopWorld{}
	w.issSrv = httptest.NewServer(nil)
	t.Cleanup(w.issSrv.Close)
	hash := []string{secret.HashSHA256("s").String()}
	var err error
	w.iss, err = issuer.New(&issuer.Config{
		Issuer: w.issSrv.URL + "/ids", EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "c", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}},
			{ClientID: "ref", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}, AccessTokenType: "reference"},
		},
		APIResources: []issuer.APIResourceConfig{{Name: "api", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.issSrv.Config.Handler = w.iss
	aud := []string{w.iss.URL() + "/resources"}
	both := newValidator(t, accesstoken.Config{Issuer: w.iss.URL(), Audience: aud, Keys: w.iss, Introspection: &accesstoken.Introspection{ClientID: "api", Local: w.iss}})
	w.api = httptest.NewUnstartedServer(nil)
	w.api.Start()
	t.Cleanup(w.api.Close)
	dcfg.PublicURL = w.api.URL
	bearer := middleware.RequireBearerWithConfig(both, middleware.BearerConfig{DPoP: newDPoP(t, dcfg)})
	mux := http.NewServeMux()
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		_ = json.NewEncoder(rw).Encode(map[string]string{"client": c.ClientID, "jkt": c.JKT})
	})
	mux.Handle("/admin", bearer(middleware.RequireScope(scope.AdminWebAPI)(handler)))
	mux.Handle("/connect", bearer(middleware.RequireScope(scope.ConnectWebAPI)(handler)))
	w.api.Config.Handler = mux
	w.adminURL = w.api.URL + "/admin"
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	w.key, _ = clientauth.NewSigner(k, "", "")
	return w
}

// token gets a token for client, bound to key when it is not nil.
func (w *dpopWorld) token(t *testing.T, client string, key *clientauth.Signer, sc string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.iss.TokenURL(), strings.NewReader(url.Values{"grant_type": {"client_credentials"}, "scope": {sc}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, "s")
	if key != nil {
		p, err := key.Proof(http.MethodPost, w.iss.TokenURL(), "", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("DPoP", p)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.AccessToken == "" {
		t.Fatalf("token: %s %v", resp.Status, err)
	}
	if want := map[bool]string{true: "DPoP", false: "Bearer"}[key != nil]; a.TokenType != want {
		t.Fatalf("token_type %q, want %q", a.TokenType, want)
	}
	return a.AccessToken
}

type reply struct {
	status    int
	challenge []string
	nonce     string
	body      string
}

// dcall sends a GET to u with authz and the DPoP proofs given.
func dcall(t *testing.T, u, authz string, proofs ...string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	for _, p := range proofs {
		req.Header.Add("DPoP", p)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Values("WWW-Authenticate"), resp.Header.Get("DPoP-Nonce"), string(b)}
}

func proof(t *testing.T, key *clientauth.Signer, method, u, token, nonce string, at time.Time) string {
	t.Helper()
	p, err := key.Proof(method, u, token, nonce, at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDPoPEndToEnd: a token bound at the issuer opens the API with a
// fresh proof for each request (the token's validation cached, each proof
// checked), for JWTs and reference tokens alike.
func TestDPoPEndToEnd(t *testing.T) {
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	jkt, _ := w.key.JKT()
	for _, client := range []string{"c", "ref"} {
		tok := w.token(t, client, w.key, scope.AdminWebAPI)
		for range 3 {
			r := dcall(t, w.adminURL, "DPoP "+tok, proof(t, w.key, "GET", w.adminURL, tok, "", time.Now()))
			if r.status != 200 || !strings.Contains(r.body, `"jkt":"`+jkt+`"`) {
				t.Fatalf("%s: %d %v %s", client, r.status, r.challenge, r.body)
			}
		}
	}
	// Bearer tokens still work beside.
	if r := dcall(t, w.adminURL, "Bearer "+w.token(t, "c", nil, scope.AdminWebAPI)); r.status != 200 {
		t.Fatalf("a bearer token: %d %v", r.status, r.challenge)
	}
}

// TestDPoPEachCheckFailsAlone: with a good token, a proof wrong in one
// way only is refused, 401 with a DPoP challenge naming the error.
func TestDPoPEachCheckFailsAlone(t *testing.T) {
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	tok := w.token(t, "c", w.key, scope.AdminWebAPI)
	unbound := w.token(t, "c", nil, scope.AdminWebAPI)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := clientauth.NewSigner(k2, "", "")
	now := time.Now()
	used := proof(t, w.key, "GET", w.adminURL, tok, "", now)
	if r := dcall(t, w.adminURL, "DPoP "+tok, used); r.status != 200 {
		t.Fatalf("control: %d %v", r.status, r.challenge)
	}
	for _, c := range []struct {
		name   string
		authz  string
		proofs []string
		code   string
	}{
		{"no proof", "DPoP " + tok, nil, "invalid_dpop_proof"},
		{"two proofs", "DPoP " + tok, []string{proof(t, w.key, "GET", w.adminURL, tok, "", now), proof(t, w.key, "GET", w.adminURL, tok, "", now)}, "invalid_dpop_proof"},
		{"replayed", "DPoP " + tok, []string{used}, "invalid_dpop_proof"},
		{"wrong htm", "DPoP " + tok, []string{proof(t, w.key, "POST", w.adminURL, tok, "", now)}, "invalid_dpop_proof"},
		{"wrong htu", "DPoP " + tok, []string{proof(t, w.key, "GET", w.api.URL+"/connect", tok, "", now)}, "invalid_dpop_proof"},
		{"htu of another host", "DPoP " + tok, []string{proof(t, w.key, "GET", "https://elsewhere.example/admin", tok, "", now)}, "invalid_dpop_proof"},
		{"too old", "DPoP " + tok, []string{proof(t, w.key, "GET", w.adminURL, tok, "", now.Add(-2*time.Minute))}, "invalid_dpop_proof"},
		{"no ath", "DPoP " + tok, []string{proof(t, w.key, "GET", w.adminURL, "", "", now)}, "invalid_dpop_proof"},
		{"ath of another token", "DPoP " + tok, []string{proof(t, w.key, "GET", w.adminURL, unbound, "", now)}, "invalid_dpop_proof"},
		{"another key", "DPoP " + tok, []string{proof(t, other, "GET", w.adminURL, tok, "", now)}, "invalid_dpop_proof"},
		{"a bound token as Bearer", "Bearer " + tok, nil, "invalid_token"},
		{"an unbound token as DPoP", "DPoP " + unbound, []string{proof(t, w.key, "GET", w.adminURL, unbound, "", now)}, "invalid_token"},
		{"a tampered token", "DPoP " + tok[:len(tok)-3] + "AAA", []string{proof(t, w.key, "GET", w.adminURL, tok[:len(tok)-3]+"AAA", "", now)}, "invalid_token"},
	} {
		r := dcall(t, w.adminURL, c.authz, c.proofs...)
		scheme := strings.Fields(c.authz)[0]
		if r.status != 401 || len(r.challenge) != 1 || !strings.HasPrefix(r.challenge[0], scheme+" ") || !strings.Contains(r.challenge[0], `error="`+c.code+`"`) || !strings.Contains(r.body, `"error":"`+c.code+`"`) {
			t.Errorf("%s: %d %q %s", c.name, r.status, r.challenge, r.body)
		}
		if scheme == "DPoP" && !strings.Contains(r.challenge[0], `algs="ES256 RS256 PS256 EdDSA Ed25519"`) {
			t.Errorf("%s: the DPoP challenge lists no algs: %q", c.name, r.challenge)
		}
		if strings.Contains(r.body, tok) || strings.Contains(strings.Join(r.challenge, ""), tok[:20]) {
			t.Errorf("%s: the answer echoes the token", c.name)
		}
	}
	// The scope refusal after a DPoP request speaks DPoP too.
	r := dcall(t, w.api.URL+"/connect", "DPoP "+tok, proof(t, w.key, "GET", w.api.URL+"/connect", tok, "", now))
	if r.status != 403 || !strings.HasPrefix(r.challenge[0], "DPoP ") || !strings.Contains(r.challenge[0], `error="insufficient_scope"`) {
		t.Fatalf("insufficient scope: %d %q", r.status, r.challenge)
	}
}

// TestDPoPChallenges: without a token, a bare challenge for each scheme
// accepted; with DPoP required, a bearer token is answered as none.
func TestDPoPChallenges(t *testing.T) {
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	r := dcall(t, w.adminURL, "")
	if r.status != 401 || len(r.challenge) != 2 || r.challenge[0] != `Bearer realm="idsauth"` || r.challenge[1] != `DPoP realm="idsauth", algs="ES256 RS256 PS256 EdDSA Ed25519"` {
		t.Fatalf("both: %d %q", r.status, r.challenge)
	}
	only := newDPoPWorld(t, middleware.DPoPConfig{Required: true})
	for _, authz := range []string{"", "Bearer " + only.token(t, "c", nil, scope.AdminWebAPI)} {
		r := dcall(t, only.adminURL, authz)
		if r.status != 401 || len(r.challenge) != 1 || r.challenge[0] != `DPoP realm="idsauth", algs="ES256 RS256 PS256 EdDSA Ed25519"` {
			t.Fatalf("DPoP only, %q: %d %q", authz, r.status, r.challenge)
		}
	}
	tok := only.token(t, "c", only.key, scope.AdminWebAPI)
	if r := dcall(t, only.adminURL, "DPoP "+tok, proof(t, only.key, "GET", only.adminURL, tok, "", time.Now())); r.status != 200 {
		t.Fatalf("DPoP only, with a proof: %d %q", r.status, r.challenge)
	}
}

// TestDPoPNonceAtTheAPI: with RequireNonce, the first request gets 401
// use_dpop_nonce and a DPoP-Nonce; the retry with it passes; replicas
// given one NonceKey take each other's nonces.
func TestDPoPNonceAtTheAPI(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	w := newDPoPWorld(t, middleware.DPoPConfig{RequireNonce: true, NonceKey: key})
	tok := w.token(t, "c", w.key, scope.AdminWebAPI)
	r := dcall(t, w.adminURL, "DPoP "+tok, proof(t, w.key, "GET", w.adminURL, tok, "", time.Now()))
	if r.status != 401 || r.nonce == "" || !strings.Contains(r.challenge[0], `error="use_dpop_nonce"`) {
		t.Fatalf("without the nonce: %d %q %q", r.status, r.nonce, r.challenge)
	}
	if r2 := dcall(t, w.adminURL, "DPoP "+tok, proof(t, w.key, "GET", w.adminURL, tok, r.nonce, time.Now())); r2.status != 200 {
		t.Fatalf("with the nonce: %d %q", r2.status, r2.challenge)
	}
	if r3 := dcall(t, w.adminURL, "DPoP "+tok, proof(t, w.key, "GET", w.adminURL, tok, "made-up", time.Now())); r3.status != 401 || r3.nonce == "" {
		t.Fatalf("a made-up nonce: %d %q", r3.status, r3.challenge)
	}
}

// TestDPoPReplayMemoryIsBounded: a flood of distinct valid proofs by one
// key fills that key's share of the replay memory, whose proofs are then
// refused (not forgotten), and leaves the heap as it was: the memory is
// allocated once, in bytes.
func TestDPoPReplayMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("signs 3000 proofs")
	}
	w := newDPoPWorld(t, middleware.DPoPConfig{ReplayBytes: 64 << 10})
	tok := w.token(t, "c", w.key, scope.AdminWebAPI)
	proofs := make([]string, 3000)
	for i := range proofs {
		proofs[i] = proof(t, w.key, "GET", w.adminURL, tok, "", time.Now())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	accepted, refused := 0, 0
	for _, p := range proofs {
		switch r := dcall(t, w.adminURL, "DPoP "+tok, p); r.status {
		case 200:
			accepted++
		case 401:
			if !strings.Contains(r.body, "no room to remember its jti") {
				t.Fatalf("refused for another reason: %s", r.body)
			}
			refused++
		default:
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if accepted < 300 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: the key's share (a 64 KiB memory's eighth: 512) was not reached", accepted, refused)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Fatalf("the heap grew by %d bytes over the flood", grown)
	}
	// The accepted ones are remembered: each is refused when sent again.
	if r := dcall(t, w.adminURL, "DPoP "+tok, proofs[0]); r.status != 401 || !strings.Contains(r.body, "already used") {
		t.Fatalf("a proof of the flood, again: %d %s", r.status, r.body)
	}
}

// TestDPoPRedTeamFixes: where DPoP is accepted, a bound token is refused
// as Bearer even by a validator that allows bound tokens; one client's
// proofs, by as many keys as it likes, take its own share of the replay
// memory; a ProofMaxAge under a second is refused at construction; and
// htu is the path the client sent, not the one http.StripPrefix left.
func TestDPoPRedTeamFixes(t *testing.T) {
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	lax := newValidator(t, accesstoken.Config{Issuer: w.iss.URL(), Keys: w.iss, AllowBoundTokens: true})
	tok := w.token(t, "c", w.key, scope.AdminWebAPI)
	h := middleware.RequireBearerWithConfig(lax, middleware.BearerConfig{DPoP: newDPoP(t, middleware.DPoPConfig{PublicURL: "https://api.test"})})(http.NotFoundHandler())
	req := httptest.NewRequest(http.MethodGet, "https://api.test/admin", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a bound token as Bearer, AllowBoundTokens: %d %q", rec.Code, rec.Header().Values("WWW-Authenticate"))
	}

	// Many keys, one client: at most its eighth of 64 KiB (512) accepted.
	small := newDPoPWorld(t, middleware.DPoPConfig{ReplayBytes: 64 << 10})
	type bound struct {
		key *clientauth.Signer
		tok string
	}
	var keys []bound
	for range 8 {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		s, _ := clientauth.NewSigner(k, "", "")
		keys = append(keys, bound{s, small.token(t, "c", s, scope.AdminWebAPI)})
	}
	accepted := 0
	for i := range 700 {
		b := keys[i%len(keys)]
		if r := dcall(t, small.adminURL, "DPoP "+b.tok, proof(t, b.key, "GET", small.adminURL, b.tok, "", time.Now())); r.status == 200 {
			accepted++
		}
	}
	if accepted > 512 || accepted < 300 {
		t.Fatalf("one client with 8 keys had %d of 700 proofs accepted, want its share of 512", accepted)
	}

	for name, bad := range map[string]middleware.DPoPConfig{
		"a ProofMaxAge of 500ms":   {PublicURL: "https://api.test", ProofMaxAge: 500 * time.Millisecond, RequireNonce: true},
		"a PublicURL with a path":  {PublicURL: "https://api.test/base"},
		"a PublicURL with a query": {PublicURL: "https://api.test?q=1"},
		"a relative PublicURL":     {PublicURL: "/api"},
		"a negative ReplayBytes":   {PublicURL: "https://api.test", ReplayBytes: -1},
	} {
		if _, err := middleware.NewDPoP(bad); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}

	// Behind http.StripPrefix, the proof is for the URL the client sent.
	v := newValidator(t, accesstoken.Config{Issuer: w.iss.URL(), Keys: w.iss})
	api := httptest.NewServer(nil)
	defer api.Close()
	inner := middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: newDPoP(t, middleware.DPoPConfig{PublicURL: api.URL})})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", inner))
	api.Config.Handler = mux
	if r := dcall(t, api.URL+"/api/admin", "DPoP "+tok, proof(t, w.key, "GET", api.URL+"/api/admin", tok, "", time.Now())); r.status != 200 {
		t.Fatalf("the proof for the URL sent: %d %q %s", r.status, r.challenge, r.body)
	}
	if r := dcall(t, api.URL+"/api/admin", "DPoP "+tok, proof(t, w.key, "GET", api.URL+"/admin", tok, "", time.Now())); r.status != 401 {
		t.Fatalf("a proof for the stripped path: %d", r.status)
	}
}

// TestDPoPAdvertisesWhatItAccepts: the proof algorithms RequireBearer
// accepts, tried name by name with a key that fits each and a token bound
// to it, are exactly DPoPAlgorithms, the algs of a DPoP challenge and the
// issuer's dpop_signing_alg_values_supported: one list, Ed25519 (RFC
// 9864) in it.
func TestDPoPAdvertisesWhatItAccepts(t *testing.T) {
	signing := jwktest.NewKey(t, "ES256")
	v := newValidator(t, accesstoken.Config{Issuer: iss, Keys: newCountingKeys(signing)})
	api := httptest.NewServer(nil)
	defer api.Close()
	api.Config.Handler = middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: newDPoP(t, middleware.DPoPConfig{PublicURL: api.URL})})(http.NotFoundHandler())
	ec256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	var accepted []string
	for _, c := range []struct {
		alg    string
		method jwt.SigningMethod
		key    crypto.Signer
	}{
		{"ES256", jwt.SigningMethodES256, ec256},
		{"ES384", jwt.SigningMethodES384, ec384},
		{"RS256", jwt.SigningMethodRS256, rsaKey},
		{"RS512", jwt.SigningMethodRS512, rsaKey},
		{"PS256", jwt.SigningMethodPS256, rsaKey},
		{"EdDSA", jwt.SigningMethodEdDSA, edKey},
		{"Ed25519", jwt.SigningMethodEdDSA, edKey},
	} {
		jkt, err := keys.Thumbprint(c.key.Public())
		if err != nil {
			t.Fatal(err)
		}
		claims := jwktest.Claims(iss, scope.AdminWebAPI, time.Hour)
		claims["cnf"] = map[string]string{"jkt": jkt}
		tok := jwktest.Sign(t, signing, nil, claims)
		if r := dcall(t, api.URL+"/x", "DPoP "+tok, proofAs(t, c.alg, c.method, c.key, "GET", api.URL+"/x", tok)); r.status == 404 {
			accepted = append(accepted, c.alg)
		} else if r.status != 401 {
			t.Fatalf("%s: %d %q", c.alg, r.status, r.challenge)
		}
	}
	want := strings.Join(middleware.DPoPAlgorithms(), " ")
	if strings.Join(accepted, " ") != want || !slices.Contains(accepted, "Ed25519") {
		t.Fatalf("accepted %q, DPoPAlgorithms %q", accepted, want)
	}
	if r := dcall(t, api.URL+"/x", ""); len(r.challenge) != 2 || !strings.Contains(r.challenge[1], `algs="`+want+`"`) {
		t.Fatalf("the challenge: %q, want algs=%q", r.challenge, want)
	}
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	resp, err := http.Get(w.iss.URL() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Algs []string `json:"dpop_signing_alg_values_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || strings.Join(doc.Algs, " ") != want {
		t.Fatalf("discovery: %q %v, want %q", doc.Algs, err, want)
	}
}

// proofAs is a DPoP proof whose header names alg, signed by key with
// method.
func proofAs(t *testing.T, alg string, method jwt.SigningMethod, key crypto.Signer, htm, htu, token string) string {
	t.Helper()
	jwk, err := keys.PublicJWKOf(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(token))
	tok := jwt.NewWithClaims(method, jwt.MapClaims{"jti": rand.Text(), "htm": htm, "htu": htu, "iat": time.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(h[:])})
	tok.Header["alg"], tok.Header["typ"], tok.Header["jwk"] = alg, "dpop+jwt", jwk
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDPoPDescriptionsAreTheContracts: every refused proof is described
// on the wire, in the challenge and the JSON body alike, as
// docs/CONTRACT.md §1.1 lists it: "invalid DPoP proof: " and a check the
// contract names, a proof by another key than the token's included.
func TestDPoPDescriptionsAreTheContracts(t *testing.T) {
	raw, err := os.ReadFile("../docs/CONTRACT.md")
	if err != nil {
		t.Fatal(err)
	}
	contract := strings.Join(strings.Fields(string(raw)), " ")
	w := newDPoPWorld(t, middleware.DPoPConfig{})
	tok := w.token(t, "c", w.key, scope.AdminWebAPI)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := clientauth.NewSigner(k2, "", "")
	now := time.Now()
	used := proof(t, w.key, "GET", w.adminURL, tok, "", now)
	if r := dcall(t, w.adminURL, "DPoP "+tok, used); r.status != 200 {
		t.Fatalf("control: %d %q", r.status, r.challenge)
	}
	for name, proofs := range map[string][]string{
		"another key":  {proof(t, other, "GET", w.adminURL, tok, "", now)},
		"no proof":     nil,
		"two proofs":   {proof(t, w.key, "GET", w.adminURL, tok, "", now), proof(t, w.key, "GET", w.adminURL, tok, "", now)},
		"replayed":     {used},
		"wrong htm":    {proof(t, w.key, "POST", w.adminURL, tok, "", now)},
		"wrong htu":    {proof(t, w.key, "GET", w.api.URL+"/connect", tok, "", now)},
		"too old":      {proof(t, w.key, "GET", w.adminURL, tok, "", now.Add(-2*time.Minute))},
		"no ath":       {proof(t, w.key, "GET", w.adminURL, "", "", now)},
		"not a JWT":    {"x.y"},
		"typ JWT":      {proofTyp(t, w.key, "JWT", w.adminURL, tok)},
		"alg HS256":    {"eyJhbGciOiJIUzI1NiIsInR5cCI6ImRwb3Arand0In0.e30.c2ln"},
		"a bad header": {"eyJhbGciOiJFUzI1NiIsInR5cCI6ImRwb3Arand0In0.e30.c2ln"},
	} {
		r := dcall(t, w.adminURL, "DPoP "+tok, proofs...)
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if err := json.Unmarshal([]byte(r.body), &body); err != nil || r.status != 401 || body.Error != "invalid_dpop_proof" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
			continue
		}
		if len(r.challenge) != 1 || !strings.Contains(r.challenge[0], `error_description="`+body.Description+`"`) {
			t.Errorf("%s: the challenge %q does not say %q", name, r.challenge, body.Description)
		}
		which, ok := strings.CutPrefix(body.Description, "invalid DPoP proof: ")
		which = regexp.MustCompile(`^[0-9]+ DPoP headers`).ReplaceAllString(which, "<n> DPoP headers")
		if !ok || !strings.Contains(contract, "`"+which+"`") {
			t.Errorf("%s: %q is not among docs/CONTRACT.md §1.1's descriptions", name, body.Description)
		}
		if name == "another key" && body.Description != "invalid DPoP proof: key is not the token's" {
			t.Errorf("another key: %q", body.Description)
		}
	}
}

// proofTyp is a proof by key for a GET of htu with the header's typ set
// to typ.
func proofTyp(t *testing.T, key *clientauth.Signer, typ, htu, token string) string {
	t.Helper()
	p := proof(t, key, "GET", htu, token, "", time.Now())
	parts := strings.Split(p, ".")
	h, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var m map[string]any
	_ = json.Unmarshal(h, &m)
	m["typ"] = typ
	return jwktest.Segment(m) + "." + parts[1] + "." + parts[2]
}
