package issuer_test

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// mtlsServer is an issuer over TLS that asks its clients for a
// certificate (any: the issuer checks them), with clients of every way to
// authenticate by certificate.
type mtlsServer struct {
	*httptest.Server
	iss  *issuer.Issuer
	ca   *certtest.CA
	self tls.Certificate // the self-signed certificate of "self" and "keyed"
}

func (s *mtlsServer) tokenURL() string { return s.URL + "/ids/connect/token" }

const boundSecret = "bound-secret"

func newMTLSServer(t *testing.T, edit func(*issuer.Config)) *mtlsServer {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s := &mtlsServer{Server: srv, ca: certtest.NewCA(t, "clients"), self: certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "self"}})}
	sum := sha256.Sum256(s.self.Leaf.Raw)
	colons := strings.ToUpper(strings.Join(strings.Split(fmt.Sprintf("% x", sum), " "), ":")) // as openssl -fingerprint prints it
	admin := []string{scope.AdminWebAPI}
	cfg := testConfig(srv.URL + "/ids")
	cfg.MTLS.ClientCACerts = []*x509.Certificate{s.ca.Cert}
	cfg.Clients = append(cfg.Clients,
		issuer.ClientConfig{ClientID: "pki", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "pki-dns", TLSClientAuth: issuer.TLSClientAuth{SANDNS: "svc.example.com"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "pki-uri", TLSClientAuth: issuer.TLSClientAuth{SANURI: "spiffe://example.org/svc"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "pki-ip", TLSClientAuth: issuer.TLSClientAuth{SANIP: "2001:db8::7"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "pki-email", TLSClientAuth: issuer.TLSClientAuth{SANEmail: "svc@Example.COM"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "self", CertificateThumbprints: []string{colons}, Scopes: admin},
		issuer.ClientConfig{ClientID: "self-b64", CertificateThumbprints: []string{clientcert.Thumbprint(s.self.Leaf.Raw)}, Scopes: admin},
		issuer.ClientConfig{ClientID: "keyed", PublicKeys: []issuer.ClientKeyConfig{{Key: s.self.Leaf.PublicKey}}, Scopes: admin},
		issuer.ClientConfig{ClientID: "bound", SecretHashes: []string{secret.HashSHA256(boundSecret).String()}, CertificateBoundTokens: true, Scopes: admin},
		issuer.ClientConfig{ClientID: "both", SecretHashes: []string{secret.HashSHA256(boundSecret).String()}, TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, Scopes: admin},
		issuer.ClientConfig{ClientID: "ref", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, AccessTokenType: "reference", Scopes: admin},
	)
	cfg.APIResources = []issuer.APIResourceConfig{{Name: "api", SecretHashes: []string{secret.HashSHA256("api-secret").String()}, Scopes: admin}}
	if edit != nil {
		edit(cfg)
	}
	iss, err := issuer.New(cfg, issuer.WithLogger(discardLogger))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	s.iss = iss
	return s
}

// client is an HTTP client of s presenting chain (nil: no certificate).
func (s *mtlsServer) client(chain *tls.Certificate) *http.Client {
	tr := s.Server.Client().Transport.(*http.Transport).Clone()
	if chain != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*chain}
	}
	return &http.Client{Transport: tr}
}

// ask posts a token request for pd_AdminWebApi as client_id alone (or
// with the header and form given), presenting chain.
func (s *mtlsServer) ask(t *testing.T, chain *tls.Certificate, kv []string, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.tokenURL(), strings.NewReader(form(append([]string{"grant_type", "client_credentials", "scope", scope.AdminWebAPI}, kv...)...)))
	req.Header.Set("Content-Type", formType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := s.client(chain).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&a.body)
	return a
}

// cnfOf returns the cnf claim of a JWT access token, nil for none.
func cnfOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	m, _ := c["cnf"].(map[string]any)
	return m
}

