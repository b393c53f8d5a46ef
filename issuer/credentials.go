package issuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/secret"
)

// How a client or an API resource authenticates, compiled once for both
// and whatever their source: secret hashes, public keys (inline, in code
// or in a file), a certificate (tls_client_auth, self_signed_tls_client_auth).

// credentials are how a client or an API resource authenticates: the
// fields ClientConfig and APIResourceConfig share.
type credentials struct {
	hashes      []string
	keys        []ClientKeyConfig
	tls         TLSClientAuth
	thumbprints []string
	more        bool // a credential of a client's own: a jwksUri, a federated credential
}

// credentials checks c, the credentials of id, f naming it, and returns a
// client that holds them: the one compile of a client's and an API
// resource's credentials.
func (k *compiler) credentials(f, id string, c credentials) (*client, error) {
	if len(c.hashes) == 0 && len(c.keys) == 0 && !c.tls.set() && len(c.thumbprints) == 0 && !c.more {
		return nil, fieldErr(f+".secretHashes", "at least one hash (or one of publicKeys, a tlsClientAuth or a certificate thumbprint) is required")
	}
	hashes, err := parseHashes(f, c.hashes)
	if err != nil {
		return nil, err
	}
	cl := &client{clientData: clientData{id: id, hashes: hashes}}
	if len(c.keys) > maxClientKeys {
		return nil, fieldErr(f+".publicKeys", "more than %d keys", maxClientKeys)
	}
	for i, kc := range c.keys {
		key, err := kc.compile()
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s.publicKeys[%d]", f, i), "%v", err)
		}
		if key != nil { // a file's key is read by compile
			cl.keys = append(cl.keys, *key)
		}
	}
	if cl.certs, err = compileCertAuth(f, c.tls, c.thumbprints, k.haveCAs); err != nil {
		return nil, err
	}
	return cl, nil
}

// parseHashes parses the secret hashes in of the client or API resource
// f names: its field's name is made for an error alone.
func parseHashes(f string, in []string) ([]secret.Hash, error) {
	out := make([]secret.Hash, 0, len(in))
	for i, s := range in {
		h, err := secret.Parse(s)
		if err != nil {
			// The value may be a secret pasted in plain text: never echo it.
			return nil, &ConfigError{Field: fmt.Sprintf("%s[%d]", join(f, "secretHashes"), i), Reason: err.Error(), Err: err}
		}
		out = append(out, h)
	}
	return out, nil
}

// clientKey is a checked public key of a client, for one algorithm.
type clientKey struct {
	alg string
	pub crypto.PublicKey
}

