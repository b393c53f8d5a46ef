package issuer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/cryptobyte"
	"golang.org/x/crypto/cryptobyte/asn1"

	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/internal/oauthwire"
)

// sign appends to b an access token for cl with the granted scopes and
// audience (RFC 9068): the header {"alg","kid","typ":"at+jwt"} and the
// claims iss, sub, client_id, aud, scope, iat, nbf, exp and jti, in that
// order, each written as encoding/json writes it (so the bytes are those
// golang-jwt made from the same header map and claims struct), without
// reflection. ES256 signs with ecdsa.SignASN1: a hedged, randomized
// nonce.
func (st *state) sign(b []byte, cl *client, granted, aud []string, now time.Time) ([]byte, error) {
	return st.signFrom(b, st.tokenStart(cl, granted, aud, now), cnf{})
}

// signFrom appends to b the token that t begins: t's claims, a new jti,
// for a bound token the claim cnf with the members of bind ({"jkt": ...}
// for a DPoP key, RFC 9449 §6.1; {"x5t#S256": ...} for a client
// certificate, RFC 8705 §3.1), and the signature.
func (st *state) signFrom(b []byte, t *tokenStart, bind cnf) ([]byte, error) {
	start := len(b)
	b = append(b, t.encoded...)
	var buf [128]byte
	tail := append(buf[:0], t.rest...)
	if st.identityServer {
		tail = appendJTIHex(tail)
	} else {
		tail = appendJTI(tail)
	}
	switch {
	case bind.JKT != "":
		tail = append(tail, `","cnf":{"jkt":`...)
		tail = oauthwire.AppendString(tail, bind.JKT)
		tail = append(tail, '}')
	case bind.X5T != "":
		tail = append(tail, `","cnf":{"x5t#S256":`...)
		tail = oauthwire.AppendString(tail, bind.X5T)
		tail = append(tail, '}')
	default:
		tail = append(tail, '"')
	}
	tail = append(tail, '}')
	b = base64.RawURLEncoding.AppendEncode(b, tail)
	var raw [64]byte
	sig, err := st.signature(raw[:0], b[start:], &t.signingStart)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	b = append(b, '.')
	return base64.RawURLEncoding.AppendEncode(b, sig), nil
}

// signingStart is the start of JWS signing inputs, made once for many
// tokens: the encoded header, a dot and the base64url of the claims' first
// bytes, cut at a multiple of three bytes, so that what follows encodes on
// its own and the two encodings joined are the encoding of the whole.
type signingStart struct {
	encoded []byte // header "." base64url(claims[:n]), n a multiple of 3
	rest    []byte // claims[n:]: 0 to 2 bytes, encoded with what follows
	sha256  []byte // ES256: the SHA-256 state after encoded (MarshalBinary)
}

// extend returns s followed by more bytes of the claims.
func (s *signingStart) extend(more []byte) signingStart {
	claims := append(slices.Clip(s.rest), more...)
	n := len(claims) - len(claims)%3
	out := signingStart{rest: claims[n:]}
	out.encoded = base64.RawURLEncoding.AppendEncode(slices.Clip(s.encoded), claims[:n])
	if s.sha256 != nil {
		out.sha256 = sha256After(s.sha256, out.encoded[len(s.encoded):])
	}
	return out
}

// sha256After returns the SHA-256 state (MarshalBinary's) after state,
// none for a new hash, and more.
func sha256After(state, more []byte) []byte {
	h := sha256.New()
	if state != nil {
		_ = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state) // MarshalBinary's: never fails
	}
	h.Write(more)
	after, _ := h.(encoding.BinaryMarshaler).MarshalBinary() // never fails
	return after
}

// tokenPrefix is how every token of one client in one span of the key
// schedule begins: the header and the claims up to the scope's value
// ({"iss":…,"sub":…,"client_id":…,"aud":…,"scope":), fixed for the
// client. It keeps the last tokenStart made from it.
type tokenPrefix struct {
	signingStart
	signer *keys.Key // the key whose header it begins with
	last   atomic.Pointer[tokenStart]
}

// tokenStart is how every token of one client for one grant (scopes and
// audience) in one second begins: the claims up to the jti's value, and
// the end of the success answer after the token. Tokens asked for in the
// same second share it, and make only their jti and signature.
type tokenStart struct {
	signingStart
	unix      int64    // iat and nbf
	granted   []string // never written to
	answerEnd []byte   // ","token_type":"Bearer","expires_in":…,"scope":…}\n
}