// granted checks a 200 whose token is bound to cert (nil: to nothing).
func granted(t *testing.T, name string, a answer, cert *x509.Certificate) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Errorf("%s: %d %v, want a token", name, a.status, a.body)
		return
	}
	if a.body["token_type"] != "Bearer" {
		t.Errorf("%s: token_type %v, want Bearer (RFC 8705 changes no token type)", name, a.body["token_type"])
	}
	tok, _ := a.body["access_token"].(string)
	if strings.Count(tok, ".") != 2 {
		return // a reference token: its cnf is introspection's
	}
	c := cnfOf(t, tok)
	switch {
	case cert == nil && c != nil:
		t.Errorf("%s: cnf %v, want none", name, c)
	case cert != nil && (c == nil || c["x5t#S256"] != clientcert.Thumbprint(cert.Raw) || len(c) != 1):
		t.Errorf("%s: cnf %v, want {x5t#S256: %s}", name, c, clientcert.Thumbprint(cert.Raw))
	}
}

// refused checks a refusal's status, error and description ("-": none).
func refused(t *testing.T, name string, a answer, status int, code, description string) {
	t.Helper()
	desc, has := a.body["error_description"]
	if a.status != status || a.body["error"] != code || (description == "-" && has) || (description != "-" && desc != description) {
		t.Errorf("%s: %d %v, want %d %s %q", name, a.status, a.body, status, code, description)
	}
}

// TestTLSClientAuth: a client registered by its certificate's subject or
// one of its names, under a CA of the configuration, authenticates with
// client_id alone over mutual TLS (RFC 8705 §2.1), and its token is bound
// to the certificate (§3.1, token_type still Bearer); a certificate of
// another subject, of no CA, expired, not for client authentication, or
// none at all is invalid_client.
func TestTLSClientAuth(t *testing.T) {
	s := newMTLSServer(t, nil)
	id := func(client string) []string { return []string{"client_id", client} }
	issue := func(l certtest.Leaf) tls.Certificate { return s.ca.Issue(t, l) }
	example := pkix.Name{CommonName: "pki", Organization: []string{"Example"}}
	right := issue(certtest.Leaf{Subject: example})
	granted(t, "its certificate", s.ask(t, &right, id("pki")), right.Leaf)

	for _, tc := range []struct {
		name, client string
		leaf         certtest.Leaf
	}{
		{"a DNS name", "pki-dns", certtest.Leaf{DNS: []string{"other.example.com", "SVC.example.com."}}},
		{"a URI", "pki-uri", certtest.Leaf{URIs: []string{"spiffe://example.org/svc"}}},
		{"an IP address", "pki-ip", certtest.Leaf{IPs: []net.IP{net.ParseIP("2001:0db8:0:0::7")}}},
		{"an email address", "pki-email", certtest.Leaf{Emails: []string{"svc@example.com"}}},
	} {
		c := issue(tc.leaf)
		granted(t, tc.name, s.ask(t, &c, id(tc.client)), c.Leaf)
	}
	for _, tc := range []struct {
		name, client string
		leaf         certtest.Leaf
	}{
		{"another DNS name", "pki-dns", certtest.Leaf{DNS: []string{"svc.example.com.evil"}}},
		{"another URI", "pki-uri", certtest.Leaf{URIs: []string{"spiffe://example.org/svc/x"}}},
		{"another IP address", "pki-ip", certtest.Leaf{IPs: []net.IP{net.ParseIP("2001:db8::8")}}},
		{"another local part", "pki-email", certtest.Leaf{Emails: []string{"SVC@example.com"}}},
		{"the name in the CN", "pki-dns", certtest.Leaf{Subject: pkix.Name{CommonName: "svc.example.com"}}},
		{"another subject", "pki", certtest.Leaf{Subject: pkix.Name{CommonName: "pki", Organization: []string{"Other"}}}},
		{"the subject in another case", "pki", certtest.Leaf{Subject: pkix.Name{CommonName: "PKI", Organization: []string{"Example"}}}},
	} {
		c := issue(tc.leaf)
		refused(t, tc.name, s.ask(t, &c, id(tc.client)), 401, "invalid_client", "client authentication failed")
	}
	for _, tc := range []struct {
		name string
		cert tls.Certificate
	}{
		{"a certificate of no CA", certtest.SelfSigned(t, certtest.Leaf{Subject: example})},
		{"an expired certificate", issue(certtest.Leaf{Subject: example, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})},
		{"a certificate not valid yet", issue(certtest.Leaf{Subject: example, NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(48 * time.Hour)})},
		{"a server's certificate", issue(certtest.Leaf{Subject: example, EKU: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})},
	} {
		refused(t, tc.name, s.ask(t, &tc.cert, id("pki")), 401, "invalid_client", "client authentication failed")
	}
	refused(t, "no certificate", s.ask(t, nil, id("pki")), 401, "invalid_client", "client authentication failed")
	refused(t, "an unknown client", s.ask(t, &right, id("nobody")), 401, "invalid_client", "client authentication failed")
	refused(t, "a secret client", s.ask(t, &right, id("admin")), 401, "invalid_client", "client authentication failed")
	refused(t, "no client_id", s.ask(t, &right, nil), 401, "invalid_client", "no client credentials")
}