// compile checks a client key and returns it, or nil for a file key, which
// Issuer.compile reads (loadClientKeys).
func (kc ClientKeyConfig) compile() (*clientKey, error) {
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
	path, data, err := readFile(dir, kc.File)
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
	for i, fc := range st.files {
		if err := load(fmt.Sprintf("clients[%d] (%q)", i, fc.cc.ClientID), fc.cl, fc.cc.PublicKeys); err != nil {
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

// entryOf is what the table keeps of cc, compiled to cl: its
// configuration with every public key as a JWK of its algorithm when one
// is a file's or in code, so that the entry holds all it needs, in bytes;
// file says that the configuration file gives it.
func (cl *client) entryOf(cc ClientConfig, file bool) (entry, error) {
	if slices.ContainsFunc(cc.PublicKeys, func(kc ClientKeyConfig) bool { return len(kc.JWK) == 0 }) {
		cc.PublicKeys = make([]ClientKeyConfig, len(cl.keys))
		for i, k := range cl.keys {
			j, err := keys.PublicJWKOf(k.pub)
			if err != nil {
				return entry{}, err
			}
			b, err := json.Marshal(j)
			if err != nil {
				return entry{}, err
			}
			cc.PublicKeys[i] = ClientKeyConfig{JWK: b, Alg: k.alg}
		}
	}
	return entry{Config: cc, File: file}, nil
}

// set reports whether any field of a is set.
func (a TLSClientAuth) set() bool { return a != TLSClientAuth{} }

// certAuth is how a client authenticates by certificate, compiled.
type certAuth struct {
	// tls_client_auth: one of these, set by TLSClientAuth.
	pki         bool
	subject     clientcert.DN
	dns, uri    string
	email       string
	ip          netip.Addr
	thumbprints []string // self_signed_tls_client_auth, as x5t#S256
}

// maxThumbprints bounds a client's CertificateThumbprints.
const maxThumbprints = 8

// compileCertAuth checks the certificate credentials of a client or an
// API resource, f naming it, and returns them: nil for none.
func compileCertAuth(f string, a TLSClientAuth, thumbprints []string, haveCAs bool) (*certAuth, error) {
	if !a.set() && len(thumbprints) == 0 {
		return nil, nil
	}
	ca := &certAuth{}
	if a.set() {
		n := 0
		for _, v := range []string{a.SubjectDN, a.SANDNS, a.SANURI, a.SANEmail, a.SANIP} {
			if v != "" {
				n++
			}
		}
		f := f + ".tlsClientAuth"
		var err error
		switch {
		case n > 1:
			return nil, fieldErr(f, "set one of subjectDn, sanDns, sanUri, sanIp and sanEmail (RFC 8705 §2.1.2: exactly one)")
		case !haveCAs:
			return nil, fieldErr(f, "needs mtls.clientCAs: the CAs its certificate must chain to")
		case a.SubjectDN != "":
			if ca.subject, err = clientcert.ParseDN(a.SubjectDN); err != nil {
				return nil, fieldErr(f+".subjectDn", "%v", err)
			}
		case a.SANDNS != "":
			ca.dns = strings.ToLower(strings.TrimSuffix(a.SANDNS, "."))
		case a.SANURI != "":
			if u, err := url.Parse(a.SANURI); err != nil || !u.IsAbs() {
				return nil, fieldErr(f+".sanUri", "want an absolute URI, got %q", a.SANURI)
			}
			ca.uri = a.SANURI
		case a.SANEmail != "":
			if local, domain, ok := strings.Cut(a.SANEmail, "@"); !ok || local == "" || domain == "" {
				return nil, fieldErr(f+".sanEmail", "want an address such as svc@example.com, got %q", a.SANEmail)
			}
			ca.email = a.SANEmail
		case a.SANIP != "":
			if ca.ip, err = netip.ParseAddr(a.SANIP); err != nil || ca.ip.Zone() != "" {
				return nil, fieldErr(f+".sanIp", "want an IPv4 or IPv6 address, got %q", a.SANIP)
			}
			ca.ip = ca.ip.Unmap()
		}
		ca.pki = true
	}
	if len(thumbprints) > maxThumbprints {
		return nil, fieldErr(f+".certificateThumbprints", "more than %d", maxThumbprints)
	}
	for i, t := range thumbprints {
		x5t, err := parseThumbprint(t)
		if err != nil {
			return nil, fieldErr(fmt.Sprintf("%s.certificateThumbprints[%d]", f, i), "%v", err)
		}
		ca.thumbprints = append(ca.thumbprints, x5t)
	}
	return ca, nil
}

// parseThumbprint reads a certificate's SHA-256 thumbprint, as x5t#S256
// writes it or openssl prints it, into the x5t#S256 form.
func parseThumbprint(t string) (string, error) {
	if len(t) == 43 {
		if b, err := base64.RawURLEncoding.DecodeString(t); err == nil && len(b) == 32 {
			return t, nil
		}
	}
	h := strings.ReplaceAll(t, ":", "")
	b, err := hex.DecodeString(h)
	switch {
	case err == nil && len(b) == 32:
		return base64.RawURLEncoding.EncodeToString(b), nil
	case err == nil && len(b) == 20:
		return "", fmt.Errorf("a SHA-1 thumbprint (as IdentityServer's X509Thumbprint secrets hold): give the SHA-256 one, which openssl x509 -noout -fingerprint -sha256 prints")
	}
	return "", fmt.Errorf("want a SHA-256 thumbprint: 43 base64url characters (x5t#S256) or 64 hex digits, got %d characters", len(t))
}

// tally is what every request must know of the roster as a whole,
// counted as clients enter it, so that a change costs what it changes: the
// signature checks that pad an assertion's (the most keys of an algorithm
// any client or API resource has, and keys nobody holds of each RSA size
// any has), one subject of each shape of secret hashes for the verifier,
// and whether anyone speaks mutual TLS. Between full builds (Reload,
// SetRegistered) it only grows: a removal leaves the padding and the
// verifier's work as they were, never less.
type tally struct {
	keyPad     map[string]int // signature checks per alg
	dummies    map[string]crypto.PublicKey
	rsaDummies map[int]*rsa.PublicKey // by modulus size in bytes
	rsaBits    []int                  // the sizes the dummies are made for
	shapes     map[string][]secret.Hash
	mtls       bool     // a client or API resource authenticates with, or binds its tokens to, a certificate
	selfSigned []string // the IDs of those that authenticate with a self-signed certificate
}

// newTally is the tally of no client yet: its dummy keys made.
func newTally() (tally, error) {
	t := tally{keyPad: map[string]int{}, rsaBits: []int{keys.MinRSABits}, shapes: map[string][]secret.Hash{}}
	var err error
	t.dummies, t.rsaDummies, err = dummyKeys(t.rsaBits)
	return t, err
}

// clone returns a copy of t whose maps and slices are its own.
func (t tally) clone() tally {
	t.keyPad, t.shapes = maps.Clone(t.keyPad), maps.Clone(t.shapes)
	t.rsaBits, t.selfSigned = slices.Clone(t.rsaBits), slices.Clone(t.selfSigned)
	return t
}

// add counts cl, a client or an API resource's credentials, in t, and
// makes dummy keys again when it brings a new RSA size.
func (t *tally) add(cl *client) error {
	newSize := false
	if len(cl.keys) > 0 {
		per := map[string]int{}
		for _, k := range cl.keys {
			per[k.alg]++
			if p, ok := k.pub.(*rsa.PublicKey); ok && !slices.Contains(t.rsaBits, p.N.BitLen()) {
				t.rsaBits, newSize = append(t.rsaBits, p.N.BitLen()), true
			}
		}
		for alg, n := range per {
			t.keyPad[alg] = max(t.keyPad[alg], n)
		}
	}
	// The shape, written where it costs no allocation: a load tallies
	// 100,000 clients, nearly all of a shape already known.
	var buf [64]byte
	shape := strconv.AppendInt(buf[:0], int64(len(cl.hashes)), 10)
	for _, h := range cl.hashes {
		shape = append(append(shape, ','), h.Kind()...)
		if h.Slow() {
			shape = append(append(shape, ':'), h.String()...) // each its own: the verifier measures its cost
		}
	}
	if _, ok := t.shapes[string(shape)]; !ok && len(cl.hashes) > 0 {
		t.shapes[string(shape)] = cl.hashes
	}
	t.mtls = t.mtls || cl.certs != nil || cl.certBound
	if cl.certs != nil && len(cl.certs.thumbprints) > 0 {
		t.selfSigned = append(t.selfSigned, cl.id)
	}
	if !newSize {
		return nil
	}
	var err error
	t.dummies, t.rsaDummies, err = dummyKeys(t.rsaBits)
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

// loadCAs reads the CA files, from dir when relative, into a pool with
// the CAs given in code; nil when there are none.
func (m MTLSConfig) loadCAs(dir string) (*x509.CertPool, error) {
	if len(m.ClientCAs) == 0 && len(m.ClientCACerts) == 0 {
		return nil, nil
	}
	pool := x509.NewCertPool()
	for _, c := range m.ClientCACerts {
		pool.AddCert(c)
	}
	for i, path := range m.ClientCAs {
		f := fmt.Sprintf("mtls.clientCAs[%d]", i)
		path, data, err := readFile(dir, path)
		if err != nil {
			return nil, causeErr(f, err)
		}
		n := 0
		for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fieldErr(f, "%s: %v", path, err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, fieldErr(f, "%s holds no PEM certificate", path)
		}
	}
	return pool, nil
}
