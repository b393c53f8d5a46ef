package jws

import (
	"bytes"
	"encoding/asn1"
	"math/big"
	"testing"
)

// TestASN1Signature: r and s are written as encoding/asn1 writes the
// ECDSA-Sig-Value of their numbers: leading zeros dropped, a zero byte
// before a high bit, zero itself as one zero byte.
func TestASN1Signature(t *testing.T) {
	word := func(b ...byte) []byte { return append(make([]byte, 32-len(b)), b...) }
	high := bytes.Repeat([]byte{0xff}, 32)
	for _, c := range [][2][]byte{
		{word(1), word(2)},
		{high, high},
		{word(0x80), word(0x7f)},
		{word(), word(5)},
		{append([]byte{0, 0, 0x80}, make([]byte, 29)...), high},
	} {
		want, err := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).SetBytes(c[0]), new(big.Int).SetBytes(c[1])})
		if err != nil {
			t.Fatal(err)
		}
		var buf [72]byte
		if got := asn1Signature(buf[:0], c[0], c[1]); !bytes.Equal(got, want) {
			t.Errorf("%x %x: %x, want %x", c[0], c[1], got, want)
		}
	}
}
