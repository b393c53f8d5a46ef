package issuer_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// certificateClients are clients and an API resource of every way to
// authenticate by certificate and of certificate-bound tokens, for
// TestOneClientWhateverItsSource.
func certificateClients(self tls.Certificate) ([]issuer.ClientConfig, []issuer.APIResourceConfig) {
	sum := sha256.Sum256(self.Leaf.Raw)
	admin := []string{scope.AdminWebAPI}
	return []issuer.ClientConfig{
			{ClientID: "src-pki", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, Scopes: admin},
			{ClientID: "src-self", CertificateThumbprints: []string{fmt.Sprintf("%x", sum)}, Scopes: admin},
			{ClientID: "src-bound", SecretHashes: []string{secret.HashSHA256(boundSecret).String()}, CertificateBoundTokens: true, Scopes: admin},
			{ClientID: "src-ref", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, AccessTokenType: "reference", Scopes: admin},
		}, []issuer.APIResourceConfig{
			{Name: "src-api-pki", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=pki,O=Example"}, Scopes: admin},
			{Name: "src-api-self", CertificateThumbprints: []string{clientcert.Thumbprint(self.Leaf.Raw)}, Scopes: admin},
		}
}

// TestOneClientWhateverItsSource: a client, and an API resource, given
// by a registry (SetRegistered) authenticates and gets tokens exactly as
// the same one given in the configuration file does: by its certificate
// (tls_client_auth, self_signed_tls_client_auth), its tokens bound to it,
// a client with CertificateBoundTokens refused without one, an API
// resource introspecting with its certificate alone. (Issue 39 found a
// registered client's certificate settings ignored: a second compile.)
func TestOneClientWhateverItsSource(t *testing.T) {
	for _, source := range []string{"file", "registry"} {
		t.Run(source, func(t *testing.T) {
			var self tls.Certificate
			s := newMTLSServer(t, func(c *issuer.Config) {
				if source == "file" {
					// The server's own self-signed certificate is made
					// before edit: take the file's from it below.
					self = certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "src-self"}})
					clients, apis := certificateClients(self)
					c.Clients = append(c.Clients, clients...)
					c.APIResources = append(c.APIResources, apis...)
				}
			})
			if source == "registry" {
				self = certtest.SelfSigned(t, certtest.Leaf{Subject: pkix.Name{CommonName: "src-self"}})
				clients, apis := certificateClients(self)
				if err := s.iss.SetRegistered(clients, apis); err != nil {
					t.Fatal(err)
				}
			}
			pki := s.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki", Organization: []string{"Example"}}})
			granted(t, "tls_client_auth", s.ask(t, &pki, []string{"client_id", "src-pki"}), pki.Leaf)
			granted(t, "self_signed_tls_client_auth", s.ask(t, &self, []string{"client_id", "src-self"}), self.Leaf)
			refused(t, "tls_client_auth without its certificate", s.ask(t, nil, []string{"client_id", "src-pki"}), 401, "invalid_client", "client authentication failed")
			other := certtest.SelfSigned(t, certtest.Leaf{})
			granted(t, "certificateBoundTokens", s.ask(t, &other, nil, "Authorization", basic("src-bound", boundSecret)), other.Leaf)
			refused(t, "certificateBoundTokens without a certificate", s.ask(t, nil, nil, "Authorization", basic("src-bound", boundSecret)), 400, "invalid_request",
				"this client's tokens are bound to its certificate: send the request over mutual TLS with it")
			ref := s.ask(t, &pki, []string{"client_id", "src-ref"})
			tok, _ := ref.body["access_token"].(string)
			if ref.status != 200 || tok == "" {
				t.Fatalf("reference token: %d %v", ref.status, ref.body)
			}
			for _, api := range []struct {
				name string
				cert tls.Certificate
			}{{"src-api-pki", pki}, {"src-api-self", self}} {
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/ids/connect/introspect", strings.NewReader(form("client_id", api.name, "token", tok)))
				req.Header.Set("Content-Type", formType)
				resp, err := s.client(&api.cert).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				cnf, _ := m["cnf"].(map[string]any)
				if resp.StatusCode != 200 || m["active"] != true || cnf["x5t#S256"] != clientcert.Thumbprint(pki.Leaf.Raw) {
					t.Errorf("%s introspecting with its certificate: %d %v", api.name, resp.StatusCode, m)
				}
			}
		})
	}
}

// TestRegisteredCertificateClientNeedsCAs: tls_client_auth without
// mtls.clientCAs is refused for a registered client (and API resource)
// as for the file's, naming the field.
func TestRegisteredCertificateClientNeedsCAs(t *testing.T) {
	s := newServer(t, nil)
	pki := issuer.ClientConfig{ClientID: "no-ca", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=x"}, Scopes: []string{scope.AdminWebAPI}}
	api := issuer.APIResourceConfig{Name: "no-ca-api", TLSClientAuth: issuer.TLSClientAuth{SANDNS: "x.example"}, Scopes: []string{scope.AdminWebAPI}}
	err := s.iss.CheckRegistered([]issuer.ClientConfig{pki}, []issuer.APIResourceConfig{api})
	var got []string
	for _, e := range unwrapAll(err) {
		var re *issuer.RegistrationError
		if !errors.As(e, &re) {
			t.Fatalf("not a *RegistrationError: %v", e)
		}
		got = append(got, fmt.Sprintf("%v %s %s", re.API, re.ID, re.Err.Field))
	}
	want := []string{`true no-ca-api apiResources ("no-ca-api").tlsClientAuth`, `false no-ca clients ("no-ca").tlsClientAuth`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("left out %q, want %q", got, want)
	}
	cfg := testConfig(s.issuerURL())
	cfg.Clients = append(cfg.Clients, pki)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `clients[3] ("no-ca").tlsClientAuth: needs mtls.clientCAs`) {
		t.Errorf("the file's: %v", err)
	}
}

