package issuer

import (
	"crypto/rsa"
	"testing"
)

// An RSA check costs what its key's size makes it cost, and nothing when
// the signature is not of that size. So the padding key is chosen by the
// signature's size among the sizes clients have, and a real key of
// another size is replaced by that padding key: an unknown client, a
// client with a small key and one with a large key do a check of the same
// size for the same signature.
func TestRSAPaddingFollowsTheSignatureSize(t *testing.T) {
	dummies, bySize, err := dummyKeys([]int{2048, 4096, 4096, 3072})
	if err != nil {
		t.Fatal(err)
	}
	st := &state{roster: &roster{tally: tally{dummies: dummies, rsaDummies: bySize}}}
	for sigLen, want := range map[int]int{256: 256, 384: 384, 512: 512, 300: 512, 0: 512} {
		got := st.dummyFor(&assertion{alg: "RS256", sig: make([]byte, sigLen)}).(*rsa.PublicKey)
		if got.Size() != want {
			t.Errorf("a %d-byte RS256 signature is padded with a %d-byte key, want %d", sigLen, got.Size(), want)
		}
	}
	for size, k := range bySize {
		if k.Size() != size || k.N.Bit(0) != 1 {
			t.Errorf("padding key for %d bytes: %d bytes, odd %v", size, k.Size(), k.N.Bit(0) == 1)
		}
	}
	if len(bySize) != 3 {
		t.Errorf("%d padding sizes for 2048, 3072 and 4096 bits, want 3", len(bySize))
	}
}
