package accesstoken_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// The red-team pass over issue 32, item 5: a token costs at most
// MaxKeysPerToken (2) signature checks, whatever the key source holds.
// These tests count the checks (accesstoken.SignatureChecks) of forged
// tokens for every combination of kid, alg and key set the pass could
// build; each is a regression guard, that of finding F6 too, since it
// was fixed.

// published is one JWK of a test JWKS: the key, and what the JWK says
// (kid and alg as given; "-" leaves the member out).
type published struct {
	k        *keys.Key
	kid, alg string
}

// redTeamJWKS writes a JWKS of these JWKs.
func redTeamJWKS(t *testing.T, ps ...published) []byte {
	t.Helper()
	set := struct {
		Keys []keys.JWK `json:"keys"`
	}{}
	for _, p := range ps {
		j := p.k.PublicJWK()
		j.Kid, j.Alg = p.kid, p.alg
		if p.kid == "-" {
			j.Kid = ""
		}
		if p.alg == "-" {
			j.Alg = ""
		}
		set.Keys = append(set.Keys, j)
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// customJWKS publishes exactly the JWKs given, and returns a validator of
// its tokens that checks every token (no cache), its unknown-kid fetches
// limited to one (a limiter that never refills).
func customJWKS(t *testing.T, ps ...published) (*jwktest.JWKS, *accesstoken.Validator) {
	t.Helper()
	j := jwktest.NewJWKS(t)
	j.SetBody(redTeamJWKS(t, ps...))
	set := newJWKS(t, accesstoken.JWKSConfig{URL: j.JWKSURL(), RefreshUnknownKID: rate.NewLimiter(0, 1)})
	v := newValidatorOf(t, accesstoken.Config{Issuer: j.Issuer(), Keys: set, Audience: []string{j.Issuer() + "/resources"}, CacheSize: -1})
	return j, v
}

// checksOf validates token with v and returns the signature checks it
// cost and the error.
func checksOf(v *accesstoken.Validator, token string) (uint64, error) {
	before := accesstoken.SignatureChecks(v)
	_, err := v.Validate(context.Background(), token, accesstoken.Presentation{})
	return accesstoken.SignatureChecks(v) - before, err
}

func manyKeys(t *testing.T, n int, alg, jwkAlg string) ([]published, []*keys.Key) {
	var ps []published
	var ks []*keys.Key
	for range n {
		k := jwktest.NewKey(t, alg)
		ks = append(ks, k)
		ps = append(ps, published{k, k.KID, jwkAlg})
	}
	return ps, ks
}

// TestRedTeamSignatureChecksPerForgedToken: the checks of a forged token
// for each way the pass found to present one. Each costs at most two;
// where the set has more keys that could fit, none.
func TestRedTeamSignatureChecksPerForgedToken(t *testing.T) {
	forgerEC := jwktest.NewKey(t, "ES256")
	forgerEd := jwktest.NewKey(t, "EdDSA")
	noKid := map[string]any{"kid": nil}
	t.Run("unknown kids against 100 keys: no check, one fetch", func(t *testing.T) {
		ps, _ := manyKeys(t, 100, "ES256", "ES256")
		j, v := customJWKS(t, ps...)
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		hits := j.Hits()
		var total uint64
		for i := range 50 {
			n, err := checksOf(v, jwktest.Sign(t, forgerEC, map[string]any{"kid": fmt.Sprintf("unknown-%d", i)}, claims))
			total += n
			if !errors.Is(err, accesstoken.ErrUnknownKey) {
				t.Fatalf("token %d: %v", i, err)
			}
		}
		if total != 0 || j.Hits()-hits > 1 {
			t.Errorf("50 forged tokens with unknown kids: %d checks, %d fetches; want none, at most one", total, j.Hits()-hits)
		}
	})
	t.Run("kid of a key of another alg: no check", func(t *testing.T) {
		rsaKey := jwktest.NewKey(t, "RS256")
		j, v := customJWKS(t, published{rsaKey, rsaKey.KID, "RS256"})
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		n, err := checksOf(v, jwktest.Sign(t, forgerEC, map[string]any{"kid": rsaKey.KID}, claims))
		if n != 0 || err == nil {
			t.Errorf("%d checks, %v", n, err)
		}
	})
	t.Run("kid of an RSA key without alg, an ES256 token: one check, of the wrong type", func(t *testing.T) {
		rsaKey := jwktest.NewKey(t, "RS256")
		j, v := customJWKS(t, published{rsaKey, rsaKey.KID, "-"})
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		n, err := checksOf(v, jwktest.Sign(t, forgerEC, map[string]any{"kid": rsaKey.KID}, claims))
		if n != 1 || !errors.Is(err, accesstoken.ErrSignature) {
			t.Errorf("%d checks, %v", n, err)
		}
	})
	t.Run("no kid, 100 keys without alg: no check", func(t *testing.T) {
		ps, _ := manyKeys(t, 100, "ES256", "-")
		j, v := customJWKS(t, ps...)
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		n, err := checksOf(v, jwktest.Sign(t, forgerEC, noKid, claims))
		if n != 0 || !errors.Is(err, accesstoken.ErrAmbiguousKey) {
			t.Errorf("%d checks, %v", n, err)
		}
	})
	// One key of each type fits each alg: at most one check (one: before
	// F6 was fixed all three counted for every alg, and it was none).
	t.Run("no kid, keys without kid or alg, of three types: at most one check", func(t *testing.T) {
		ec, rs, ed := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "RS256"), jwktest.NewKey(t, "EdDSA")
		j, v := customJWKS(t, published{ec, "-", "-"}, published{rs, "-", "-"}, published{ed, "-", "-"})
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		for _, forger := range []*keys.Key{forgerEC, forgerEd} {
			if n, err := checksOf(v, jwktest.Sign(t, forger, noKid, claims)); n > 1 || err == nil {
				t.Errorf("%s: %d checks, %v", forger.Alg, n, err)
			}
		}
	})
	t.Run("EdDSA and Ed25519 names mixed", func(t *testing.T) {
		ps, _ := manyKeys(t, 2, "EdDSA", "EdDSA")
		other := jwktest.NewKey(t, "EdDSA")
		j, v := customJWKS(t, append(ps, published{other, other.KID, "Ed25519"})...)
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		for _, alg := range []string{"EdDSA", "Ed25519"} {
			n, err := checksOf(v, jwktest.Sign(t, forgerEd, map[string]any{"kid": nil, "alg": alg}, claims))
			if n != 0 || !errors.Is(err, accesstoken.ErrAmbiguousKey) {
				t.Errorf("no kid, alg %s, three keys under two names: %d checks, %v", alg, n, err)
			}
			n, err = checksOf(v, jwktest.Sign(t, forgerEd, map[string]any{"kid": other.KID, "alg": alg}, claims))
			if n != 1 || !errors.Is(err, accesstoken.ErrSignature) {
				t.Errorf("kid of the Ed25519 JWK, alg %s: %d checks, %v", alg, n, err)
			}
		}
	})
	t.Run("two JWKs under one kid: one check (the first JWK)", func(t *testing.T) {
		a, b := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
		j, v := customJWKS(t, published{a, "shared", "ES256"}, published{b, "shared", "ES256"})
		claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
		if n, err := checksOf(v, jwktest.Sign(t, forgerEC, map[string]any{"kid": "shared"}, claims)); n != 1 || err == nil {
			t.Errorf("%d checks, %v", n, err)
		}
	})
	t.Run("three issuers of 100 keys each", func(t *testing.T) {
		var trusted []accesstoken.TrustedIssuer
		var sets []*jwktest.JWKS
		for range 3 {
			ps, _ := manyKeys(t, 100, "ES256", "ES256")
			j := jwktest.NewJWKS(t)
			j.SetBody(redTeamJWKS(t, ps...))
			sets = append(sets, j)
			trusted = append(trusted, accesstoken.TrustedIssuer{Issuer: j.Issuer(), Keys: newJWKS(t, accesstoken.JWKSConfig{URL: j.JWKSURL()}),
				Audience: []string{j.Issuer() + "/resources"}})
		}
		v := newValidatorOf(t, accesstoken.Config{Issuers: trusted, CacheSize: -1})
		hits := 0
		for _, j := range sets {
			hits += j.Hits()
		}
		for _, j := range sets {
			if n, err := checksOf(v, jwktest.Sign(t, forgerEC, noKid, jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour))); n != 0 || !errors.Is(err, accesstoken.ErrAmbiguousKey) {
				t.Errorf("no kid, iss %s: %d checks, %v", j.Issuer(), n, err)
			}
		}
		if n, err := checksOf(v, jwktest.Sign(t, forgerEC, map[string]any{"kid": "x"}, jwktest.Claims("https://untrusted.example", scope.AdminWebAPI, time.Hour))); n != 0 || !errors.Is(err, accesstoken.ErrIssuer) {
			t.Errorf("an untrusted iss: %d checks, %v", n, err)
		}
		after := 0
		for _, j := range sets {
			after += j.Hits()
		}
		if after != hits {
			t.Errorf("%d JWKS fetches for tokens without kid or of an untrusted issuer", after-hits)
		}
	})
	t.Run("in-process issuer with two published keys", func(t *testing.T) {
		k1, k2 := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "ES256")
		iss, err := issuer.New(&issuer.Config{Issuer: "https://ids.example/ids", Keys: []issuer.KeyConfig{{Key: k1.Private}, {Key: k2.Private}},
			Clients: []issuer.ClientConfig{{ClientID: "c", SecretHashes: []string{secret.HashSHA256("s").String()}, Scopes: []string{scope.AdminWebAPI}}}})
		if err != nil {
			t.Fatal(err)
		}
		v := newValidatorOf(t, accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss, CacheSize: -1})
		claims := jwktest.Claims(iss.URL(), scope.AdminWebAPI, time.Hour)
		for name, header := range map[string]map[string]any{
			"no kid":                  noKid,
			"kid of k2, alg RS256":    {"kid": k2.KID, "alg": "RS256"},
			"kid of k2, alg EdDSA":    {"kid": k2.KID, "alg": "EdDSA"},
			"kid of k2, signed by me": {"kid": k2.KID},
		} {
			forger := forgerEC
			if header["alg"] == "EdDSA" {
				forger = forgerEd
			}
			if header["alg"] == "RS256" {
				forger = jwktest.NewKey(t, "RS256")
			}
			n, err := checksOf(v, jwktest.Sign(t, forger, header, claims))
			want := uint64(0)
			if name == "kid of k2, signed by me" {
				want = 1
			}
			if n != want || err == nil {
				t.Errorf("%s: %d checks, %v; want %d", name, n, err, want)
			}
		}
	})
}

