package issuer

import (
	"crypto"
	"crypto/x509"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/idsauth/idsauth/internal/clientcert"
)

// Mutual TLS at the issuer (RFC 8705): a client authenticates with the
// certificate of its TLS connection (§2), and its tokens are bound to it
// (§3). The certificate is read once per request (peer); authentication
// by it is one more way through authenticate, charged to the failure
// budgets as a secret is; the binding is decided beside DPoP's, which
// wins, as IdentityServer's does.

// peer returns the client certificate of r and the intermediates it came
// with, leaf first: its connection's, or, from a trusted proxy, the one
// in the proxy's header. Nil when r has none, or the proxy's header
// cannot be read (which counts as none).
func (m *mtlsState) peer(r *http.Request) []*x509.Certificate {
	chain, err := m.source.Chain(r)
	if err != nil || len(chain) == 0 {
		return nil
	}
	return chain
}

// readCertAuth reports whether q's credentials are its certificate (RFC
// 8705 §2): a certificate, client_id in the body, and no secret, Basic
// header or assertion, and reads the client ID. A client that sends a
// secret beside its certificate authenticates with the secret, as with
// IdentityServer.
func (q *request) readCertAuth(r *http.Request) bool {
	if len(q.peer) == 0 || !q.form.has(clientIDParam) || q.form.has(clientSecretParam) {
		return false
	}
	for _, a := range r.Header.Values("Authorization") {
		if len(a) >= 6 && strings.EqualFold(a[:6], "Basic ") {
			return false
		}
	}
	q.certAuth, q.id = true, q.form.get(clientIDParam)
	return true
}

// authenticateCert authenticates q's client by its certificate: one
// failure is reserved from the budgets first, as for a secret, and the
// same work is done whoever the client ID names (the chain is verified
// against the CAs, when there are some, before the client is looked at);
// a failure is held to the failure floor.
func (iss *Issuer) authenticateCert(q *request, cl *client, subject string) (*client, *refusal) {
	start := time.Now()
	res, no := iss.reserve(q, subject)
	if no != nil {
		return nil, no
	}
	id, why := q.st.mtls.verifyChain(q.peer, cl, q.now)
	if id == notRefused {
		res.Succeeded()
		return cl, nil
	}
	res.Failed()
	q.st.verifier.HoldFailure(q.ctx, start)
	return nil, &refusal{id: id, why: why}
}

// verifyChain verifies chain, a client certificate and its intermediates, as
// cl's credential at now: a certificate of the CAs whose subject or name
// is cl's (tls_client_auth), or one of cl's own, by its thumbprint or its
// public key (self_signed_tls_client_auth). It returns the refusal and
// why, for the log: certRejected for a certificate outside its validity
// period, which no client may use, decided before the client is looked
// at; badCredentials for every other, whatever the client ID names, so
// that the answer tells nothing of whether a client exists or how it
// authenticates.
func (m *mtlsState) verifyChain(chain []*x509.Certificate, cl *client, now time.Time) (refusalID, string) {
	leaf := chain[0]
	var chainErr error = errNoCAs
	if m.pool != nil {
		inter := x509.NewCertPool()
		for _, c := range chain[1:] {
			inter.AddCert(c)
		}
		_, chainErr = leaf.Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	}
	x5t := clientcert.Thumbprint(leaf.Raw)
	ca := &certAuth{}
	if cl != nil && cl.certs != nil {
		ca = cl.certs
	}
	switch {
	case now.Before(leaf.NotBefore) || now.After(leaf.NotAfter):
		return certRejected, "the client certificate is outside its validity period"
	case cl == nil || (cl.certs == nil && len(cl.keys) == 0):
		return badCredentials, "the client does not authenticate with a certificate"
	case ca.pki && chainErr == nil && ca.names(leaf):
		return notRefused, ""
	case ca.ownCertificate(leaf, x5t, cl.keys):
		return notRefused, ""
	case ca.pki && chainErr != nil:
		return badCredentials, "the client certificate does not chain to a CA of mtls.clientCAs for client authentication: " + chainErr.Error()
	}
	return badCredentials, "the client certificate is not the client's"
}