// signer is what a certificate's private key is.
type signer = crypto.Signer

// TestTLSClientAuthChain: a certificate issued by an intermediate CA the
// client sends beside it chains to the configured root.
func TestTLSClientAuthChain(t *testing.T) {
	s := newMTLSServer(t, nil)
	inter := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "intermediate"}, IsCA: true, EKU: []x509.ExtKeyUsage{}})
	sub := &certtest.CA{Cert: inter.Leaf, Key: inter.PrivateKey.(signer)}
	leaf := sub.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki", Organization: []string{"Example"}}})
	alone := leaf
	leaf.Certificate = append(leaf.Certificate, inter.Certificate[0])
	granted(t, "with its intermediate", s.ask(t, &leaf, []string{"client_id", "pki"}), leaf.Leaf)
	refused(t, "without its intermediate", s.ask(t, &alone, []string{"client_id", "pki"}), 401, "invalid_client", "client authentication failed")
}

// TestSelfSignedTLSClientAuth: a client registered by its certificate's
// SHA-256 thumbprint (openssl's hex or x5t#S256's base64url), or by its
// public key, authenticates with that certificate (RFC 8705 §2.2), and
// its token is bound to it; another self-signed certificate, or one of
// its key that has expired, is refused.
func TestSelfSignedTLSClientAuth(t *testing.T) {
	s := newMTLSServer(t, nil)
	for _, client := range []string{"self", "self-b64", "keyed"} {
		granted(t, client, s.ask(t, &s.self, []string{"client_id", client}), s.self.Leaf)
	}
	other := certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "self"}})
	expired := certtest.SelfSigned(t, certtest.Leaf{Key: s.self.PrivateKey.(signer), NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	for _, client := range []string{"self", "keyed"} {
		refused(t, client+", another certificate", s.ask(t, &other, []string{"client_id", client}), 401, "invalid_client", "client authentication failed")
	}
	refused(t, "its key, expired", s.ask(t, &expired, []string{"client_id", "keyed"}), 401, "invalid_client", "client authentication failed")
	// A certificate issued by a configured CA is no self-signed client's.
	ca := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "self"}})
	refused(t, "a CA's certificate for a self-signed client", s.ask(t, &ca, []string{"client_id", "self"}), 401, "invalid_client", "client authentication failed")
}

