package dpop

import (
	"crypto"
	"hash/maphash"
	"sync/atomic"

	"github.com/idsauth/idsauth/internal/keys"
)

// Keys remembers the keys of proofs that verified, by the JSON of their
// "jwk", so that a client, whose proofs carry the same key each time,
// has its key read and hashed (RFC 7638) once and not at every request.
// It holds at most keySlots keys of at most maxKnownJWK bytes each: about
// 400 KiB, allocated as keys come. A key that another takes the slot of
// is read again when it comes back; only a key whose proof verified takes
// one. Make one with NewKeys; it is safe for concurrent use.
type Keys struct {
	seed  maphash.Seed
	slots [keySlots]atomic.Pointer[knownKey]
}

const (
	keySlots    = 256
	maxKnownJWK = 1 << 10 // an RSA key of 4096 bits is about 750 bytes
)

type knownKey struct {
	jwk string
	pub crypto.PublicKey
	jkt string
}

// NewKeys returns an empty Keys.
func NewKeys() *Keys { return &Keys{seed: maphash.MakeSeed()} }

func (k *Keys) slot(jwk []byte) *atomic.Pointer[knownKey] {
	return &k.slots[maphash.Bytes(k.seed, jwk)%keySlots]
}

// read returns the key of jwk and its thumbprint, from the slot of jwk
// when it holds that very JSON, else read and hashed.
func (k *Keys) read(jwk []byte) (pub crypto.PublicKey, jkt string, known bool, err error) {
	if k != nil {
		if e := k.slot(jwk).Load(); e != nil && e.jwk == string(jwk) {
			return e.pub, e.jkt, true, nil
		}
	}
	if pub, _, _, err = keys.ParsePublicJWK(jwk); err != nil {
		return nil, "", false, err
	}
	if jkt, err = keys.Thumbprint(pub); err != nil {
		return nil, "", false, err
	}
	return pub, jkt, false, nil
}

// remember keeps the key of jwk, whose proof verified.
func (k *Keys) remember(jwk []byte, pub crypto.PublicKey, jkt string) {
	if k == nil || len(jwk) > maxKnownJWK {
		return
	}
	k.slot(jwk).Store(&knownKey{jwk: string(jwk), pub: pub, jkt: jkt})
}
