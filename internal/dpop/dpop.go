// Package dpop checks DPoP proofs (RFC 9449): the JWTs by which a client
// proves, with each request, that it holds the private key its access
// token is bound to. The issuer checks them at the token endpoint, the
// middleware at the APIs; remembering each proof's jti, to refuse a replay,
// is the caller's.
package dpop

import (
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/keys"
)

// Algs are the proof algorithms accepted, by the names a proof's "alg"
// may give them: the algorithm table's (jws.Algorithms), asymmetric only,
// as RFC 9449 §4.2 requires, in the order discovery lists them. It is the
// one list: Verify accepts these names and no other, and every list a
// server advertises (discovery, resource metadata, a challenge's algs) is
// this one. Callers must not modify it.
var Algs = jws.Algorithms

// MaxProofLength bounds a proof: longer ones are refused before they are
// decoded. A proof with a 4096-bit RSA key is about 1.5 KiB.
const MaxProofLength = 8 << 10

// maxJTILength bounds a proof's jti.
const maxJTILength = 256

// Why a proof is refused. Each is an ErrInvalid, except ErrNonce, which
// asks the client to retry with the nonce it is given (use_dpop_nonce).
var (
	ErrInvalid = errors.New("invalid DPoP proof")
	ErrNonce   = errors.New("DPoP proof lacks the server's nonce")

	ErrMalformed = invalid("not a JWT of the right form")
	ErrType      = invalid("typ is not dpop+jwt") // no quote: error_description may hold none (RFC 6749 §5.2)
	ErrAlgorithm = invalid("alg is not an accepted asymmetric algorithm")
	ErrKey       = invalid("jwk is missing, private, or not a usable public key for alg")
	ErrSignature = invalid("signature invalid")
	ErrClaims    = invalid("jti, htm, htu or iat missing or of the wrong type")
	ErrMethod    = invalid("htm is not the request's method")
	ErrURL       = invalid("htu is not the request's URL")
	ErrIssuedAt  = invalid("iat is outside the accepted window")
	ErrHash      = invalid("ath is not the hash of the access token")
)

func invalid(check string) error { return &Failure{Check: check} }

// Failure is an ErrInvalid with the check the proof failed: every error
// Verify returns but ErrNonce is one. Check is fixed text that names the
// check and nothing of the proof, fit for an error_description; callers
// read it with errors.As, never from Error's text.
type Failure struct{ Check string }

func (f *Failure) Error() string        { return "invalid DPoP proof: " + f.Check }
func (f *Failure) Is(target error) bool { return target == ErrInvalid }

// Check is what a proof must match.
type Check struct {
	Method string // the request's method: htm
	URL    string // the request's URL as the client addressed it: htu, compared by NormalizeURL
	// AliasURL, when set, is another URL of the same endpoint, which htu
	// may name instead (an issuer's mutual TLS alias, RFC 8705 §5).
	AliasURL string
	// AccessToken, when set, must be what ath hashes (RFC 9449 §4.3, item
	// 12: at a resource server).
	AccessToken string
	// Nonces, when set, are the server's: the proof's nonce must be the
	// current one or the one before; a proof without it, or with another,
	// fails with ErrNonce.
	Nonces *Nonces
	Now    time.Time
	// Window is how old a proof may be; Leeway how far in the future
	// its iat may be (the client's clock ahead).
	Window, Leeway time.Duration
	// Keys, when set, remembers the keys of the proofs that verify, so
	// that a client's next proofs cost no reading of their key.
	Keys *Keys
}

// Proof is a checked proof.
type Proof struct {
	JKT      string           // RFC 7638 thumbprint of its key: what cnf.jkt binds
	ID       string           // jti, to remember until Expires
	Expires  time.Time        // after which the proof is too old to be accepted
	Key      crypto.PublicKey // the public key
	IssuedAt time.Time
}

// Verify checks proof against c (RFC 9449 §4.3), everything but the
// replay of its jti, and returns it.
func Verify(proof string, c Check) (*Proof, error) {
	if len(proof) > MaxProofLength {
		return nil, ErrMalformed
	}
	t, err := jws.Parse(proof)
	if err != nil {
		return nil, ErrMalformed
	}
	if typ, _, err := t.String("typ"); err != nil || typ != "dpop+jwt" {
		return nil, ErrType
	}
	if jws.Method(t.Alg) == nil || t.Has("crit") {
		return nil, ErrAlgorithm
	}
	rawJWK, ok := t.Header.Raw("jwk")
	if !ok {
		return nil, ErrKey
	}
	pub, jkt, known, err := c.Keys.read(rawJWK)
	if err != nil || keys.FitPublic(t.Alg, pub) != nil {
		return nil, ErrKey
	}
	switch t.Verify(pub) {
	case nil:
	case jws.ErrMalformed:
		return nil, ErrMalformed
	default:
		return nil, ErrSignature
	}
	payload, err := t.Payload()
	if err != nil {
		return nil, ErrMalformed
	}
	claims, err := readClaims(payload)
	if err != nil {
		return nil, err
	}
	if claims.htm != c.Method {
		return nil, ErrMethod
	}
	if claims.htu != c.URL && (c.AliasURL == "" || claims.htu != c.AliasURL) { // the same string is the same URL: no parsing
		got, err := NormalizeURL(claims.htu)
		if err != nil || (got != mustNormalize(c.URL) && (c.AliasURL == "" || got != mustNormalize(c.AliasURL))) {
			return nil, ErrURL
		}
	}
	if claims.iat.Before(c.Now.Add(-c.Window)) || claims.iat.After(c.Now.Add(c.Leeway)) {
		return nil, ErrIssuedAt
	}
	if c.AccessToken != "" && (!claims.hasATH || !hashes(claims.ath, c.AccessToken)) {
		return nil, ErrHash
	}
	if c.Nonces != nil && (!claims.hasNonce || !c.Nonces.accepts(claims.nonce, c.Now)) {
		return nil, ErrNonce
	}
	if !known {
		c.Keys.remember(rawJWK, pub, jkt)
	}
	return &Proof{JKT: jkt, ID: claims.jti, Expires: claims.iat.Add(c.Window + c.Leeway), Key: pub, IssuedAt: claims.iat}, nil
}

