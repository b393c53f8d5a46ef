package issuer

import (
	"crypto"
	"crypto/rsa"
	"slices"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/jws"
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
	kid    string // the header's, to find a key in a fetched set
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
	a.kid, _, _ = t.String("kid")
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