func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestRegisteredIDs: a registry may hold only IDs of printable ASCII, not
// "." or "..", unique under ASCII case folding against the file and
// among its own; the rest are left out, a clash marked Taken. A file's ID
// outside the rule is served, with a warning.
func TestRegisteredIDs(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) {
		c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "file\tclient", SecretHashes: []string{secret.HashSHA256(regSecret).String()}, Scopes: []string{scope.AdminWebAPI}})
	})
	if !strings.Contains(s.logs.String(), `"field":"clients[3].clientId","error":"want printable ASCII (U+0021 to U+007E), got \"file\\tclient\""`) {
		t.Errorf("no warning of the file's ID outside the rule: %s", s.logs)
	}
	if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic("file\tclient", regSecret)); a.status != 200 {
		t.Errorf("the file's client outside the rule is not served: %d", a.status)
	}
	for _, tc := range []struct {
		id    string
		taken bool
	}{
		{"Admin", true}, {"ADMIN", true}, {"adm\u0456n", false}, {"zero\u200bwidth", false}, {" padded ", false},
		{"line\nend", false}, {"\x1b[31mred", false}, {".", false}, {"..", false}, {"", false},
	} {
		err := s.iss.CheckRegistered([]issuer.ClientConfig{registeredClient(tc.id, false)}, nil)
		var re *issuer.RegistrationError
		if !errors.As(err, &re) || re.ID != tc.id || re.Taken != tc.taken || re.API {
			t.Errorf("%q: %v (%+v), want left out, taken %v", tc.id, err, re, tc.taken)
		}
		err = s.iss.CheckRegistered(nil, []issuer.APIResourceConfig{{Name: tc.id, SecretHashes: []string{secret.HashSHA256(regSecret).String()}, Scopes: []string{scope.AdminWebAPI}}})
		if tc.id != "Admin" && tc.id != "ADMIN" && (!errors.As(err, &re) || !re.API) {
			t.Errorf("API resource %q: %v, want left out", tc.id, err)
		}
	}
	// Among a registry's own: the first wins.
	err := s.iss.SetRegistered([]issuer.ClientConfig{registeredClient("Reporting", false), registeredClient("reporting", false), registeredClient("a/b?c#d%e", false)}, nil)
	var re *issuer.RegistrationError
	if !errors.As(err, &re) || re.ID != "reporting" || !re.Taken || len(unwrapAll(err)) != 1 {
		t.Fatalf("a registry's IDs equal under folding: %v", err)
	}
	for id, want := range map[string]int{"Reporting": 200, "reporting": 401, "a/b?c#d%e": 200} {
		if a := post(t, s.tokenURL(), formType, form("grant_type", "client_credentials", "scope", scope.AdminWebAPI), "Authorization", basic(id, regSecret)); a.status != want {
			t.Errorf("%q: %d, want %d", id, a.status, want)
		}
	}
}

// TestIntrospectScopes: the administration API's check of a token, in
// process, for a scope no API resource holds: JWT and reference tokens
// alike, inactive once the client loses the scope or is gone.
func TestIntrospectScopes(t *testing.T) {
	s := newServer(t, withReference)
	ctx := context.Background()
	jwt := referenceToken(t, s, "admin", adminSecret, scope.AdminWebAPI)
	ref := referenceToken(t, s, "ref", refSecret, scope.AdminWebAPI)
	for _, tok := range []string{jwt, ref} {
		b, err := s.iss.IntrospectScopes(ctx, tok, scope.AdminWebAPI)
		var m map[string]any
		if err != nil || json.Unmarshal(b, &m) != nil || m["active"] != true || m["scope"] != scope.AdminWebAPI {
			t.Errorf("active: %s %v", b, err)
		}
		if b, _ := s.iss.IntrospectScopes(ctx, tok, scope.ConnectWebAPI); string(b) != `{"active":false}`+"\n" {
			t.Errorf("another scope: %s", b)
		}
	}
	cfg := testConfig(s.issuerURL())
	withReference(cfg)
	cfg.Clients[0].Scopes = []string{scope.ConnectWebAPI} // admin loses pd_AdminWebApi
	cfg.Clients = cfg.Clients[:len(cfg.Clients)-2]        // ref is removed
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{jwt, ref} {
		if b, _ := s.iss.IntrospectScopes(ctx, tok, scope.AdminWebAPI); string(b) != `{"active":false}`+"\n" {
			t.Errorf("after the reload: %s", b)
		}
	}
}
