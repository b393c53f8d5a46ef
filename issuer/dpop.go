package issuer

import (
	"errors"
	"net/http"
	"time"

	"github.com/idsauth/idsauth/internal/dpop"
)

// dpopLeeway is how far ahead of the issuer's clock a proof's iat may be.
const dpopLeeway = 5 * time.Second

// dpopBinding checks the token request's DPoP proof, if any (RFC 9449
// §5), and returns the thumbprint of its key, which the token will be
// bound to: "" for a request without a proof, which gets a bearer token
// unless the client requires DPoP. The proof is checked after the client
// authenticated, so that only a registered client's requests cost a
// signature check and a place in the replay memory.
func (iss *Issuer) dpopBinding(q *request, cl *client) (string, *refusal) {
	st, now, proofs := q.st, q.now, q.proofs
	switch {
	case len(proofs) == 0 && cl.requireDPoP:
		return "", refuse(dpopRequired)
	case len(proofs) == 0:
		return "", nil
	case len(proofs) > 1:
		return "", refuse(twoDPoP)
	}
	alias := ""
	if st.mtls.alias != "" {
		alias = st.mtls.alias + tokenPath
	}
	p, err := dpop.Verify(proofs[0], dpop.Check{Method: http.MethodPost, URL: st.issuer + tokenPath, AliasURL: alias, Nonces: st.nonces, Now: now, Window: st.dpopWindow, Leeway: dpopLeeway})
	switch {
	case errors.Is(err, dpop.ErrNonce):
		return "", &refusal{id: dpopNonce, nonce: st.nonces.At(now)}
	case err != nil:
		var f *dpop.Failure
		if !errors.As(err, &f) {
			return "", refuse(dpopUnread) // Verify returns none other
		}
		return "", refuseWith(dpopInvalid, f.Check)
	}
	fresh, no := iss.remember(q, dpopSubject(cl.id), p.JKT+" "+p.ID, p.Expires)
	switch {
	case no != nil:
		return "", no
	case !fresh:
		return "", refuseWith(dpopInvalid, "its jti was already used")
	}
	return p.JKT, nil
}

// dpopSubject is the replay memory's subject for the proofs of client
// id's token requests, apart from its assertions: a subject's IDs go to
// an eighth of the memory, so that a client that floods it, with as many
// keys as it likes, fills its own share and not the other clients'. The
// proof's ID is its key's thumbprint and its jti.
func dpopSubject(id string) string { return "\x00dpop:" + id }