// TestCertificateBoundTokensAtTheIssuer: a client with
// CertificateBoundTokens gets tokens bound to the certificate its request
// presents, whatever way it authenticates, and none without one, unless
// it sends a DPoP proof, which wins; a secret beside a certificate
// authenticates with the secret; a client of neither kind gets a bearer
// token over mutual TLS.
func TestCertificateBoundTokensAtTheIssuer(t *testing.T) {
	s := newMTLSServer(t, nil)
	c := certtest.SelfSigned(t, certtest.Leaf{})
	bound := []string{"Authorization", basic("bound", boundSecret)}
	granted(t, "with a certificate", s.ask(t, &c, nil, bound...), c.Leaf)
	refused(t, "without", s.ask(t, nil, nil, bound...), 400, "invalid_request", "this client's tokens are bound to its certificate: send the request over mutual TLS with it")
	d := dpopKey(t)
	proof, err := d.Proof(http.MethodPost, s.tokenURL(), "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a := s.ask(t, nil, nil, append(bound, "DPoP", proof)...)
	jkt, _ := d.JKT()
	if tok, _ := a.body["access_token"].(string); a.status != 200 || a.body["token_type"] != "DPoP" || cnfOf(t, tok)["jkt"] != jkt || cnfOf(t, tok)["x5t#S256"] != nil {
		t.Errorf("with DPoP: %d %v", a.status, a.body)
	}
	proof, _ = d.Proof(http.MethodPost, s.tokenURL(), "", "", time.Now())
	if a := s.ask(t, &c, nil, append(bound, "DPoP", proof)...); a.status != 200 || a.body["token_type"] != "DPoP" {
		t.Errorf("with DPoP and a certificate: %d %v", a.status, a.body)
	}
	right := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki", Organization: []string{"Example"}}})
	granted(t, "a secret beside a certificate", s.ask(t, &right, nil, "Authorization", basic("both", boundSecret)), nil)
	granted(t, "a body secret beside a certificate", s.ask(t, &right, []string{"client_id", "both", "client_secret", boundSecret}), nil)
	granted(t, "the certificate alone", s.ask(t, &right, []string{"client_id", "both"}), right.Leaf)
	refused(t, "a wrong secret beside the right certificate", s.ask(t, &right, nil, "Authorization", basic("both", "wrong")), 401, "invalid_client", "client authentication failed")
	granted(t, "a secret client over mutual TLS", s.ask(t, &c, nil, "Authorization", basic("admin", adminSecret)), nil)
}

// TestCertificateBoundReferenceTokens: a reference token keeps its
// binding, introspection returns it as cnf (RFC 8705 §3.2), and a
// validator that introspects accepts the token with its certificate
// alone.
func TestCertificateBoundReferenceTokens(t *testing.T) {
	s := newMTLSServer(t, nil)
	c := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki", Organization: []string{"Example"}}})
	a := s.ask(t, &c, []string{"client_id", "ref"})
	granted(t, "a reference token", a, c.Leaf)
	tok, _ := a.body["access_token"].(string)
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/ids/connect/introspect", strings.NewReader(form("token", tok)))
	req.Header.Set("Content-Type", formType)
	req.Header.Set("Authorization", basic("api", "api-secret"))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	cnf, _ := answer["cnf"].(map[string]any)
	if answer["active"] != true || answer["token_type"] != "Bearer" || cnf["x5t#S256"] != clientcert.Thumbprint(c.Leaf.Raw) || len(cnf) != 1 {
		t.Fatalf("introspection: %v", answer)
	}
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: s.iss.URL(), Audience: []string{s.iss.URL() + "/resources"}, Introspection: &accesstoken.Introspection{ClientID: "api", Local: s.iss, CacheBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if cl, err := v.Validate(context.Background(), tok, accesstoken.Presentation{CertThumbprint: clientcert.Thumbprint(c.Leaf.Raw)}); err != nil || cl.X5T != clientcert.Thumbprint(c.Leaf.Raw) {
		t.Errorf("with its certificate: %+v %v", cl, err)
	}
	var ve *accesstoken.ValidationError
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{CertThumbprint: clientcert.Thumbprint(s.self.Leaf.Raw)}); !errors.As(err, &ve) || ve.Code != "wrong_certificate" {
		t.Errorf("with another: %v", err)
	}
	if _, err := v.Validate(context.Background(), tok, accesstoken.Presentation{CertThumbprint: ""}); !errors.As(err, &ve) || ve.Code != "bound_token" {
		t.Errorf("with none: %v", err)
	}
	// The JWT of a certificate-bound client introspects with its cnf too.
	jwt := s.ask(t, &c, []string{"client_id", "pki"}).body["access_token"].(string)
	answer = nil
	b, err := s.iss.IntrospectToken(t.Context(), "api", jwt)
	if err != nil || json.Unmarshal(b, &answer) != nil || answer["cnf"].(map[string]any)["x5t#S256"] != clientcert.Thumbprint(c.Leaf.Raw) {
		t.Errorf("a JWT's introspection: %s %v", b, err)
	}
}

// TestMTLSIdentityServerProfile: under the identityserver profile, every
// failure is 400 invalid_client, an expired certificate, which no client
// may use, described as IdentityServer describes it; every other the
// same whatever the client ID, so that the answer does not tell whether
// a client exists or how it authenticates.
func TestMTLSIdentityServerProfile(t *testing.T) {
	s := newMTLSServer(t, func(c *issuer.Config) { c.Profile = "identityserver" })
	example := pkix.Name{CommonName: "pki", Organization: []string{"Example"}}
	expired := s.ca.Issue(t, certtest.Leaf{Subject: example, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	for _, client := range []string{"pki", "nobody", "admin"} {
		refused(t, client+", an expired certificate", s.ask(t, &expired, []string{"client_id", client}), 400, "invalid_client", "mTLS authentication failed.")
	}
	noCA := certtest.SelfSigned(t, certtest.Leaf{Subject: example})
	other := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "other"}})
	for _, client := range []string{"pki", "nobody", "admin", "self"} {
		refused(t, client+", a certificate of no CA", s.ask(t, &noCA, []string{"client_id", client}), 400, "invalid_client", "-")
		refused(t, client+", another subject", s.ask(t, &other, []string{"client_id", client}), 400, "invalid_client", "-")
	}
	right := s.ca.Issue(t, certtest.Leaf{Subject: example})
	granted(t, "its certificate", s.ask(t, &right, []string{"client_id", "pki"}), right.Leaf)
}

