package dpop_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/dpop"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
)

const tokenURL = "https://ids.example/ids/connect/token"

func check(now time.Time) dpop.Check {
	return dpop.Check{Method: "POST", URL: tokenURL, Now: now, Window: time.Minute, Leeway: 5 * time.Second}
}

// TestProofsOfEveryAlgorithm: a proof made by the client's signer with a
// key of each algorithm verifies, and gives the key's thumbprint.
func TestProofsOfEveryAlgorithm(t *testing.T) {
	now := time.Now()
	for _, alg := range []string{"ES256", "RS256", "PS256", "EdDSA"} {
		k := jwktest.NewKey(t, alg)
		s, err := clientauth.NewSigner(k.Private, alg, "")
		if err != nil {
			t.Fatal(err)
		}
		proof, err := s.Proof("POST", tokenURL, "", "", now)
		if err != nil {
			t.Fatal(err)
		}
		p, err := dpop.Verify(proof, check(now))
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		want, _ := keys.Thumbprint(k.Public())
		if p.JKT != want || p.ID == "" || !p.Expires.After(now) {
			t.Fatalf("%s: %+v, want jkt %s", alg, p, want)
		}
	}
}

// proofKey is the key of the hand-made proofs.
var proofKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// sign makes a proof of header and claims over the defaults (a nil value
// removes an entry), signed by key with ES256.
func sign(t *testing.T, key crypto.Signer, header, claims map[string]any) string {
	t.Helper()
	jwk, _ := keys.PublicJWKOf(key.Public())
	c := jwt.MapClaims{"jti": "j-" + rand.Text(), "htm": "POST", "htu": tokenURL, "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["typ"] = "dpop+jwt"
	tok.Header["jwk"] = jwk
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEachCheckFailsAlone: a proof wrong in one way only is refused for
// that reason, and the control passes.
func TestEachCheckFailsAlone(t *testing.T) {
	now := time.Now()
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherJWK, _ := keys.PublicJWKOf(other.Public())
	privateJWK := func() map[string]any {
		j, _ := keys.PublicJWKOf(proofKey.Public())
		b, _ := json.Marshal(j)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		m["d"] = "AAAA"
		return m
	}()
	withToken := check(now)
	withToken.AccessToken = "the-access-token"
	nonces := &dpop.Nonces{Key: []byte("a nonce key of the test's"), Period: time.Minute}
	withNonce := check(now)
	withNonce.Nonces = nonces
	for _, c := range []struct {
		name  string
		proof string
		check dpop.Check
		want  error
	}{
		{"control", sign(t, proofKey, nil, nil), check(now), nil},
		{"control with ath and nonce", sign(t, proofKey, nil, map[string]any{"ath": dpop.TokenHash("the-access-token"), "nonce": nonces.At(now)}), func() dpop.Check { c := withToken; c.Nonces = nonces; return c }(), nil},
		{"the nonce of the period before", sign(t, proofKey, nil, map[string]any{"nonce": nonces.At(now.Add(-time.Minute))}), withNonce, nil},
		{"typ JWT", sign(t, proofKey, map[string]any{"typ": "JWT"}, nil), check(now), dpop.ErrType},
		{"no typ", sign(t, proofKey, map[string]any{"typ": nil}, nil), check(now), dpop.ErrType},
		{"no jwk", sign(t, proofKey, map[string]any{"jwk": nil}, nil), check(now), dpop.ErrKey},
		{"jwk with private members", sign(t, proofKey, map[string]any{"jwk": privateJWK}, nil), check(now), dpop.ErrKey},
		{"jwk of another key", sign(t, proofKey, map[string]any{"jwk": otherJWK}, nil), check(now), dpop.ErrSignature},
		{"crit", sign(t, proofKey, map[string]any{"crit": []string{"x"}}, nil), check(now), dpop.ErrAlgorithm},
		{"no jti", sign(t, proofKey, nil, map[string]any{"jti": nil}), check(now), dpop.ErrClaims},
		{"jti a number", sign(t, proofKey, nil, map[string]any{"jti": 7}), check(now), dpop.ErrClaims},
		{"no iat", sign(t, proofKey, nil, map[string]any{"iat": nil}), check(now), dpop.ErrClaims},
		{"htm GET", sign(t, proofKey, nil, map[string]any{"htm": "GET"}), check(now), dpop.ErrMethod},
		{"htm post", sign(t, proofKey, nil, map[string]any{"htm": "post"}), check(now), dpop.ErrMethod},
		{"htu of another host", sign(t, proofKey, nil, map[string]any{"htu": "https://evil.example/ids/connect/token"}), check(now), dpop.ErrURL},
		{"htu of another path", sign(t, proofKey, nil, map[string]any{"htu": "https://ids.example/ids/connect/introspect"}), check(now), dpop.ErrURL},
		{"htu over http", sign(t, proofKey, nil, map[string]any{"htu": "http://ids.example/ids/connect/token"}), check(now), dpop.ErrURL},
		{"htu relative", sign(t, proofKey, nil, map[string]any{"htu": "/ids/connect/token"}), check(now), dpop.ErrURL},
		{"iat too old", sign(t, proofKey, nil, map[string]any{"iat": now.Add(-2 * time.Minute).Unix()}), check(now), dpop.ErrIssuedAt},
		{"iat in the future", sign(t, proofKey, nil, map[string]any{"iat": now.Add(time.Minute).Unix()}), check(now), dpop.ErrIssuedAt},
		{"iat 1e300", sign(t, proofKey, nil, map[string]any{"iat": 1e300}), check(now), dpop.ErrIssuedAt},
		{"no ath at a resource", sign(t, proofKey, nil, nil), withToken, dpop.ErrHash},
		{"ath of another token", sign(t, proofKey, nil, map[string]any{"ath": dpop.TokenHash("another")}), withToken, dpop.ErrHash},
		{"no nonce", sign(t, proofKey, nil, nil), withNonce, dpop.ErrNonce},
		{"a made-up nonce", sign(t, proofKey, nil, map[string]any{"nonce": "n-0"}), withNonce, dpop.ErrNonce},
		{"the nonce of two periods before", sign(t, proofKey, nil, map[string]any{"nonce": nonces.At(now.Add(-2 * time.Minute))}), withNonce, dpop.ErrNonce},
		{"another key's nonce", sign(t, proofKey, nil, map[string]any{"nonce": (&dpop.Nonces{Key: []byte("another"), Period: time.Minute}).At(now)}), withNonce, dpop.ErrNonce},
	} {
		_, err := dpop.Verify(c.proof, c.check)
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if c.want != nil && c.want != dpop.ErrNonce && !errors.Is(err, dpop.ErrInvalid) {
			t.Errorf("%s: %v is no ErrInvalid", c.name, err)
		}
	}
}

// signPayload makes a proof of a payload written by hand, signed by
// proofKey with ES256 under the default header.
func signPayload(t *testing.T, payload string) string {
	t.Helper()
	h := jwktest.Segment(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": json.RawMessage(mustJWK(t))})
	p := jwktest.Segment(payload)
	sig, err := jwt.SigningMethodES256.Sign(h+"."+p, proofKey)
	if err != nil {
		t.Fatal(err)
	}
	return h + "." + p + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestProofClaimsAreReadExactly: a proof's claims are read by the one
// claims reader: a name is matched exactly, case included, and a claim
// named twice refuses the proof, which encoding/json would have read
// otherwise (the first a case-insensitive match, the second the last
// one).
func TestProofClaimsAreReadExactly(t *testing.T) {
	now := time.Now()
	claims := func(members string) string {
		return fmt.Sprintf(`{"jti":"j-%s","htu":%q,"iat":%d,%s}`, rand.Text(), tokenURL, now.Unix(), members)
	}
	if _, err := dpop.Verify(signPayload(t, claims(`"htm":"POST"`)), check(now)); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, members := range map[string]string{
		"HTM for htm":            `"HTM":"POST"`,
		"Htm for htm":            `"Htm":"POST"`,
		"htm twice, POST last":   `"htm":"GET","htm":"POST"`,
		"htm twice, POST first":  `"htm":"POST","htm":"GET"`,
		"htm twice, one escaped": `"htm":"POST","\u0068tm":"POST"`,
		"iat twice":              `"htm":"POST","iat":` + strconv.FormatInt(now.Unix(), 10),
		"htm null":               `"htm":null`,
	} {
		if _, err := dpop.Verify(signPayload(t, claims(members)), check(now)); !errors.Is(err, dpop.ErrClaims) {
			t.Errorf("%s: err = %v, want ErrClaims", name, err)
		}
	}
}

// TestHostileProofs: forms an attacker may send are refused before any
// key is trusted.
func TestHostileProofs(t *testing.T) {
	now := time.Now()
	good := sign(t, proofKey, nil, nil)
	parts := strings.Split(good, ".")
	none := jwktest.Segment(map[string]any{"typ": "dpop+jwt", "alg": "none", "jwk": json.RawMessage(mustJWK(t))}) + "." + parts[1] + "."
	hs := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"jti": "x", "htm": "POST", "htu": tokenURL, "iat": now.Unix()})
		tok.Header["typ"] = "dpop+jwt"
		tok.Header["jwk"] = map[string]string{"kty": "oct", "k": "c2VjcmV0"}
		s, _ := tok.SignedString([]byte("secret"))
		return s
	}()
	for name, c := range map[string]struct {
		proof string
		want  error
	}{
		"100 KB":          {good + strings.Repeat("A", 100<<10), dpop.ErrMalformed},
		"alg none":        {none, dpop.ErrAlgorithm},
		"HMAC":            {hs, dpop.ErrAlgorithm},
		"two segments":    {parts[0] + "." + parts[1], dpop.ErrMalformed},
		"padded":          {parts[0] + "=." + parts[1] + "." + parts[2], dpop.ErrMalformed},
		"signature of x":  {parts[0] + "." + parts[1] + ".eA", dpop.ErrSignature},
		"empty":           {"", dpop.ErrMalformed},
		"header an array": {jwktest.Segment([]int{1}) + "." + parts[1] + "." + parts[2], dpop.ErrMalformed},
	} {
		if _, err := dpop.Verify(c.proof, check(now)); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}

func mustJWK(t *testing.T) []byte {
	j, _ := keys.PublicJWKOf(proofKey.Public())
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNormalizeURL: htu is compared as RFC 9449 §4.3 says: scheme and host
// without regard to case, default ports dropped, query and fragment
// ignored, the path as it is.
func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://IDS.Example:443/ids/connect/token?x=1#f": "https://ids.example/ids/connect/token",
		"HTTP://ids.example:80":                           "http://ids.example/",
		"https://ids.example:8443/Ids":                    "https://ids.example:8443/Ids",
		"https://[::1]:443/a":                             "https://[::1]/a",
		"https://[::1]:8443/a":                            "https://[::1]:8443/a",
	} {
		if got, err := dpop.NormalizeURL(in); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/relative", "ftp://h/x", "https://user@h/x", "https://", "%zz"} {
		if got, err := dpop.NormalizeURL(bad); err == nil {
			t.Errorf("%s: %q, want an error", bad, got)
		}
	}
}

// FuzzVerify: no input panics, and only the one proof the key signed
// passes. The key and the proof are the same in every fuzzing process
// (Ed25519 from a fixed seed, deterministic signatures, fixed claims), and
// Ed25519 verification refuses a second encoding of a signature, so any
// other input that passed would be a forgery.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	jwk, _ := keys.PublicJWKOf(key.Public())
	nonces := &dpop.Nonces{Key: []byte("fuzz"), Period: time.Minute}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"jti": "fuzz", "htm": "POST", "htu": tokenURL, "iat": now.Unix(), "ath": dpop.TokenHash("tok"), "nonce": nonces.At(now),
	})
	tok.Header["typ"] = "dpop+jwt"
	tok.Header["jwk"] = jwk
	good, err := tok.SignedString(key)
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(good, ".")
	f.Add(good)
	f.Add(parts[0] + "." + parts[1] + ".")
	f.Add(jwktest.Segment(map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": map[string]any{"kty": "RSA", "n": "AQAB", "e": "AQAB"}}) + "." + parts[1] + "." + parts[2])
	f.Add("a.b.c")
	c := dpop.Check{Method: "POST", URL: tokenURL, AccessToken: "tok", Nonces: nonces, Now: now, Window: time.Minute}
	if _, err := dpop.Verify(good, c); err != nil {
		f.Fatalf("the good proof: %v", err)
	}
	f.Fuzz(func(t *testing.T, proof string) {
		p, err := dpop.Verify(proof, c)
		if err == nil && proof != good {
			t.Fatalf("a proof the key never signed passed: %q (%+v)", proof, p)
		}
	})
}

// TestFailuresAreTyped: every refusal but the nonce's is a *Failure whose
// Check names the check in fixed text, read with errors.As: no caller
// reads an error's text to build the wire's.
func TestFailuresAreTyped(t *testing.T) {
	for _, err := range []error{dpop.ErrMalformed, dpop.ErrType, dpop.ErrAlgorithm, dpop.ErrKey, dpop.ErrSignature,
		dpop.ErrClaims, dpop.ErrMethod, dpop.ErrURL, dpop.ErrIssuedAt, dpop.ErrHash} {
		var f *dpop.Failure
		if !errors.As(err, &f) || f.Check == "" || !errors.Is(err, dpop.ErrInvalid) || err.Error() != "invalid DPoP proof: "+f.Check {
			t.Errorf("%v: not a Failure with its check", err)
		}
	}
	var f *dpop.Failure
	if errors.As(dpop.ErrNonce, &f) {
		t.Error("ErrNonce is a Failure: it asks for a retry, it is no failed check")
	}
}
