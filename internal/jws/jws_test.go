package jws_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/jws"
)

// TestParseSignedToken: a token signed with a real key parses into the
// parts that verify it.
func TestParseSignedToken(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	tok := jwktest.Sign(t, k, nil, jwktest.Claims("https://h/ids", "pd_AdminWebApi", time.Hour))
	p, err := jws.Parse(tok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Alg != "ES256" || !p.HasKID || p.KID != k.KID {
		t.Fatalf("alg %q kid %q (%v)", p.Alg, p.KID, p.HasKID)
	}
	if typ, present, err := p.String("typ"); err != nil || !present || typ != "at+jwt" {
		t.Fatalf("typ %q %v %v", typ, present, err)
	}
	sig, err := p.Signature()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(p.SigningInput))
	pub := k.Public().(*ecdsa.PublicKey)
	if len(sig) != 64 || !ecdsa.Verify(pub, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the signature does not verify over SigningInput")
	}
	payload, err := p.Payload()
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil || claims["iss"] != "https://h/ids" {
		t.Fatalf("payload %s (%v)", payload, err)
	}
	if p.SigningInput+"."+strings.Split(tok, ".")[2] != tok {
		t.Fatal("SigningInput is not the token's first two segments")
	}
}

// TestParseRefuses: every malformation is ErrMalformed; the payload and
// the signature are decoded only when asked for.
func TestParseRefuses(t *testing.T) {
	k := jwktest.NewKey(t, "ES256")
	good := strings.Split(jwktest.Sign(t, k, nil, jwktest.Claims("https://h/ids", "pd_AdminWebApi", time.Hour)), ".")
	for name, tok := range map[string]string{
		"two segments":         good[0] + "." + good[1],
		"four segments":        strings.Join(append(good, good[2]), "."),
		"padded header":        good[0] + "=." + good[1] + "." + good[2],
		"standard base64":      standardB64(t, map[string]any{"alg": "ES256", "x": "???"}) + "." + good[1] + "." + good[2],
		"header not an object": jwktest.Segment([]int{1}) + "." + good[1] + "." + good[2],
		"header null":          jwktest.Segment(nil) + "." + good[1] + "." + good[2],
		"alg a number":         jwktest.Segment(map[string]any{"alg": 1}) + "." + good[1] + "." + good[2],
		"kid null":             jwktest.Segment(map[string]any{"alg": "ES256", "kid": nil}) + "." + good[1] + "." + good[2],
		"kid an array":         jwktest.Segment(map[string]any{"alg": "ES256", "kid": []string{"a"}}) + "." + good[1] + "." + good[2],
	} {
		if _, err := jws.Parse(tok); !errors.Is(err, jws.ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	p, err := jws.Parse(good[0] + ".%%%.***")
	if err != nil {
		t.Fatalf("the header alone is parsed: %v", err)
	}
	if _, err := p.Payload(); !errors.Is(err, jws.ErrMalformed) {
		t.Errorf("payload: err = %v", err)
	}
	if _, err := p.Signature(); !errors.Is(err, jws.ErrMalformed) {
		t.Errorf("signature: err = %v", err)
	}
	noKID, err := jws.Parse(jwktest.Segment(map[string]any{"alg": "ES256"}) + "." + good[1] + "." + good[2])
	if err != nil || noKID.HasKID || noKID.KID != "" {
		t.Fatalf("no kid: %+v %v", noKID, err)
	}
}

// standardB64 is v's JSON in standard base64, which differs from
// base64url for this v.
func standardB64(t *testing.T, v any) string {
	url := jwktest.Segment(v)
	std := strings.NewReplacer("-", "+", "_", "/").Replace(url)
	if std == url {
		t.Fatal("the segment is the same in both alphabets: the case proves nothing")
	}
	return std
}

// TestES256AsGolangJWT: an ES256 signature verifies, and a changed one
// does not, as golang-jwt says, over many keys and signatures (r and s
// of every length and top bit).
func TestES256AsGolangJWT(t *testing.T) {
	for i := range 300 {
		k := jwktest.NewKey(t, "ES256")
		tok := jwktest.Sign(t, k, nil, map[string]any{"i": i})
		p, err := jws.Parse(tok)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := p.Signature()
		if err := jws.Verify("ES256", p.SigningInput, sig, k.Public()); err != nil {
			t.Fatalf("a good signature: %v", err)
		}
		bad := append([]byte(nil), sig...)
		bad[i%64] ^= 1 << (i % 8)
		if jws.Verify("ES256", p.SigningInput, bad, k.Public()) == nil || jwt.SigningMethodES256.Verify(p.SigningInput, bad, k.Public()) == nil {
			t.Fatalf("a changed signature verifies")
		}
		if jws.Verify("ES256", p.SigningInput, sig[:63], k.Public()) == nil {
			t.Fatal("a short signature verifies")
		}
	}
	if jws.Verify("ES256", "x.y", make([]byte, 64), jwktest.NewKey(t, "EdDSA").Public()) == nil {
		t.Fatal("an Ed25519 key verifies ES256")
	}
}

// TestHeaderIsReadAsClaims: the header is read by the claims reader: a
// parameter named twice is malformed, a null "kid" is a kid that is no
// string, and a null "crit" is there.
func TestHeaderIsReadAsClaims(t *testing.T) {
	payload := jwktest.Segment(map[string]any{"iss": "x"})
	for _, h := range []string{`{"alg":"ES256","alg":"none"}`, `{"alg":"none","\u0061lg":"ES256"}`, `{"alg":"ES256","kid":null}`} {
		if _, err := jws.Parse(jwktest.Segment(h) + "." + payload + ".c2ln"); !errors.Is(err, jws.ErrMalformed) {
			t.Errorf("%s: %v", h, err)
		}
	}
	p, err := jws.Parse(jwktest.Segment(`{"alg":"ES256","crit":null}`) + "." + payload + ".c2ln")
	if err != nil || !p.Has("crit") {
		t.Fatalf("crit null: %v %v", err, p)
	}
}

// TestKeyFits: each algorithm fits the key type that verifies it, and no
// other: P-256 for ES256 (not P-384), RSA for RS256 and PS256, Ed25519 for
// both names of EdDSA; an unknown alg fits nothing.
func TestKeyFits(t *testing.T) {
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec, rs, ed := jwktest.NewKey(t, "ES256").Public(), jwktest.NewKey(t, "RS256").Public(), jwktest.NewKey(t, "EdDSA").Public()
	for _, c := range []struct {
		key  crypto.PublicKey
		fits []string
	}{
		{ec, []string{"ES256"}},
		{&p384.PublicKey, nil},
		{rs, []string{"RS256", "PS256"}},
		{ed, []string{"EdDSA", "Ed25519"}},
	} {
		for _, alg := range append(slices.Clone(jws.Algorithms), "RS512", "none", "") {
			if got, want := jws.KeyFits(alg, c.key), slices.Contains(c.fits, alg); got != want {
				t.Errorf("%T, %q: %v, want %v", c.key, alg, got, want)
			}
		}
	}
}