// TestMTLSDiscovery: discovery speaks of mutual TLS when the
// configuration does (RFC 8705 §2.1.1, §2.2.1, §3.3, §5): the two
// methods, certificate-bound tokens, and the alias's endpoints; without
// it, none of them.
func TestMTLSDiscovery(t *testing.T) {
	doc := func(iss *issuer.Issuer) map[string]any {
		rec := httptest.NewRecorder()
		u, _ := url.Parse(iss.URL())
		iss.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u.Path+"/.well-known/openid-configuration", nil))
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	plain := doc(newServer(t, nil).iss)
	for _, k := range []string{"tls_client_certificate_bound_access_tokens", "mtls_endpoint_aliases"} {
		if _, ok := plain[k]; ok {
			t.Errorf("without mutual TLS, discovery has %s", k)
		}
	}
	if fmt.Sprint(plain["token_endpoint_auth_methods_supported"]) != "[client_secret_basic client_secret_post private_key_jwt]" {
		t.Errorf("methods without mutual TLS: %v", plain["token_endpoint_auth_methods_supported"])
	}
	s := newMTLSServer(t, func(c *issuer.Config) { c.MTLS.Alias = "https://mtls.example.com:8443/ids" })
	m := doc(s.iss)
	want := "[client_secret_basic client_secret_post private_key_jwt tls_client_auth self_signed_tls_client_auth]"
	for _, e := range []string{"token", "introspection", "revocation"} {
		if got := fmt.Sprint(m[e+"_endpoint_auth_methods_supported"]); got != want {
			t.Errorf("%s methods: %s", e, got)
		}
	}
	aliases, _ := m["mtls_endpoint_aliases"].(map[string]any)
	if m["tls_client_certificate_bound_access_tokens"] != true || aliases["token_endpoint"] != "https://mtls.example.com:8443/ids/connect/token" ||
		aliases["introspection_endpoint"] != "https://mtls.example.com:8443/ids/connect/introspect" || aliases["revocation_endpoint"] != "https://mtls.example.com:8443/ids/connect/revocation" || len(aliases) != 3 {
		t.Errorf("discovery: %v", m)
	}
	if m["token_endpoint"] != s.iss.TokenURL() {
		t.Errorf("token_endpoint %v", m["token_endpoint"])
	}
}

