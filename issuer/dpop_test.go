package issuer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// dpopKey is a client's DPoP key, and its proofs' signer.
func dpopKey(t *testing.T) *clientauth.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := clientauth.NewSigner(k, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func proofFor(t *testing.T, s *clientauth.Signer, url, nonce string) string {
	t.Helper()
	p, err := s.Proof(http.MethodPost, url, "", nonce, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// withDPoP adds the client "bound" (pd_AdminWebApi), which must send a
// DPoP proof.
func withDPoP(c *issuer.Config) {
	withReference(c)
	c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "bound", SecretHashes: []string{secret.HashSHA256("bound-secret").String()},
		Scopes: []string{scope.AdminWebAPI}, RequireDPoP: true})
}

// dpopToken asks for a token for id with the DPoP headers given.
func dpopToken(t *testing.T, s *server, id, pass string, proofs ...string) answer {
	t.Helper()
	header := []string{"Authorization", basic(id, pass)}
	for _, p := range proofs {
		header = append(header, "DPoP", p)
	}
	return post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), header...)
}

// TestDPoPBoundTokens: a token request with a proof gets a JWT bound to
// the proof's key (cnf.jkt, token_type DPoP), signed as any other; a
// reference token is bound too and its introspection says so; without a
// proof a client gets a bearer token, unless it requires DPoP.
func TestDPoPBoundTokens(t *testing.T) {
	s := newServer(t, withDPoP)
	key := dpopKey(t)
	jkt, _ := key.JKT()
	a := dpopToken(t, s, "admin", adminSecret, proofFor(t, key, s.tokenURL(), ""))
	if a.status != 200 || a.body["token_type"] != "DPoP" {
		t.Fatalf("with a proof: %d %s", a.status, a.raw)
	}
	tok := a.body["access_token"].(string)
	claims := jwt.MapClaims{}
	keyOf := func(tk *jwt.Token) (any, error) {
		kid, _ := tk.Header["kid"].(string)
		pubs, err := s.iss.VerificationKeys(t.Context(), kid, "ES256")
		if err != nil {
			return nil, err
		}
		return pubs[0], nil
	}
	if _, err := jwt.ParseWithClaims(tok, claims, keyOf, jwt.WithValidMethods([]string{"ES256"})); err != nil {
		t.Fatalf("golang-jwt refuses the bound token: %v", err)
	}
	if cnf, _ := claims["cnf"].(map[string]any); cnf["jkt"] != jkt {
		t.Fatalf("cnf = %v, want jkt %s", claims["cnf"], jkt)
	}
	if a := dpopToken(t, s, "admin", adminSecret); a.status != 200 || a.body["token_type"] != "Bearer" {
		t.Fatalf("without a proof: %d %s", a.status, a.raw)
	} else {
		var unbound map[string]any
		decode(t, strings.Split(a.body["access_token"].(string), ".")[1], &unbound)
		if _, bound := unbound["cnf"]; bound {
			t.Fatalf("a token without a proof is bound: %v", unbound)
		}
	}
	if a := dpopToken(t, s, "bound", "bound-secret"); a.status != 400 || a.body["error"] != "invalid_request" {
		t.Fatalf("requireDPoP without a proof: %d %s", a.status, a.raw)
	}
	if a := dpopToken(t, s, "bound", "bound-secret", proofFor(t, key, s.tokenURL(), "")); a.status != 200 || a.body["token_type"] != "DPoP" {
		t.Fatalf("requireDPoP with a proof: %d %s", a.status, a.raw)
	}
	ref := dpopToken(t, s, "ref", refSecret, proofFor(t, key, s.tokenURL(), ""))
	if ref.status != 200 || ref.body["token_type"] != "DPoP" {
		t.Fatalf("reference with a proof: %d %s", ref.status, ref.raw)
	}
	in := introspect(t, s, "admin-api", adminAPISec, ref.body["access_token"].(string))
	if cnf, _ := in.body["cnf"].(map[string]any); in.body["active"] != true || in.body["token_type"] != "DPoP" || cnf["jkt"] != jkt {
		t.Fatalf("introspection of a bound reference token: %s", in.raw)
	}
	if in := introspect(t, s, "admin-api", adminAPISec, tok); !strings.Contains(in.raw, `"cnf":{"jkt":"`+jkt+`"}`) {
		t.Fatalf("introspection of a bound JWT: %s", in.raw)
	}
	d := do(t, mustRequest(t, http.MethodGet, s.issuerURL()+"/.well-known/openid-configuration"))
	if algs, _ := d.body["dpop_signing_alg_values_supported"].([]any); len(algs) != 5 || algs[4] != "Ed25519" {
		t.Fatalf("discovery: %s", d.raw)
	}
	for _, field := range []string{"token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported"} {
		if got, _ := json.Marshal(d.body[field]); string(got) != `["client_secret_basic","client_secret_post","private_key_jwt"]` {
			t.Errorf("discovery %s: %s", field, got)
		}
	}
}