// proofClaims are the claims of a proof that Verify reads.
type proofClaims struct {
	jti, htm, htu    string
	iat              time.Time
	ath, nonce       string
	hasATH, hasNonce bool
}

// readClaims reads a proof's claims with the one claims reader
// (jws.ReadClaims): names matched exactly ("HTM" is not "htm"), a name
// given twice refuses the proof, null is absent. jti, htm, htu and iat
// are required; a jti, htm, htu, ath or nonce that is not a string, an
// iat that is not a number, or a payload that is no such object fails
// with ErrClaims, and an iat out of the years 1 to 9999 with ErrIssuedAt.
func readClaims(payload []byte) (proofClaims, error) {
	var p proofClaims
	m, err := jws.ReadClaims(payload)
	if err != nil {
		return p, ErrClaims
	}
	var ok [3]bool
	var errs [5]error
	p.jti, ok[0], errs[0] = m.String("jti")
	p.htm, ok[1], errs[1] = m.String("htm")
	p.htu, ok[2], errs[2] = m.String("htu")
	p.ath, p.hasATH, errs[3] = m.String("ath")
	p.nonce, p.hasNonce, errs[4] = m.String("nonce")
	iat, hasIAT := m.Raw("iat")
	if !ok[0] || !ok[1] || !ok[2] || !hasIAT || p.jti == "" || len(p.jti) > maxJTILength ||
		errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] != nil || errs[4] != nil {
		return p, ErrClaims
	}
	if c := iat[0]; c != '-' && (c < '0' || c > '9') {
		return p, ErrClaims // not a number
	}
	if p.iat, err = jws.NumericDate(iat); err != nil {
		return p, ErrIssuedAt
	}
	return p, nil
}

// Nonces make a server's DPoP nonces (RFC 9449 §8, §9) with no state:
// the nonce of a period is the HMAC of the period's number under Key, so
// that servers given the same key (an issuer's replicas, which derive it
// from their signing key) give and take the same nonces, and nobody
// without the key can make one ahead of its time.
type Nonces struct {
	Key    []byte
	Period time.Duration // a second or more
}

// At returns the nonce of the period now falls in: the one to send.
func (n *Nonces) At(now time.Time) string { return n.of(now, 0) }

// accepts reports whether nonce is the current period's or the one
// before's: a client that fetched it just before the turn is not sent
// back for another.
func (n *Nonces) accepts(nonce string, now time.Time) bool {
	return hmac.Equal([]byte(nonce), []byte(n.of(now, 0))) || hmac.Equal([]byte(nonce), []byte(n.of(now, -1)))
}

// of is the nonce of the period now falls in, moved by offset periods.
func (n *Nonces) of(now time.Time, offset int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(now.Unix()/max(1, int64(n.Period/time.Second))+offset))
	m := hmac.New(sha256.New, n.Key)
	m.Write(msg[:])
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// TokenHash is a proof's ath for an access token: the base64url SHA-256
// of its ASCII.
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// hashes reports whether ath is TokenHash(token), without making the
// string: this is on the path of every request with a proof.
func hashes(ath, token string) bool {
	h := sha256.New()
	_, _ = io.WriteString(h, token)
	var sum [sha256.Size]byte
	var b64 [43]byte // base64url of 32 bytes, unpadded
	base64.RawURLEncoding.Encode(b64[:], h.Sum(sum[:0]))
	return ath == string(b64[:])
}

// NormalizeURL returns u as htu is compared (RFC 9449 §4.3, RFC 3986
// §6.2.2 and §6.2.3): scheme and host in lower case, the scheme's default
// port dropped, an empty path as "/", without query or fragment. u must
// be an absolute http or https URL.
func NormalizeURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil { // Parse lowers the scheme
		return "", errors.New("dpop: htu is not an absolute http(s) URL")
	}
	scheme := p.Scheme
	host := strings.ToLower(p.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port := p.Port(); port != "" && !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		host += ":" + port
	}
	path := p.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, nil
}

// mustNormalize is NormalizeURL for the server's own URL, which it built:
// one that does not parse matches nothing.
func mustNormalize(u string) string {
	n, err := NormalizeURL(u)
	if err != nil {
		return "\x00" // no htu normalizes to this
	}
	return n
}