// TestMTLSDiscoveryListsWhatReachesTheIssuer: with a TLS server that
// verifies client certificates at the handshake
// (WithHandshakeVerification: idsauth serve -client-ca), a self-signed
// one never reaches the issuer, so discovery does not list
// self_signed_tls_client_auth and the issuer warns, naming the clients
// that use it; behind a proxy that forwards
// certificates, whose handshake it does not see, it lists it, and without
// the option too.
func TestMTLSDiscoveryListsWhatReachesTheIssuer(t *testing.T) {
	thumb := clientcert.Thumbprint(certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "edge"}}).Leaf.Raw)
	edit := func(proxy bool) func(*issuer.Config) {
		return func(c *issuer.Config) {
			c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "edge", CertificateThumbprints: []string{thumb}, Scopes: []string{scope.AdminWebAPI}})
			if proxy {
				c.MTLS.CertificateHeader, c.MTLS.TrustedProxies = "X-SSL-CERT", []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32")}
			}
		}
	}
	const warning = "which the TLS server refuses at the handshake"
	for _, c := range []struct {
		name     string
		verified bool
		proxy    bool
		listed   bool
	}{
		{"any certificate taken", false, false, true},
		{"verified at the handshake", true, false, false},
		{"verified at the handshake, and a proxy's header", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []issuer.Option
			if c.verified {
				opts = append(opts, issuer.WithHandshakeVerification())
			}
			s := newServer(t, edit(c.proxy), opts...)
			resp, err := http.Get(s.URL + "/ids/.well-known/openid-configuration")
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range []string{"token", "introspection", "revocation"} {
				methods := fmt.Sprint(doc[e+"_endpoint_auth_methods_supported"])
				if strings.Contains(methods, "self_signed_tls_client_auth") != c.listed || !strings.Contains(methods, " tls_client_auth") {
					t.Errorf("%s methods: %s, self_signed_tls_client_auth listed: want %v", e, methods, c.listed)
				}
			}
			if warned := strings.Contains(s.logs.String(), warning); warned == c.listed || (warned && !strings.Contains(s.logs.String(), `"clients":["edge"]`)) {
				t.Errorf("the log:\n%s", s.logs)
			}
		})
	}
}

// TestMTLSDPoPAtTheAlias: a DPoP proof may name the token endpoint's
// alias (RFC 8705 §5) as its htu, or the endpoint, and nothing else.
func TestMTLSDPoPAtTheAlias(t *testing.T) {
	s := newMTLSServer(t, func(c *issuer.Config) { c.MTLS.Alias = "https://mtls.example.com:8443/ids" })
	d := dpopKey(t)
	bound := []string{"Authorization", basic("admin", adminSecret)}
	for htu, want := range map[string]int{
		"https://mtls.example.com:8443/ids/connect/token": 200,
		"https://MTLS.example.com:8443/ids/connect/token": 200,
		s.tokenURL(): 200,
		"https://mtls.example.com/ids/connect/token":  400,
		"https://elsewhere.example/ids/connect/token": 400,
	} {
		p, _ := d.Proof(http.MethodPost, htu, "", "", time.Now())
		if a := s.ask(t, nil, nil, append(bound, "DPoP", p)...); a.status != want {
			t.Errorf("htu %s: %d %v, want %d", htu, a.status, a.body, want)
		}
	}
}