// TestRedTeamForgedTokensOnTheOtherPaths: an opaque token, which a
// Validator with Keys and Introspection introspects, costs no signature
// check at the API (one call); and on a DPoP route, a forged token
// presented with a proof costs its own check (one, by kid) and never
// reaches the proof: the answer is invalid_token, not
// invalid_dpop_proof.
func TestRedTeamForgedTokensOnTheOtherPaths(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	j := jwktest.NewJWKS(t, k)
	jwks := newJWKS(t, accesstoken.JWKSConfig{URL: j.JWKSURL()})
	v := newValidatorOf(t, accesstoken.Config{Issuer: j.Issuer(), Keys: jwks, Audience: []string{j.Issuer() + "/resources"}, CacheSize: -1})
	e := newRawEndpoint(t)
	route := newValidatorOf(t, accesstoken.Config{Issuer: j.Issuer(), Keys: jwks, Audience: []string{j.Issuer() + "/resources"}, CacheSize: -1,
		Introspection: &accesstoken.Introspection{Endpoint: e.URL + "/introspect", ClientID: "my-api", ClientSecret: "api-secret"}})
	before := accesstoken.SignatureChecks(route)
	for i := range 10 {
		if _, err := route.Validate(context.Background(), fmt.Sprintf("opaque-forged-%d", i), accesstoken.Presentation{}); err == nil {
			t.Fatal("a forged opaque token validated")
		}
	}
	if n := accesstoken.SignatureChecks(route) - before; n != 0 || e.calls.Load() != 10 {
		t.Errorf("10 forged opaque tokens: %d signature checks, %d calls; want none, 10", n, e.calls.Load())
	}

	// DPoP: a token the forger signs under the real key's kid, bound to
	// the forger's own proof key, with a good proof by that key.
	proofKey := jwktest.NewKey(t, "ES256")
	signer, err := clientauth.NewSigner(proofKey.Private, "", "")
	if err != nil {
		t.Fatal(err)
	}
	jkt, err := keys.Thumbprint(proofKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewUnstartedServer(nil)
	api.Start()
	t.Cleanup(api.Close)
	dpop, err := middleware.NewDPoP(middleware.DPoPConfig{PublicURL: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	api.Config.Handler = middleware.RequireBearerWithConfig(v, middleware.BearerConfig{DPoP: dpop})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "in") }))
	forged := jwktest.Sign(t, jwktest.NewKey(t, "ES256"), map[string]any{"kid": k.KID},
		jwktest.With(jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour), "cnf", map[string]string{"jkt": jkt}))
	proof, err := signer.Proof(http.MethodGet, api.URL+"/x", forged, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, api.URL+"/x", nil)
	req.Header.Set("Authorization", "DPoP "+forged)
	req.Header.Set("DPoP", proof)
	before = accesstoken.SignatureChecks(v)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	challenge := resp.Header.Get("WWW-Authenticate")
	if n := accesstoken.SignatureChecks(v) - before; n != 1 || resp.StatusCode != 401 || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Errorf("a forged DPoP token with a good proof: %d checks, %d %s; want 1, 401 invalid_token", n, resp.StatusCode, challenge)
	}
}