// TestDPoPProofRefusals: a replayed proof, two DPoP headers, a proof for
// another URL or method, and a broken one are each answered 400
// invalid_dpop_proof, and get no token.
func TestDPoPProofRefusals(t *testing.T) {
	s := newServer(t, withDPoP)
	key := dpopKey(t)
	p := proofFor(t, key, s.tokenURL(), "")
	if a := dpopToken(t, s, "admin", adminSecret, p); a.status != 200 {
		t.Fatalf("first use: %d %s", a.status, a.raw)
	}
	get, err := key.Proof(http.MethodGet, s.tokenURL(), "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, proofs := range map[string][]string{
		"replayed":            {p},
		"two headers":         {proofFor(t, key, s.tokenURL(), ""), proofFor(t, key, s.tokenURL(), "")},
		"for another URL":     {proofFor(t, key, s.issuerURL()+"/connect/introspect", "")},
		"for another method":  {get},
		"not a JWT":           {"not-a-proof"},
		"an access token":     {dpopToken(t, s, "admin", adminSecret).body["access_token"].(string)},
		"over the size bound": {p + strings.Repeat("A", 9<<10)},
		"a corrupted header":  {strings.Replace(p, ".", "x.", 1)},
	} {
		a := dpopToken(t, s, "admin", adminSecret, proofs...)
		if a.status != 400 || a.body["error"] != "invalid_dpop_proof" || a.body["access_token"] != nil {
			t.Errorf("%s: %d %s", name, a.status, a.raw)
		}
	}
	// A proof from a client that fails to authenticate is not even read.
	if a := dpopToken(t, s, "admin", "wrong", "not-a-proof"); a.status != 401 {
		t.Fatalf("wrong secret: %d %s", a.status, a.raw)
	}
}

// TestDPoPNonce: with dpop.requireNonce, a proof without the nonce gets
// 400 use_dpop_nonce with the nonce in DPoP-Nonce; the retry with it gets
// the token; a made-up nonce is refused again.
func TestDPoPNonce(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withDPoP(c)
		c.DPoP.RequireNonce = true
	})
	key := dpopKey(t)
	a := dpopToken(t, s, "admin", adminSecret, proofFor(t, key, s.tokenURL(), ""))
	nonce := a.header.Get("DPoP-Nonce")
	if a.status != 400 || a.body["error"] != "use_dpop_nonce" || len(nonce) < 20 {
		t.Fatalf("without the nonce: %d %q %s", a.status, nonce, a.raw)
	}
	if a := dpopToken(t, s, "admin", adminSecret, proofFor(t, key, s.tokenURL(), "made-up")); a.status != 400 || a.body["error"] != "use_dpop_nonce" {
		t.Fatalf("a made-up nonce: %d %s", a.status, a.raw)
	}
	if a := dpopToken(t, s, "admin", adminSecret, proofFor(t, key, s.tokenURL(), nonce)); a.status != 200 || a.body["token_type"] != "DPoP" {
		t.Fatalf("with the nonce: %d %s", a.status, a.raw)
	}
}

// TestDPoPNonceAcrossReplicas: two issuers of one configuration (the same
// signing key) give and take the same nonces, with no shared state.
func TestDPoPNonceAcrossReplicas(t *testing.T) {
	shared := generate("ES256")
	replica := func(c *issuer.Config) {
		withDPoP(c)
		c.EphemeralKey, c.Keys = false, []issuer.KeyConfig{{Key: shared.Private, Alg: "ES256"}}
		c.DPoP.RequireNonce = true
	}
	a, b := newServer(t, replica), newServer(t, replica)
	key := dpopKey(t)
	nonce := dpopToken(t, a, "admin", adminSecret, proofFor(t, key, a.tokenURL(), "")).header.Get("DPoP-Nonce")
	if nonce == "" {
		t.Fatal("no nonce")
	}
	if got := dpopToken(t, b, "admin", adminSecret, proofFor(t, key, b.tokenURL(), nonce)); got.status != 200 {
		t.Fatalf("the other replica refused the nonce: %d %s", got.status, got.raw)
	}
	// Control: a replica with another signing key makes other nonces.
	other := newServer(t, func(c *issuer.Config) { withDPoP(c); c.DPoP.RequireNonce = true })
	if got := dpopToken(t, other, "admin", adminSecret, proofFor(t, key, other.tokenURL(), nonce)); got.status != 400 || got.body["error"] != "use_dpop_nonce" {
		t.Fatalf("another key's issuer: %d %s", got.status, got.raw)
	}
}

// TestDPoPFloodStaysInTheClientsShare: a client that sends a proof by a
// new key with each token request fills its own eighth of the replay
// memory (shared with client assertions), not the whole: the other
// clients' assertions and proofs keep their room. (Keyed by the proof's
// key instead, each proof took a place anywhere, and one client locked
// the others out.)
func TestDPoPFloodStaysInTheClientsShare(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		withDPoP(c)
		withMachineClients(c)
		c.ClientAssertions.ReplayCacheBytes = 16 << 10 // 1024 places, 128 a client
	})
	accepted, refused := 0, 0
	for range 300 {
		a := dpopToken(t, s, "admin", adminSecret, proofFor(t, dpopKey(t), s.tokenURL(), ""))
		switch {
		case a.status == 200:
			accepted++
		case a.status == 429 && a.body["error"] == "slow_down":
			refused++
		default:
			t.Fatalf("%d %s", a.status, a.raw)
		}
	}
	if accepted > 128 || refused == 0 {
		t.Fatalf("one client with new keys had %d proofs accepted (%d refused): more than its eighth of 1024", accepted, refused)
	}
	if live := issuer.ReplayLive(s.iss); live > 128 {
		t.Fatalf("the replay memory holds %d of the flood, more than a client's eighth", live)
	}
}
