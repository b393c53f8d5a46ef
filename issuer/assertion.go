package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/jws"
	"github.com/idsauth/idsauth/internal/keys"
)

// assertionTypeJWT is the client_assertion_type of a private_key_jwt
// token request ([RFC 7523] §2.2).
//
// [RFC 7523]: https://www.rfc-editor.org/rfc/rfc7523
const assertionTypeJWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLeeway is the clock skew allowed for an assertion's exp, nbf
// and iat: the validator's default (CONTRACT.md §1).
const assertionLeeway = 30 * time.Second

// assertionMethods are the algorithms an assertion may be signed with,
// by every name its header may give them: the algorithm table's
// (jws.Algorithms; "Ed25519", RFC 9864's name, is EdDSA). None and HS*
// are never among them. A map, so that a test may count the checks.
var assertionMethods = func() map[string]jwt.SigningMethod {
	m := make(map[string]jwt.SigningMethod, len(jws.Algorithms))
	for _, alg := range jws.Algorithms {
		m[alg] = jws.Method(alg)
	}
	return m
}()

// clientKey is a checked public key of a client, for one algorithm.
type clientKey struct {
	alg string
	pub crypto.PublicKey
}

// check checks a client key and returns it, or nil for a file key, which
// compile reads.
func (kc ClientKeyConfig) check() (*clientKey, error) {
	set := 0
	for _, b := range []bool{kc.File != "", len(kc.JWK) > 0, kc.Key != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("set exactly one of file, jwk and a key in code")
	}
	if kc.Alg != "" && !slices.Contains(keys.AssertionAlgs, kc.Alg) {
		return nil, fmt.Errorf("alg: want one of %v, got %q", keys.AssertionAlgs, kc.Alg)
	}
	switch {
	case kc.File != "":
		return nil, nil
	case kc.Key != nil:
		return kc.fit(kc.Key, "")
	}
	pub, _, jwkAlg, err := keys.ParsePublicJWK(kc.JWK)
	if err != nil {
		return nil, fmt.Errorf("jwk: %w", err)
	}
	return kc.fit(pub, jwkAlg)
}

// fit returns pub with its algorithm: Alg, else the JWK's, else the
// key type's, checking that it fits.
func (kc ClientKeyConfig) fit(pub crypto.PublicKey, jwkAlg string) (*clientKey, error) {
	alg := kc.Alg
	if alg == "" {
		alg = jwkAlg
	}
	if alg == "" {
		alg = keys.AlgForPublic(pub)
	}
	if jwkAlg != "" && jwkAlg != alg {
		return nil, fmt.Errorf("alg %q differs from the JWK's %q", alg, jwkAlg)
	}
	if !slices.Contains(keys.AssertionAlgs, alg) {
		return nil, fmt.Errorf("alg: want one of %v, got %q", keys.AssertionAlgs, alg)
	}
	if err := keys.FitPublic(alg, pub); err != nil {
		return nil, err
	}
	return &clientKey{alg: alg, pub: pub}, nil
}

// load reads a file key, relative to dir.
func (kc ClientKeyConfig) load(dir string) (*clientKey, error) {
	path := kc.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	pub, err := keys.ParsePublicPEM(data)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, err)
	}
	return kc.fit(pub, "")
}

// loadClientKeys reads the client key files of cfg into st's clients
// and API resources.
func (st *state) loadClientKeys(cfg *Config) error {
	load := func(f string, cl *client, kcs []ClientKeyConfig) error {
		for j, kc := range kcs {
			if kc.File == "" {
				continue
			}
			k, err := kc.load(cfg.Dir)
			if err != nil {
				return causeErr(fmt.Sprintf("%s.publicKeys[%d]", f, j), err)
			}
			cl.keys = append(cl.keys, *k)
		}
		return nil
	}
	for i, cc := range cfg.Clients {
		if err := load(fmt.Sprintf("clients[%d] (%q)", i, cc.ClientID), st.clients[cc.ClientID], cc.PublicKeys); err != nil {
			return err
		}
	}
	for i, ac := range cfg.APIResources {
		if err := load(fmt.Sprintf("apiResources[%d] (%q)", i, ac.Name), st.apis[ac.Name].client, ac.PublicKeys); err != nil {
			return err
		}
	}
	return nil
}

