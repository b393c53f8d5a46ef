package keys

import (
	"crypto/rand"
	"crypto/rsa"
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