// TestMTLSBehindAProxy: behind a TLS-terminating proxy, the issuer takes
// the certificate of the header the proxy sets, from the proxy's address
// alone.
func TestMTLSBehindAProxy(t *testing.T) {
	ca := certtest.NewCA(t, "clients")
	for _, trusted := range []string{"127.0.0.0/8", "192.0.2.0/24"} {
		srv := newServer(t, func(c *issuer.Config) {
			c.MTLS = issuer.MTLSConfig{ClientCACerts: []*x509.Certificate{ca.Cert}, CertificateHeader: "X-SSL-CERT", TrustedProxies: []netip.Prefix{netip.MustParsePrefix(trusted), netip.MustParsePrefix("::1/128")}}
			c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "pki", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki"}, Scopes: []string{scope.AdminWebAPI}})
		})
		cert := ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki"}})
		header := url.PathEscape(string(certtest.PEM(cert.Leaf.Raw)))
		a := post(t, srv.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI, "client_id", "pki"), "X-SSL-CERT", header)
		if trusted == "127.0.0.0/8" {
			granted(t, "from the proxy", a, cert.Leaf)
		} else {
			refused(t, "from elsewhere", a, 401, "invalid_client", "client authentication failed")
		}
	}
}

// TestMTLSConfigErrors: the mistakes of an mTLS configuration are
// refused, each naming its field.
func TestMTLSConfigErrors(t *testing.T) {
	ca := certtest.NewCA(t, "clients")
	withCA := func(c *issuer.Config) { c.MTLS.ClientCACerts = []*x509.Certificate{ca.Cert} }
	client := func(cc issuer.ClientConfig) func(*issuer.Config) {
		return func(c *issuer.Config) {
			cc.ClientID, cc.Scopes = "m", []string{scope.AdminWebAPI}
			c.Clients = append(c.Clients, cc)
		}
	}
	for _, tc := range []struct {
		name  string
		edits []func(*issuer.Config)
		field string
	}{
		{"two subjects", []func(*issuer.Config){withCA, client(issuer.ClientConfig{TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=a", SANDNS: "a"}})}, `clients[3] ("m").tlsClientAuth`},
		{"no CA", []func(*issuer.Config){client(issuer.ClientConfig{TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=a"}})}, `clients[3] ("m").tlsClientAuth`},
		{"a bad DN", []func(*issuer.Config){withCA, client(issuer.ClientConfig{TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "XX=a"}})}, `clients[3] ("m").tlsClientAuth.subjectDn`},
		{"a bad IP", []func(*issuer.Config){withCA, client(issuer.ClientConfig{TLSClientAuth: issuer.TLSClientAuth{SANIP: "10.0.0"}})}, `clients[3] ("m").tlsClientAuth.sanIp`},
		{"a relative URI", []func(*issuer.Config){withCA, client(issuer.ClientConfig{TLSClientAuth: issuer.TLSClientAuth{SANURI: "svc"}})}, `clients[3] ("m").tlsClientAuth.sanUri`},
		{"a SHA-1 thumbprint", []func(*issuer.Config){client(issuer.ClientConfig{CertificateThumbprints: []string{strings.Repeat("AB", 20)}})}, `clients[3] ("m").certificateThumbprints[0]`},
		{"a thumbprint of nothing", []func(*issuer.Config){client(issuer.ClientConfig{CertificateThumbprints: []string{"abc"}})}, `clients[3] ("m").certificateThumbprints[0]`},
		{"an alias elsewhere", []func(*issuer.Config){func(c *issuer.Config) { c.MTLS.Alias = "https://mtls.example.com/other" }}, "mtls.alias"},
		{"an http alias", []func(*issuer.Config){func(c *issuer.Config) { c.MTLS.Alias = "http://mtls.example.com/ids" }}, "mtls.alias"},
		{"a header without proxies", []func(*issuer.Config){func(c *issuer.Config) { c.MTLS.CertificateHeader = "X-SSL-CERT" }}, "mtls.trustedProxies"},
		{"proxies without a header", []func(*issuer.Config){func(c *issuer.Config) { c.MTLS.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }}, "mtls.certificateHeader"},
	} {
		cfg := testConfig("https://ids.example/ids")
		for _, e := range tc.edits {
			e(cfg)
		}
		var ce *issuer.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	cfg := testConfig("https://ids.example/ids")
	cfg.MTLS.ClientCAs = []string{"no-such-ca.pem"}
	var ce *issuer.ConfigError
	if _, err := issuer.New(cfg, issuer.WithLogger(discardLogger)); !errors.As(err, &ce) || ce.Field != "mtls.clientCAs[0]" {
		t.Errorf("a missing CA file: %v", err)
	}
}

// TestMTLSFailuresCharged: a failed certificate authentication spends the
// failure budgets as a wrong secret does, and the right certificate from
// an address that has not failed still gets its token.
func TestMTLSFailuresCharged(t *testing.T) {
	s := newMTLSServer(t, func(c *issuer.Config) { c.Limits.FailedAttemptsPerSubject = 2 })
	wrong := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "other"}})
	for range 2 {
		refused(t, "a wrong certificate", s.ask(t, &wrong, []string{"client_id", "pki"}), 401, "invalid_client", "client authentication failed")
	}
	if a := s.ask(t, &wrong, []string{"client_id", "pki"}); a.status != http.StatusTooManyRequests || a.body["error"] != "slow_down" {
		t.Errorf("past the budget: %d %v", a.status, a.body)
	}
}

// TestMTLSConfigFile: the file names the mTLS settings as RFC 8705's
// metadata, without their prefix, and the issuer reads the CA file.
func TestMTLSConfigFile(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, "clients")
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), certtest.PEM(ca.Cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := issuer.ParseConfig([]byte(`{"issuer":"https://ids.example/ids","ephemeralKey":true,
		"mtls":{"clientCAs":["ca.pem"],"alias":"https://mtls.example/ids","certificateHeader":"X-SSL-CERT","trustedProxies":["10.0.0.5"]},
		"clients":[
			{"clientId":"pki","tlsClientAuth":{"subjectDn":"CN=pki"},"scopes":["pd_AdminWebApi"]},
			{"clientId":"dns","tlsClientAuth":{"sanDns":"a.example","sanUri":"","sanIp":"","sanEmail":""},"scopes":["pd_AdminWebApi"]},
			{"clientId":"self","certificateThumbprints":["bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"],"certificateBoundTokens":true,"scopes":["pd_AdminWebApi"]}],
		"apiResources":[{"name":"api","tlsClientAuth":{"sanUri":"spiffe://x/api"},"scopes":["pd_AdminWebApi"]}]}`), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.MTLS
	if fmt.Sprint(m.ClientCAs) != "[ca.pem]" || m.Alias != "https://mtls.example/ids" || m.CertificateHeader != "X-SSL-CERT" || fmt.Sprint(m.TrustedProxies) != "[10.0.0.5/32]" ||
		cfg.Clients[0].TLSClientAuth.SubjectDN != "CN=pki" || cfg.Clients[1].TLSClientAuth.SANDNS != "a.example" || !cfg.Clients[2].CertificateBoundTokens ||
		len(cfg.Clients[2].CertificateThumbprints) != 1 || cfg.APIResources[0].TLSClientAuth.SANURI != "spiffe://x/api" {
		t.Fatalf("read %+v", cfg)
	}
	if _, err := issuer.New(cfg, issuer.WithLogger(discardLogger)); err != nil {
		t.Fatal(err)
	}
	if _, err := issuer.ParseConfig([]byte(`{"mtls":{"clientCa":["x"]}}`), dir, nil); err == nil || !strings.Contains(err.Error(), "clientCAs") {
		t.Errorf("a misspelt member: %v", err)
	}
}