// padKeys prepares what every assertion check needs, once the file's and
// the registered clients are known: how many signature checks each
// algorithm takes (the most keys of that algorithm any client has), and
// keys that pad the checks of clients with fewer keys, and of unknown
// clients, to that many.
func (st *state) padKeys() error {
	st.keyPad = map[string]int{}
	rsaBits := []int{keys.MinRSABits}
	all := slices.Collect(maps.Values(st.clients))
	for _, api := range st.apis {
		all = append(all, api.client)
	}
	for _, cl := range all {
		per := map[string]int{}
		for _, k := range cl.keys {
			per[k.alg]++
			if p, ok := k.pub.(*rsa.PublicKey); ok {
				rsaBits = append(rsaBits, p.N.BitLen())
			}
		}
		for alg, n := range per {
			st.keyPad[alg] = max(st.keyPad[alg], n)
		}
	}
	var err error
	st.dummies, st.rsaDummies, err = dummyKeys(rsaBits)
	return err
}

// dummyKeys returns, for each algorithm, a public key no assertion
// verifies with, so that padding checks cost what a real key's check
// costs; and, for RSA, one such key for each modulus size of rsaBits, by
// its size in bytes: an RSA check costs what the size of its key makes it
// cost, and none at all when the signature is not of that size.
func dummyKeys(rsaBits []int) (map[string]crypto.PublicKey, map[int]*rsa.PublicKey, error) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ed, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	bySize := map[int]*rsa.PublicKey{}
	var largest *rsa.PublicKey
	for _, bits := range rsaBits {
		if r := bySize[(bits+7)/8]; r != nil && r.N.BitLen() >= bits {
			continue
		}
		// An odd number of bits: a check costs what a key of its size costs.
		n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
		if err != nil {
			return nil, nil, err
		}
		n.SetBit(n, bits-1, 1).SetBit(n, 0, 1)
		r := &rsa.PublicKey{N: n, E: 65537}
		bySize[r.Size()] = r
		if largest == nil || r.Size() > largest.Size() {
			largest = r
		}
	}
	return map[string]crypto.PublicKey{"ES256": &ec.PublicKey, "RS256": largest, "PS256": largest, "EdDSA": ed}, bySize, nil
}

// dummyFor returns the padding key for a's checks: for RSA, the one of
// the signature's size when a client has a key of that size (so a padded
// check costs what a real one costs), else any (all fail at once on the
// length, as every real key does).
func (st *state) dummyFor(a *assertion) crypto.PublicKey {
	if a.alg == "RS256" || a.alg == "PS256" {
		if r, ok := st.rsaDummies[len(a.sig)]; ok {
			return r
		}
	}
	return st.dummies[a.alg]
}

// assertion is a client assertion split and decoded, not yet trusted.
type assertion struct {
	alg    string // normalised: Ed25519 is EdDSA
	signed string // header.payload, what the signature covers
	sig    []byte
	claims jws.Claims
	sub    string // the claimed client, to pick its keys
}

// parseAssertion splits and decodes a compact JWS without trusting it,
// or returns nil. A crit header is refused: no extension is understood.
func parseAssertion(s string) *assertion {
	t, err := jws.Parse(s)
	if err != nil || t.Alg == "" || t.Has("crit") {
		return nil
	}
	a := &assertion{alg: t.Alg, signed: t.SigningInput}
	if a.alg == "Ed25519" {
		a.alg = "EdDSA"
	}
	payload, err := t.Payload()
	if err != nil {
		return nil
	}
	if a.claims, err = jws.ReadClaims(payload); err != nil {
		return nil
	}
	if a.sig, err = t.Signature(); err != nil {
		return nil
	}
	a.sub, _, _ = a.claims.String("sub")
	return a
}

