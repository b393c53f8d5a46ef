package keys

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

func TestParsePublicJWKRefusals(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	pub := map[string]any{"kty": "RSA", "n": b(k.N), "e": "AQAB"}
	with := func(extra map[string]any) string {
		m := map[string]any{}
		for name, v := range pub {
			m[name] = v
		}
		for name, v := range extra {
			m[name] = v
		}
		out, _ := json.Marshal(m)
		return string(out)
	}
	if _, _, _, err := ParsePublicJWK([]byte(with(nil))); err != nil {
		t.Fatalf("a public RSA JWK refused: %v", err)
	}
	even := new(big.Int).Add(k.N, big.NewInt(1))
	for name, in := range map[string]string{
		"d":             with(map[string]any{"d": b(k.D)}),
		"p":             with(map[string]any{"p": b(k.Primes[0])}),
		"q":             with(map[string]any{"q": b(k.Primes[1])}),
		"dp":            with(map[string]any{"dp": b(k.Precomputed.Dp)}),
		"dq":            with(map[string]any{"dq": b(k.Precomputed.Dq)}),
		"qi":            with(map[string]any{"qi": b(k.Precomputed.Qinv)}),
		"k (oct)":       `{"kty":"oct","k":"c2VjcmV0"}`,
		"trailing data": with(nil) + ` {"kty":"RSA"}`,
		"an even n":     strings.Replace(with(nil), b(k.N), b(even), 1),
		"use enc":       with(map[string]any{"use": "enc"}),
	} {
		if _, _, _, err := ParsePublicJWK([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFitPublicBoundsRSA(t *testing.T) {
	for bits, ok := range map[int]bool{2048: true, 4096: true, 4104: false} {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		if err := FitPublic("RS256", &k.PublicKey); (err == nil) != ok {
			t.Errorf("%d bits: err = %v, want accepted %v", bits, err, ok)
		}
	}
}

// TestThumbprintOfRFC7638: the thumbprint of RFC 7638 §3.1's example key,
// and, for a key of each type, the hash of the JSON encoding/json writes
// of the required members.
func TestThumbprintOfRFC7638(t *testing.T) {
	n, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	got, err := Thumbprint(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Fatalf("RFC 7638's example: %q %v", got, err)
	}
	for _, alg := range []string{"ES256", "RS256", "EdDSA"} {
		k, err := Generate(alg)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := publicJWK(k.Public())
		var members any = struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y,omitempty"`
		}{j.Crv, j.Kty, j.X, j.Y}
		if j.Kty == "RSA" {
			members = struct {
				E   string `json:"e"`
				Kty string `json:"kty"`
				N   string `json:"n"`
			}{j.E, j.Kty, j.N}
		}
		b, _ := json.Marshal(members)
		sum := sha256.Sum256(b)
		if got, _ := Thumbprint(k.Public()); got != base64.RawURLEncoding.EncodeToString(sum[:]) {
			t.Errorf("%s: %s, want the hash of %s", alg, got, b)
		}
	}
}

// TestParsePublicJWKReadsExactly: a JWK's members are read by the one
// claims reader: a name in another case is not the member, and a member
// named twice refuses the key, which encoding/json had read (the first
// without regard to case, the second the last one).
func TestParsePublicJWKReadsExactly(t *testing.T) {
	k, err := Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := publicJWK(k.Public())
	good := `{"kty":"EC","crv":"P-256","x":"` + j.X + `","y":"` + j.Y + `"}`
	if _, _, _, err := ParsePublicJWK([]byte(good)); err != nil {
		t.Fatalf("the key: %v", err)
	}
	for name, in := range map[string]string{
		"KTY":        `{"KTY":"EC","crv":"P-256","x":"` + j.X + `","y":"` + j.Y + `"}`,
		"Crv":        `{"kty":"EC","Crv":"P-256","x":"` + j.X + `","y":"` + j.Y + `"}`,
		"x twice":    `{"kty":"EC","crv":"P-256","x":"` + j.Y + `","x":"` + j.X + `","y":"` + j.Y + `"}`,
		"kty twice":  `{"kty":"oct","kty":"EC","crv":"P-256","x":"` + j.X + `","y":"` + j.Y + `"}`,
		"D, private": `{"kty":"EC","crv":"P-256","x":"` + j.X + `","y":"` + j.Y + `","d":"AAAA","D":null}`,
	} {
		if _, _, _, err := ParsePublicJWK([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