// TestRedTeamKidlessTokenAmongKeysOfOtherTypes (finding F6, low,
// availability; fixed): a token without kid is checked against every JWK
// that may verify its alg, and a JWK without "alg" counted for every alg,
// whatever its key type: an issuer that publishes, without alg, one EC
// key and two RSA keys (kid-less tokens and alg-less JWKs both occur, if
// seldom together) had its genuine ES256 tokens without kid refused as
// ambiguous, although one key alone could verify them. Only the keys
// whose type fits the alg (kty EC and crv P-256 for ES256, RSA for RS256
// and PS256, OKP Ed25519 for EdDSA) count toward MaxKeysPerToken: the
// token costs one check and is accepted.
func TestRedTeamKidlessTokenAmongKeysOfOtherTypes(t *testing.T) {
	ec, r1, r2 := jwktest.NewKey(t, "ES256"), jwktest.NewKey(t, "RS256"), jwktest.NewKey(t, "RS256")
	j, v := customJWKS(t, published{ec, "-", "-"}, published{r1, "-", "-"}, published{r2, "-", "-"})
	claims := jwktest.Claims(j.Issuer(), scope.AdminWebAPI, time.Hour)
	if n, err := checksOf(v, jwktest.Sign(t, ec, map[string]any{"kid": nil}, claims)); err != nil || n != 1 {
		t.Errorf("a genuine ES256 token without kid, one EC key and two RSA keys published without alg: %v (%d checks), want accepted, 1", err, n)
	}
	if n, err := checksOf(v, jwktest.Sign(t, r2, map[string]any{"kid": nil}, claims)); err != nil || n > 2 {
		t.Errorf("a genuine RS256 token without kid, beside the other RSA key: %v (%d checks), want accepted, at most 2", err, n)
	}
}
