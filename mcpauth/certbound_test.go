package mcpauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/mcpauth"
	"github.com/idsauth/idsauth/scope"
)

// TestCertificateBoundTokens: over mutual TLS, mcpauth.Client gets a
// token bound to the client's certificate (RFC 8705 §3), and the Guard,
// in front of either SDK, takes it over a connection that presents that
// certificate and refuses it over one that presents another.
func TestCertificateBoundTokens(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, "mcpauth-test")
	mine, other := ca.Issue(t, certtest.Leaf{}), ca.Issue(t, certtest.Leaf{})
	for sdk, serve := range map[string]func(*world, *mcpauth.Guard){"go-sdk": (*world).serveGoSDK, "mcp-go": (*world).serveMCPGo} {
		w := newWorldTLS(t, key, ca, func(c *issuer.Config) {
			for i := range c.Clients {
				if c.Clients[i].ClientID == "mcp-all" {
					c.Clients[i].CertificateBoundTokens = true
				}
			}
		})
		v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: w.iss.URL(), Audience: []string{w.mcpURL}, Keys: w.iss})
		if err != nil {
			t.Fatal(err)
		}
		serve(w, w.guard(t, mcpauth.Config{Validator: v}))
		call := func(cert tls.Certificate) ([]string, error) {
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}}}
			return goSDKClient(t, w.mcpURL, mcpauth.Client(context.Background(), client.Config{
				ClientID: "mcp-all", ClientSecret: "s3cret-mcp-all", HTTPClient: hc, Scopes: []string{scope.AdminWebAPI},
			}), "list_users")
		}
		got, err := call(mine)
		if err != nil || strings.Join(got, "") != "list_users: mcp-all "+scope.AdminWebAPI {
			t.Errorf("%s: its certificate: %v %q", sdk, err, got)
		}
		// The token of one connection's certificate, presented over a
		// connection of another.
		stolen := tokenFor(t, w, mine)
		req, _ := http.NewRequest(http.MethodPost, w.mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Authorization", "Bearer "+stolen)
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{other}}}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: another certificate: %d %q", sdk, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// newWorldTLS is newWorld with both servers on TLS (ca's), asking for
// client certificates.
func newWorldTLS(t *testing.T, key *ecdsa.PrivateKey, ca *certtest.CA, opts ...func(*issuer.Config)) *world {
	t.Helper()
	start := func() *httptest.Server {
		s := httptest.NewUnstartedServer(nil)
		s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}, ClientAuth: tls.RequestClientCert}
		s.StartTLS()
		t.Cleanup(s.Close)
		return s
	}
	return buildWorld(t, key, start(), start(), opts...)
}

// tokenFor is a token of mcp-all for the world's endpoint, bound to cert.
func tokenFor(t *testing.T, w *world, cert tls.Certificate) string {
	t.Helper()
	cfg := client.Config{ClientID: "mcp-all", ClientSecret: "s3cret-mcp-all", TokenURL: w.iss.TokenURL(), Resources: []string{w.mcpURL},
		Scopes: []string{scope.AdminWebAPI}, Certificate: &cert,
		HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.ids.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}}}
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}