// verify checks a's signature against cl's keys for a's algorithm, in
// their order, until one verifies it. It reports whether one did, and
// the checks a refusal of a still owes (pad): every refusal after this
// check, an unknown client's, a wrong key's, a right key's under a wrong
// claim or a used jti, does the same signature work, one check for each
// of the most keys of the algorithm any client has (keyPad), at least
// one. A success owes nothing: it needs no hiding, for whoever can make
// one holds the client's key and learns only how many of its own keys
// come before it; so a client, or an API that introspects with a key,
// costs the issuer the checks of its own keys, not the pad. An
// algorithm off the list costs nothing whoever it names, and fails.
func (st *state) verify(a *assertion, cl *client) (ok bool, owed int) {
	method := assertionMethods[a.alg]
	if method == nil {
		return false, 0
	}
	checks := max(1, st.keyPad[a.alg])
	if cl == nil {
		return false, checks
	}
	for _, k := range cl.keys {
		if k.alg != a.alg {
			continue
		}
		checks--
		if r, isRSA := k.pub.(*rsa.PublicKey); isRSA && r.Size() != len(a.sig) {
			// This key refuses at once on the length; a check of the
			// signature's size costs what an unknown client's does.
			_ = method.Verify(a.signed, a.sig, st.dummyFor(a))
			continue
		}
		if method.Verify(a.signed, a.sig, k.pub) == nil {
			return true, checks
		}
	}
	return false, checks
}

// pad makes the checks a refused assertion still owes (verify) against a
// key nobody holds, of the size its signature's alg and length call for.
func (st *state) pad(a *assertion, owed int) {
	if owed <= 0 {
		return
	}
	method, dummy := assertionMethods[a.alg], st.dummyFor(a)
	for range owed {
		_ = method.Verify(a.signed, a.sig, dummy)
	}
}

// assertionRefused is why an assertion is refused: fixed text, for the
// log (refusal.why).
type assertionRefused string

func (r assertionRefused) Error() string { return string(r) }

// checkClaims checks a verified assertion's claims for client id at now
// (RFC 7523 §3) and returns until when its jti must be remembered, or why
// it is refused.
func (st *state) checkClaims(a *assertion, id string, now time.Time) (until time.Time, jti string, err error) {
	if iss, _, _ := a.claims.String("iss"); iss != id {
		return until, "", assertionRefused("assertion iss is not the client ID")
	}
	if sub, _, _ := a.claims.String("sub"); sub != id {
		return until, "", assertionRefused("assertion sub is not the client ID")
	}
	if aud, _, err := a.claims.Strings("aud"); err != nil || !(slices.Contains(aud, st.issuer+tokenPath) || slices.Contains(aud, st.issuer)) {
		return until, "", assertionRefused("assertion aud names neither the token endpoint nor the issuer")
	}
	exp, present, err := a.claims.Time("exp")
	switch {
	case !present || err != nil:
		return until, "", assertionRefused("assertion exp missing or malformed")
	case !now.Before(exp.Add(assertionLeeway)):
		return until, "", assertionRefused("assertion expired")
	case exp.After(now.Add(st.assertionLifetime + assertionLeeway)):
		return until, "", assertionRefused("assertion exp too far ahead (lives longer than " + strconv.Itoa(int(st.assertionLifetime/time.Second)) + " s)")
	}
	for _, name := range []string{"nbf", "iat"} {
		t, _, err := a.claims.Time(name)
		if err != nil {
			return until, "", assertionRefused("assertion " + name + " malformed")
		}
		if t.After(now.Add(assertionLeeway)) {
			return until, "", assertionRefused("assertion " + name + " in the future")
		}
	}
	jti, _, _ = a.claims.String("jti")
	if jti == "" {
		return until, "", assertionRefused("assertion jti missing")
	}
	return exp.Add(assertionLeeway), jti, nil
}

// checkAssertion checks a, the assertion of a request for client id,
// whose registration is cl (nil: none), at now: its signature against
// cl's keys (see verify), then its claims. It returns the jti to remember
// until until, or why the assertion is refused, and the padding checks a
// refusal owes, now or once the jti is found used: the caller pays them
// (pad) whenever it refuses.
func (st *state) checkAssertion(a *assertion, id string, cl *client, now time.Time) (jti string, until time.Time, owed int, err error) {
	switch {
	case a == nil:
		return "", until, 0, assertionRefused("client_assertion is not a signed JWT")
	case a.sub != id:
		return "", until, 0, assertionRefused("client_id differs from the assertion's sub")
	}
	ok, owed := st.verify(a, cl)
	if !ok || cl == nil {
		return "", until, owed, assertionRefused("assertion signature invalid, or no key of the client for its alg")
	}
	until, jti, err = st.checkClaims(a, id, now)
	return jti, until, owed, err
}
