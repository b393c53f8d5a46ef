package issuer_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/internal/testlog"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// Secrets of the test clients. They hold characters that Basic
// credentials must form-urlencode.
const (
	adminSecret   = "adm:in%2B+secret/=="
	connectSecret = "connect-secret"
)

// testConfig returns a configuration for issuerURL with an ephemeral key
// and three clients: admin (pd_AdminWebApi), connect (pd_ConnectWebApi)
// and codeonly, which may not use client_credentials.
func testConfig(issuerURL string) *issuer.Config {
	return &issuer.Config{
		Issuer:       issuerURL,
		EphemeralKey: true,
		Clients: []issuer.ClientConfig{
			{ClientID: "admin", SecretHashes: []string{secret.HashSHA256(adminSecret).String()}, Scopes: []string{scope.AdminWebAPI}},
			{ClientID: "connect", SecretHashes: []string{secret.HashSHA256(connectSecret).String()}, Scopes: []string{scope.ConnectWebAPI, scope.AdminWebAPI}, AccessTokenLifetime: 600},
			{ClientID: "codeonly", SecretHashes: []string{secret.HashSHA256("x").String()}, GrantTypes: []string{"authorization_code"}, Scopes: []string{scope.AdminWebAPI}},
		},
	}
}

type server struct {
	*httptest.Server
	iss  *issuer.Issuer
	logs *testlog.Buffer
}

func (s *server) issuerURL() string { return s.URL + "/ids" }
func (s *server) tokenURL() string  { return s.URL + "/ids/connect/token" }

// newServer mounts an issuer, logging to s.logs, on a loopback server;
// edit may change the configuration first, and opts are New's after the
// logger.
func newServer(t *testing.T, edit func(*issuer.Config), opts ...issuer.Option) *server {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL + "/ids")
	logs, logger := testlog.New()
	if edit != nil {
		edit(cfg)
	}
	iss, err := issuer.New(cfg, append([]issuer.Option{issuer.WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)
	return &server{Server: srv, iss: iss, logs: logs}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// post sends a token request; form is the raw body.
func post(t *testing.T, url, contentType, form string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

const formType = "application/x-www-form-urlencoded"

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}

// basic returns a Basic Authorization value with both parts
// form-urlencoded, as RFC 6749 §2.3.1 says.
func basic(id, pass string) string {
	return "Basic " + b64(url.QueryEscape(id)+":"+url.QueryEscape(pass))
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
