package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// mtlsWorld is an issuer and an API on one TLS server that asks for
// client certificates: the client "svc" authenticates with one of the CA
// (tls_client_auth, CN=svc), "sec" with a secret and gets tokens bound
// to its certificate.
type mtlsWorld struct {
	srv       *httptest.Server
	ca        *certtest.CA
	tokenReqs atomic.Int64
}

func newMTLSWorld(t *testing.T) *mtlsWorld {
	t.Helper()
	w := &mtlsWorld{ca: certtest.NewCA(t, "clients")}
	mux := http.NewServeMux()
	w.srv = httptest.NewUnstartedServer(mux)
	w.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	admin := []string{scope.AdminWebAPI}
	iss, err := issuer.New(&issuer.Config{
		Issuer: w.srv.URL + "/ids", Keys: []issuer.KeyConfig{{Key: newKey(t)}},
		MTLS: issuer.MTLSConfig{ClientCACerts: []*x509.Certificate{w.ca.Cert}},
		Clients: []issuer.ClientConfig{
			{ClientID: "svc", TLSClientAuth: issuer.TLSClientAuth{SubjectDN: "CN=svc"}, Scopes: admin},
			{ClientID: "sec", SecretHashes: []string{secret.HashSHA256("s3cret").String()}, CertificateBoundTokens: true, Scopes: admin},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := accesstoken.New(context.Background(), accesstoken.Config{Issuer: iss.URL(), Audience: []string{iss.URL() + "/resources"}, Keys: iss})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.tokenReqs.Add(1)
		iss.ServeHTTP(rw, r)
	}))
	mux.Handle("/api", middleware.RequireBearer(v)(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, _ := accesstoken.ClaimsFrom(r.Context())
		_ = json.NewEncoder(rw).Encode(map[string]string{"client": c.ClientID, "x5t": c.X5T})
	})))
	return w
}

// config is a client of w presenting cert, as svc (no secret) or sec.
func (w *mtlsWorld) config(id string, cert *tls.Certificate) client.Config {
	cfg := client.Config{ClientID: id, BaseURL: w.srv.URL, Scopes: []string{scope.AdminWebAPI}, Certificate: cert, HTTPClient: w.srv.Client()}
	if id == "sec" {
		cfg.ClientSecret = "s3cret"
	}
	return cfg
}

func callAPI(t *testing.T, hc *http.Client, u string) (int, map[string]string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestClientCertificate: a client with a certificate and no secret
// authenticates with it (RFC 8705 §2), gets a token bound to it, and
// presents it on its calls, which pass; a client with a secret presents
// it too, and its bound token works the same. The token is useless over
// a connection that presents another certificate.
func TestClientCertificate(t *testing.T) {
	w := newMTLSWorld(t)
	svc := w.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "svc"}})
	for _, id := range []string{"svc", "sec"} {
		cfg := w.config(id, &svc)
		code, body := callAPI(t, cfg.Client(context.Background()), w.srv.URL+"/api")
		if code != 200 || body["client"] != id || body["x5t"] == "" {
			t.Errorf("%s: %d %v", id, code, body)
		}
	}
	// The token, taken to a connection with another certificate.
	cfg := w.config("svc", &svc)
	tok, err := cfg.TokenSource(context.Background()).Token()
	if err != nil {
		t.Fatal(err)
	}
	other := certtest.SelfSigned(t, certtest.Leaf{})
	tr := w.srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{other}
	req, _ := http.NewRequest(http.MethodGet, w.srv.URL+"/api", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "another client certificate") {
		t.Errorf("the token over another certificate's connection: %d %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestClientGetCertificate: a certificate given by a callback is asked
// for at each handshake.
func TestClientGetCertificate(t *testing.T) {
	w := newMTLSWorld(t)
	svc := w.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "svc"}})
	var asked atomic.Int64
	cfg := w.config("svc", nil)
	cfg.GetCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Add(1)
		return &svc, nil
	}
	if code, body := callAPI(t, cfg.Client(context.Background()), w.srv.URL+"/api"); code != 200 || body["client"] != "svc" || asked.Load() == 0 {
		t.Errorf("%d %v, asked %d times", code, body, asked.Load())
	}
}

// TestClientCertificateMisconfigured: a certificate cannot be presented
// through a transport that is no *http.Transport, nor given twice: every
// token request fails, saying why, and none is sent.
func TestClientCertificateMisconfigured(t *testing.T) {
	w := newMTLSWorld(t)
	svc := w.ca.Issue(t, certtest.Leaf{Subject: pkix.Name{CommonName: "svc"}})
	custom := w.config("svc", &svc)
	custom.HTTPClient = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) { return w.srv.Client().Transport.RoundTrip(r) })}
	both := w.config("svc", &svc)
	both.GetCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &svc, nil }
	for name, cfg := range map[string]client.Config{"a custom transport": custom, "both": both} {
		_, err := cfg.TokenSource(context.Background()).Token()
		var te *client.TokenError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "Certificate") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := w.tokenReqs.Load(); n != 0 {
		t.Errorf("%d token requests sent", n)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