// newPrefix makes the prefix of cl's tokens for the audience aud.
func (st *state) newPrefix(cl *client, aud []string) *tokenPrefix {
	header := signingStart{encoded: append([]byte(st.header), '.')}
	if _, ok := st.signer.Private.(*ecdsa.PrivateKey); ok {
		header.sha256 = sha256After(nil, header.encoded)
	}
	claims := []byte(`{"iss":`)
	claims = oauthwire.AppendString(claims, st.issuer)
	if !st.identityServer { // IdentityServer writes no sub without a subject
		claims = append(claims, `,"sub":`...)
		claims = oauthwire.AppendString(claims, cl.id)
	}
	claims = append(claims, `,"client_id":`...)
	claims = oauthwire.AppendString(claims, cl.id)
	claims = appendEpoch(claims, cl)
	claims = append(claims, cl.claims...)
	if len(aud) > 0 || !st.identityServer { // IdentityServer writes no aud when it has none
		claims = append(claims, `,"aud":`...)
		claims = appendStrings(claims, aud)
	}
	claims = append(claims, `,"scope":`...)
	return &tokenPrefix{signingStart: header.extend(claims)}
}

// prefixOf returns the prefix of cl's tokens in st's span, for the
// client's own audience: made at its first token of the span and kept in
// cl, which each roster compiles anew, and made again when another key
// signs (the schedule moved on, a reload).
func (st *state) prefixOf(cl *client) *tokenPrefix {
	if p := cl.prefix.Load(); p != nil && p.signer == st.signer {
		return p
	}
	p := st.newPrefix(cl, cl.audience)
	p.signer = st.signer
	cl.prefix.Store(p)
	return p
}

// tokenStart returns how cl's token for granted and aud at now begins:
// the last one made for the client's own audience when it is for the
// same second and scopes, else a new one (kept for the next token when
// for the client's own audience).
func (st *state) tokenStart(cl *client, granted, aud []string, now time.Time) *tokenStart {
	unix := now.Unix()
	own := slices.Equal(aud, cl.audience) && (aud == nil) == (cl.audience == nil)
	var p *tokenPrefix
	if own {
		p = st.prefixOf(cl)
	}
	if !own {
		p = st.newPrefix(cl, aud) // for resources asked for: made each time
	} else if t := p.last.Load(); t != nil && t.unix == unix && slices.Equal(t.granted, granted) && (t.granted == nil) == (granted == nil) {
		return t
	}
	var claims []byte
	if st.scopeArray {
		claims = appendStrings(claims, granted)
	} else {
		claims = appendJoined(claims, granted)
	}
	claims = append(claims, `,"iat":`...)
	claims = strconv.AppendInt(claims, unix, 10)
	claims = append(claims, `,"nbf":`...)
	claims = strconv.AppendInt(claims, unix, 10)
	claims = append(claims, `,"exp":`...)
	claims = strconv.AppendInt(claims, now.Add(cl.lifetime).Unix(), 10)
	claims = append(claims, `,"jti":"`...)
	t := &tokenStart{signingStart: p.extend(claims), unix: unix, granted: granted}
	t.answerEnd = append(t.answerEnd, `","token_type":"Bearer","expires_in":`...)
	t.answerEnd = strconv.AppendInt(t.answerEnd, int64(cl.lifetime/time.Second), 10)
	t.answerEnd = append(t.answerEnd, `,"scope":`...)
	t.answerEnd = appendJoined(t.answerEnd, granted)
	t.answerEnd = append(t.answerEnd, "}\n"...)
	if own {
		p.last.Store(t)
	}
	return t
}

// signature signs the JWS signing input, which begins with s.encoded,
// with the signing key, appending to b what it can.
func (st *state) signature(b, input []byte, s *signingStart) ([]byte, error) {
	switch k := st.signer.Private.(type) {
	case *ecdsa.PrivateKey:
		hs := sha256s.Get().(*sha256State)
		defer sha256s.Put(hs)
		if err := hs.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(s.sha256); err != nil {
			return nil, err
		}
		hs.h.Write(input[len(s.encoded):])
		der, err := ecdsa.SignASN1(rand.Reader, k, hs.h.Sum(hs.sum[:0])) // hedged nonce
		if err != nil {
			return nil, err
		}
		return appendRawES256(b, der)
	case ed25519.PrivateKey:
		return append(b, ed25519.Sign(k, input)...), nil
	default: // RSA: its signature is the cost, not what surrounds it
		return st.method.Sign(string(input), k)
	}
}

// sha256State is a SHA-256 state reused from one token to the next, with
// room for its sum: hash.Hash's methods take their arguments through an
// interface, which a stack array would escape from.
type sha256State struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

var sha256s = sync.Pool{New: func() any { return &sha256State{h: sha256.New()} }}

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

// appendJTIHex appends a token ID as IdentityServer makes one: 16 random
// bytes as 32 upper-case hex digits.
func appendJTIHex(b []byte) []byte {
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	const digits = "0123456789ABCDEF"
	for _, c := range r {
		b = append(b, digits[c>>4], digits[c&15])
	}
	return b
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
