package issuer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/oauthwire"
)

// sign makes an access token for cl with the granted scopes and audience
// (RFC 9068): the header {"alg","kid","typ":"at+jwt"} and the claims iss,
// sub, client_id, aud, scope, iat, nbf, exp and jti, in that order, each
// written as encoding/json writes it (so the bytes are those golang-jwt
// made from the same header map and claims struct), without reflection.
// ES256 signs with ecdsa.SignASN1: a hedged, randomized nonce.
func (st *state) sign(cl *client, granted, aud []string, now time.Time) (string, error) {
	// The token is made on the stack when it fits, and copied once into
	// its string.
	var buf [1024]byte
	var scratch [640]byte // the claims' JSON
	enc := base64.RawURLEncoding
	tok := append(buf[:0], st.header...)
	tok = append(tok, '.')
	tok = enc.AppendEncode(tok, st.appendClaims(scratch[:0], cl, granted, aud, now))
	var raw [64]byte
	sig, err := st.signature(raw[:0], tok)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	tok = append(tok, '.')
	tok = enc.AppendEncode(tok, sig)
	return string(tok), nil
}

// signature signs the JWS signing input with the signing key, appending
// to b what it can.
func (st *state) signature(b, input []byte) ([]byte, error) {
	switch p := st.signer.Private.(type) {
	case *ecdsa.PrivateKey:
		digest := sha256.Sum256(input)
		der, err := ecdsa.SignASN1(rand.Reader, p, digest[:]) // hedged nonce
		if err != nil {
			return nil, err
		}
		return appendRawES256(b, der)
	case ed25519.PrivateKey:
		return append(b, ed25519.Sign(p, input)...), nil
	default: // RSA: its signature is the cost, not what surrounds it
		return st.method.Sign(string(input), p)
	}
}

// appendClaims appends the claims' JSON to b.
func (st *state) appendClaims(b []byte, cl *client, granted, aud []string, now time.Time) []byte {
	b = append(b, `{"iss":`...)
	b = oauthwire.AppendString(b, st.issuer)
	b = append(b, `,"sub":`...)
	b = oauthwire.AppendString(b, cl.id)
	b = append(b, `,"client_id":`...)
	b = oauthwire.AppendString(b, cl.id)
	b = append(b, `,"aud":`...)
	b = appendStrings(b, aud)
	b = append(b, `,"scope":`...)
	if st.scopeArray {
		b = appendStrings(b, granted)
	} else {
		b = appendJoined(b, granted)
	}
	b = append(b, `,"iat":`...)
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, `,"nbf":`...)
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, `,"exp":`...)
	b = strconv.AppendInt(b, now.Add(cl.lifetime).Unix(), 10)
	b = append(b, `,"jti":"`...)
	b = appendJTI(b)
	return append(b, `"}`...)
}

// appendStrings appends a JSON array of strings, or null for a nil slice
// as encoding/json writes it.
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = oauthwire.AppendString(b, s)
	}
	return append(b, ']')
}

// appendJoined appends ss joined by spaces as one JSON string.
func appendJoined(b []byte, ss []string) []byte {
	if len(ss) == 1 {
		return oauthwire.AppendString(b, ss[0])
	}
	var n int
	for _, s := range ss {
		n += len(s) + 1
	}
	joined := make([]byte, 0, n)
	for i, s := range ss {
		if i > 0 {
			joined = append(joined, ' ')
		}
		joined = append(joined, s...)
	}
	return oauthwire.AppendString(b, string(joined))
}

// appendJTI appends a token ID as crypto/rand.Text makes one: 26
// characters of the base32 alphabet, 130 random bits. The random bytes
// are read from crypto/rand a block at a time, each byte used once.
func appendJTI(b []byte) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	const n = 26
	r := randomBlocks.Get().(*randomBlock)
	if r.used+n > len(r.b) {
		_, _ = rand.Read(r.b[:]) // never fails (crypto/rand)
		r.used = 0
	}
	for _, c := range r.b[r.used : r.used+n] {
		b = append(b, alphabet[c%32])
	}
	clear(r.b[r.used : r.used+n])
	r.used += n
	randomBlocks.Put(r)
	return b
}

// randomBlock is random bytes from crypto/rand, used from used on.
type randomBlock struct {
	b    [26 * 40]byte
	used int
}

var randomBlocks = sync.Pool{New: func() any { return &randomBlock{used: 26 * 40} }}

// appendRawES256 appends the ASN.1 DER signature der (a SEQUENCE of the
// integers r and s) as the 64 bytes r || s of a JWS ES256 signature (RFC
// 7518 §3.4).
func appendRawES256(b, der []byte) ([]byte, error) {
	var r, s []byte
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	// Into a []byte, ReadASN1Integer gives the big-endian magnitude of a
	// non-negative integer, without leading zeros.
	if !in.ReadASN1(&seq, asn1.SEQUENCE) || !in.Empty() ||
		!seq.ReadASN1Integer(&r) || !seq.ReadASN1Integer(&s) || !seq.Empty() ||
		len(r) > 32 || len(s) > 32 {
		return nil, errors.New("malformed ECDSA signature")
	}
	b = append(b, make([]byte, 32-len(r))...)
	b = append(b, r...)
	b = append(b, make([]byte, 32-len(s))...)
	return append(b, s...), nil
}

// encodedHeader returns the base64url JWS header of k's tokens. The
// issuer makes it once per span of its key schedule (keySet.header).
func encodedHeader(k *keys.Key) string {
	b := []byte(`{"alg":`)
	b = oauthwire.AppendString(b, k.Alg)
	b = append(b, `,"kid":`...)
	b = oauthwire.AppendString(b, k.KID)
	b = append(b, `,"typ":"at+jwt"}`...)
	return base64.RawURLEncoding.EncodeToString(b)
}