// errNoCAs is the chain's error when no CA is configured.
var errNoCAs = errors.New("no CA is configured (mtls.clientCAs)")

// names reports whether leaf is the certificate tls_client_auth names:
// its subject, or one of its subject alternative names.
func (ca *certAuth) names(leaf *x509.Certificate) bool {
	switch {
	case !ca.subject.IsZero():
		d, err := clientcert.SubjectDN(leaf)
		return err == nil && d.Equal(ca.subject)
	case ca.dns != "":
		for _, n := range leaf.DNSNames {
			if strings.EqualFold(strings.TrimSuffix(n, "."), ca.dns) {
				return true
			}
		}
	case ca.uri != "":
		for _, u := range leaf.URIs {
			if u.String() == ca.uri {
				return true
			}
		}
	case ca.email != "":
		local, domain, _ := strings.Cut(ca.email, "@")
		for _, e := range leaf.EmailAddresses {
			l, d, ok := strings.Cut(e, "@")
			if ok && l == local && strings.EqualFold(d, domain) {
				return true
			}
		}
	case ca.ip.IsValid():
		for _, ip := range leaf.IPAddresses {
			if a, ok := netip.AddrFromSlice(ip); ok && a.Unmap() == ca.ip {
				return true
			}
		}
	}
	return false
}

// ownCertificate reports whether leaf is one of the client's own
// certificates: by its thumbprint, compared in constant time with each,
// or by its public key, one of the client's keys.
func (ca *certAuth) ownCertificate(leaf *x509.Certificate, x5t string, keys []clientKey) bool {
	found := false
	for _, t := range ca.thumbprints {
		found = clientcert.Equal(t, x5t) || found
	}
	for _, k := range keys {
		if pub, ok := k.pub.(interface{ Equal(crypto.PublicKey) bool }); ok && pub.Equal(leaf.PublicKey) {
			found = true
		}
	}
	return found
}

// certBinding returns the thumbprint of the certificate q's token is
// bound to (RFC 8705 §3), or "": the certificate the client authenticated
// with, or, for a client with CertificateBoundTokens, the one its request
// presented, which it must. A DPoP-bound token (jkt) is bound to its key
// alone.
func (q *request) certBinding(cl *client, jkt string) (string, *refusal) {
	switch {
	case jkt != "":
		return "", nil
	case q.certAuth, cl.certBound && len(q.peer) > 0:
		return clientcert.Thumbprint(q.peer[0].Raw), nil
	case cl.certBound:
		return "", refuse(certificateRequired)
	}
	return "", nil
}

// mtlsUsed reports whether the configuration speaks of mutual TLS: CAs,
// an alias, or a client or API resource that authenticates with a
// certificate or binds its tokens to one (the roster's tally). Discovery
// then lists the certificate authentication methods and certificate-bound
// tokens.
func (st *state) mtlsUsed() bool { return st.mtls.enabled || st.tally.mtls }

// selfSignedStopped returns, sorted, the clients and API resources that
// authenticate with a self-signed certificate, when no such
// certificate reaches the issuer (see mtlsState.selfSignedReach); nil
// otherwise.
func (st *state) selfSignedStopped() []string {
	if st.mtls.selfSignedReach() {
		return nil
	}
	return slices.Sorted(slices.Values(st.selfSigned))
}

// mtlsState is what MTLSConfig decides, compiled.
type mtlsState struct {
	pool      *x509.CertPool // nil without CAs
	source    clientcert.Source
	forwarded bool   // a proxy forwards certificates in a header (source reads it)
	verified  bool   // the TLS server refuses certificates outside its CAs (WithHandshakeVerification)
	alias     string // the alias issuer URL, without a trailing slash; "" none
	enabled   bool   // discovery speaks of mutual TLS
}

// selfSignedReach reports whether a self-signed client certificate can
// reach the issuer (self_signed_tls_client_auth, RFC 8705 §2.2): from a
// TLS server that takes any certificate, or from a proxy, whose
// handshake the issuer does not see.
func (m *mtlsState) selfSignedReach() bool { return !m.verified || m.forwarded }
