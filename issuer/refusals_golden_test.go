package issuer_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/limit"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of TestRefusalsGolden")

// The golden issuer is served under this URL whatever the test server's
// address, at this instant, with a signing key from testdata: every
// refusal, its Retry-After and its DPoP-Nonce are the same at every run.
const goldenIssuer = "https://ids.example/ids"

var goldenNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// goldenRequest is one request to one of the three endpoints.
type goldenRequest struct {
	endpoint string   // "token", "introspect" or "revocation"
	method   string   // "" is POST
	ctype    string   // "" is the form type; "-" is none
	body     string   // the form
	header   []string // name, value, ...
	// halfClose sends a Content-Length larger than body, then closes the
	// writing side: the body cannot be read to its end.
	halfClose bool
}

// goldenCase is one or more requests to a fresh issuer of the base
// configuration plus config (members of the top-level object, each led
// by a comma), given opts. Every answer is written to the golden file.
type goldenCase struct {
	name   string
	config string
	opts   func() []issuer.Option
	reqs   func(g *golden) []goldenRequest
}

// golden holds what the cases' requests are built from.
type golden struct {
	t      *testing.T
	signer *keys.Key          // the private_key_jwt client "signer"'s key
	dpop   *clientauth.Signer // a DPoP key
	ca     *certtest.CA       // the CA of the tls_client_auth client "pki"
}

// forwarded is a certificate as nginx forwards it, for the header the
// golden configuration reads from loopback.
func (g *golden) forwarded(c tls.Certificate) []string {
	return []string{"X-SSL-CERT", url.PathEscape(string(certtest.PEM(c.Leaf.Raw)))}
}

// assertion is a private_key_jwt assertion of sub ("signer", or the API
// resource "admin-api"), signed by g.signer, claims changed.
func (g *golden) assertion(sub string, claims map[string]any) string {
	c := map[string]any{"iss": sub, "sub": sub, "aud": goldenIssuer + "/connect/token",
		"iat": goldenNow.Unix(), "exp": goldenNow.Add(time.Minute).Unix(), "jti": rand.Text()}
	for name, v := range claims {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return jwktest.Sign(g.t, g.signer, map[string]any{"typ": nil}, c)
}

func (g *golden) proof(method string, at time.Time, nonce string) string {
	p, err := g.dpop.Proof(method, goldenIssuer+"/connect/token", "", nonce, at)
	if err != nil {
		g.t.Fatal(err)
	}
	return p
}

const (
	goldenSecret    = "admin-secret"
	goldenAPISecret = "api-secret"
)

// goldenConfig is the configuration every case starts from: the clients
// admin (a secret, three audiences), codeonly (no client_credentials),
// signer (private_key_jwt), bound (requireDPoP), ref (reference tokens),
// certbound (certificateBoundTokens), pki (tls_client_auth, CN=pki, of the
// CA in caFile), and the API resource admin-api (a secret, and the key of
// signer); client certificates are forwarded from loopback in X-SSL-CERT.
func goldenConfig(profile, signerJWK, caFile, extra string) string {
	h := func(s string) string { return `["` + secret.HashSHA256(s).String() + `"]` }
	return `{"issuer":"` + goldenIssuer + `","keys":[{"file":"example-es256.pem"}],"profile":"` + profile + `",
 "clients":[
  {"clientId":"admin","secretHashes":` + h(goldenSecret) + `,"scopes":["pd_AdminWebApi"],
   "audience":["` + goldenIssuer + `/resources","https://api.example/orders","urn:example:billing"]},
  {"clientId":"codeonly","secretHashes":` + h(goldenSecret) + `,"scopes":["pd_AdminWebApi"],"grantTypes":["authorization_code"]},
  {"clientId":"signer","publicKeys":[{"jwk":` + signerJWK + `}],"scopes":["pd_AdminWebApi"]},
  {"clientId":"bound","secretHashes":` + h(goldenSecret) + `,"scopes":["pd_AdminWebApi"],"requireDPoP":true},
  {"clientId":"ref","secretHashes":` + h(goldenSecret) + `,"scopes":["pd_AdminWebApi"],"accessTokenType":"reference"},
  {"clientId":"certbound","secretHashes":` + h(goldenSecret) + `,"scopes":["pd_AdminWebApi"],"certificateBoundTokens":true},
  {"clientId":"pki","tlsClientAuth":{"subjectDn":"CN=pki"},"scopes":["pd_AdminWebApi"]}],
 "mtls":{"clientCAs":["` + caFile + `"],"certificateHeader":"X-SSL-CERT","trustedProxies":["127.0.0.0/8","::1"]},
 "apiResources":[{"name":"admin-api","secretHashes":` + h(goldenAPISecret) + `,"publicKeys":[{"jwk":` + signerJWK + `}],"scopes":["pd_AdminWebApi"]}]` + extra + `}`
}

// failingTokens is a token store whose backend is down: every call
// fails, as a shared store's would.
type failingTokens struct{}

var errTokensDown = errors.New("down for the test")

func (failingTokens) Put(context.Context, tokenstore.Key, tokenstore.Grant) error {
	return errTokensDown
}
func (failingTokens) Get(context.Context, tokenstore.Key, time.Time) (tokenstore.Grant, bool, error) {
	return tokenstore.Grant{}, false, errTokensDown
}
func (failingTokens) Revoke(context.Context, tokenstore.Key, string) (bool, error) {
	return false, errTokensDown
}

// TestRefusalsGolden pins every refusal of the token, introspection and
// revocation endpoints, under both profiles: status, the headers that
// matter, and the body, in testdata/refusals-{profile}.golden. Run with
// -update to rewrite them after a change of the wire that is meant.
func TestRefusalsGolden(t *testing.T) {
	g := &golden{t: t, signer: generate("ES256"), dpop: dpopKey(t), ca: certtest.NewCA(t, "golden")}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certtest.PEM(g.ca.Cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	jwk := publicJWK(g.signer.Public(), "")
	for _, profile := range []string{"rfc", "identityserver"} {
		var out strings.Builder
		for _, c := range goldenCases() {
			fmt.Fprintf(&out, "### %s\n", c.name)
			cfg, err := issuer.ParseConfig([]byte(goldenConfig(profile, jwk, caFile, c.config)), "testdata", nil)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			opts := []issuer.Option{issuer.WithClock(func() time.Time { return goldenNow }), issuer.WithLogger(discardLogger)}
			if c.opts != nil {
				opts = append(opts, c.opts()...)
			}
			iss, err := issuer.New(cfg, opts...)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			srv := newGoldenServer(t, iss)
			for _, r := range c.reqs(g) {
				writeAnswer(&out, r, sendGolden(t, srv, r))
			}
			srv.Close()
		}
		file := filepath.Join("testdata", "refusals-"+profile+".golden")
		if *updateGolden {
			if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != string(want) {
			t.Errorf("%s: the answers differ from %s (go test -run TestRefusalsGolden -update rewrites it):\n%s", profile, file, firstDiff(string(want), got))
		}
	}
}

// firstDiff shows the first line where got differs from want, with the
// case it belongs to.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	heading := ""
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if strings.HasPrefix(w, "### ") {
			heading = w
		}
		if w != g {
			return fmt.Sprintf("%s, line %d:\nwant %s\ngot  %s", heading, i+1, w, g)
		}
	}
	return ""
}

var discardLogger = slog.New(slog.DiscardHandler)

// goldenHeaders are the headers of a refusal that the golden files pin.
var goldenHeaders = []string{"Allow", "Cache-Control", "Content-Type", "DPoP-Nonce", "Pragma", "Retry-After", "WWW-Authenticate"}

func writeAnswer(out *strings.Builder, r goldenRequest, resp *http.Response) {
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	fmt.Fprintf(out, "%s %s -> %d\n", method, r.endpoint, resp.StatusCode)
	for _, h := range goldenHeaders {
		for _, v := range resp.Header.Values(h) {
			fmt.Fprintf(out, "%s: %s\n", h, v)
		}
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && r.endpoint == "token":
		out.WriteString("(a token)\n")
	case len(body) > 0:
		out.Write(body)
		if body[len(body)-1] != '\n' {
			out.WriteString("\n")
		}
	}
}

type goldenServer struct {
	url, addr string
	close     func()
}

func (s goldenServer) Close() { s.close() }

func newGoldenServer(t *testing.T, iss *issuer.Issuer) goldenServer {
	mux := http.NewServeMux()
	mux.Handle("/ids/", iss)
	srv := httptest.NewServer(mux)
	return goldenServer{url: srv.URL, addr: srv.Listener.Addr().String(), close: srv.Close}
}

var goldenPaths = map[string]string{"token": "/ids/connect/token", "introspect": "/ids/connect/introspect", "revocation": "/ids/connect/revocation"}

func sendGolden(t *testing.T, srv goldenServer, r goldenRequest) *http.Response {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	if r.halfClose {
		conn, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: ids.example\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", method, goldenPaths[r.endpoint], len(r.body)+100)
		for i := 0; i+1 < len(r.header); i += 2 {
			fmt.Fprintf(conn, "%s: %s\r\n", r.header[i], r.header[i+1])
		}
		fmt.Fprintf(conn, "\r\n%s", r.body)
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		return resp
	}
	req, err := http.NewRequest(method, srv.url+goldenPaths[r.endpoint], strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	switch r.ctype {
	case "":
		req.Header.Set("Content-Type", formType)
	case "-":
	default:
		req.Header.Set("Content-Type", r.ctype)
	}
	for i := 0; i+1 < len(r.header); i += 2 {
		req.Header.Add(r.header[i], r.header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tokenAsk is a client_credentials request's form, kv added.
func tokenAsk(kv ...string) string {
	return form(append([]string{"grant_type", "client_credentials", "scope", "pd_AdminWebApi"}, kv...)...)
}

// principal is who authenticates at an endpoint: a client at the token
// and revocation endpoints, an API resource at introspection.
func principal(endpoint string) (id, pass string) {
	if endpoint == "introspect" {
		return "admin-api", goldenAPISecret
	}
	return "admin", goldenSecret
}

// ask is a request's form at endpoint, kv added: a token request, or a
// request about a token.
func ask(endpoint string, kv ...string) string {
	if endpoint == "token" {
		return tokenAsk(kv...)
	}
	return form(append([]string{"token", "some-reference-token"}, kv...)...)
}

func one(r goldenRequest) func(*golden) []goldenRequest {
	return func(*golden) []goldenRequest { return []goldenRequest{r} }
}

func goldenCases() []goldenCase {
	var cases []goldenCase
	add := func(name, config string, opts func() []issuer.Option, reqs func(*golden) []goldenRequest) {
		cases = append(cases, goldenCase{name: name, config: config, opts: opts, reqs: reqs})
	}
	long := strings.Repeat("x", 101)
	for _, ep := range []string{"token", "introspect", "revocation"} {
		id, pass := principal(ep)
		signed := "signer"
		if ep == "introspect" {
			signed = "admin-api"
		}
		auth := []string{"Authorization", basic(id, pass)}
		inBody := func(kv ...string) string {
			return ask(ep, append([]string{"client_id", id, "client_secret", pass}, kv...)...)
		}
		add(ep+": GET", "", nil, one(goldenRequest{endpoint: ep, method: http.MethodGet, header: auth}))
		add(ep+": PUT with a bad content type", "", nil, one(goldenRequest{endpoint: ep, method: http.MethodPut, ctype: "text/plain", body: inBody()}))
		add(ep+": a JSON body", "", nil, one(goldenRequest{endpoint: ep, ctype: "application/json", body: `{}`, header: auth}))
		add(ep+": a malformed content type", "", nil, one(goldenRequest{endpoint: ep, ctype: "application/x-www-form-urlencoded; =", body: inBody()}))
		add(ep+": no content type", "", nil, one(goldenRequest{endpoint: ep, ctype: "-", body: inBody()}))
		add(ep+": a form with a charset", "", nil, one(goldenRequest{endpoint: ep, ctype: "application/x-www-form-urlencoded; charset=UTF-8", body: ask(ep, "client_id", "nobody", "client_secret", "x")}))
		add(ep+": a body over the bound", `,"limits":{"maxBodyBytes":200}`, nil, one(goldenRequest{endpoint: ep, body: inBody("pad", strings.Repeat("p", 300))}))
		add(ep+": a body that ends early", "", nil, one(goldenRequest{endpoint: ep, body: inBody(), halfClose: true}))
		add(ep+": a semicolon", "", nil, one(goldenRequest{endpoint: ep, body: inBody() + ";x=1"}))
		add(ep+": a bad escape", "", nil, one(goldenRequest{endpoint: ep, body: inBody() + "&x=%zz"}))
		add(ep+": a bad escape after a repeated parameter", "", nil, one(goldenRequest{endpoint: ep, body: inBody("client_id", id) + "&x=%zz"}))
		add(ep+": ten thousand parameters", `,"limits":{"maxBodyBytes":100000}`, nil, one(goldenRequest{endpoint: ep, body: inBody() + strings.Repeat("&a=b", 10000)}))
		add(ep+": a parameter twice", "", nil, one(goldenRequest{endpoint: ep, body: inBody("client_id", id)}))
		add(ep+": another parameter twice", "", nil, one(goldenRequest{endpoint: ep, body: inBody("foo", "1", "foo", "2")}))
		add(ep+": a parameter named with a control character twice", "", nil, one(goldenRequest{endpoint: ep, body: inBody("a\x01b", "1", "a\x01b", "2")}))
		add(ep+": resource twice", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "resource", "https://api.example/orders", "resource", "urn:example:billing"), header: []string{"Authorization", basic("nobody", "x")}}))
		add(ep+": two Authorization headers", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, pass), "Authorization", basic(id, pass)}}))
		add(ep+": Basic that is not base64", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", "Basic !!!"}}))
		add(ep+": Basic without a colon", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", "Basic " + b64(id)}}))
		add(ep+": Basic with a bad escape", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", "Basic " + b64(id+":%zz")}}))
		add(ep+": Basic with an empty ID", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", "Basic " + b64(":"+pass)}}))
		add(ep+": Basic and a body secret", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_secret", pass), header: auth}))
		add(ep+": Basic and another body client_id", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", "other"), header: auth}))
		add(ep+": Basic and the same body client_id, wrong secret", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", id), header: []string{"Authorization", basic(id, "wrong")}}))
		add(ep+": Bearer instead of Basic", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", "Bearer x"}}))
		add(ep+": no credentials", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep)}))
		add(ep+": only a secret in the body", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_secret", pass)}))
		add(ep+": a client ID too long", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", long, "client_secret", "x")}))
		add(ep+": a secret too long", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", id, "client_secret", long)}))
		add(ep+": Basic with a client ID too long", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(long, "x")}}))
		add(ep+": Basic with a secret too long", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, long)}}))
		add(ep+": an unknown client, Basic", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic("nobody", "x")}}))
		add(ep+": an unknown client, in the body", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", "nobody", "client_secret", "x")}))
		add(ep+": a wrong secret, Basic", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, "wrong")}}))
		add(ep+": a wrong secret, in the body", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", id, "client_secret", "wrong")}))
		add(ep+": an empty secret", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_id", id, "client_secret", "")}))
		add(ep+": a wrong secret repeated", "", nil, func(*golden) []goldenRequest {
			r := goldenRequest{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, "wrong")}}
			return []goldenRequest{r, r}
		})
		add(ep+": the client's budget spent", `,"limits":{"failedAttemptsPerClient":1}`, nil, func(*golden) []goldenRequest {
			return []goldenRequest{
				{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, "wrong1")}},
				{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, "wrong2")}},
				{endpoint: ep, body: ask(ep), header: auth},
			}
		})
		add(ep+": the address's budget spent", `,"limits":{"failedAttemptsPerAddress":1}`, nil, func(*golden) []goldenRequest {
			return []goldenRequest{
				{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic(id, "wrong1")}},
				{endpoint: ep, body: ask(ep), header: []string{"Authorization", basic("nobody", "wrong2")}},
			}
		})
		add(ep+": the limiter's store down", "", func() []issuer.Option { return []issuer.Option{issuer.WithLimiterStore(unavailable{})} },
			one(goldenRequest{endpoint: ep, body: ask(ep), header: auth}))
		add(ep+": an assertion and two Authorization headers", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil)), header: []string{"Authorization", "Bearer a", "Authorization", "Bearer b"}}}
		})
		add(ep+": an assertion and Basic", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil)), header: auth}}
		})
		add(ep+": an assertion and a secret", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil), "client_secret", "x")}}
		})
		add(ep+": an assertion of another type", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: ask(ep, "client_assertion_type", "urn:other", "client_assertion", g.assertion(signed, nil))}}
		})
		add(ep+": an assertion type alone", "", nil, one(goldenRequest{endpoint: ep, body: ask(ep, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")}))
		add(ep+": an assertion alone", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: ask(ep, "client_assertion", g.assertion(signed, nil))}}
		})
		add(ep+": an assertion too long", "", nil, one(goldenRequest{endpoint: ep, body: assertionAsk(ep, strings.Repeat("a", 8193))}))
		add(ep+": an assertion with a client ID too long", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil), "client_id", long)}}
		})
		add(ep+": an assertion that is no JWT", "", nil, one(goldenRequest{endpoint: ep, body: assertionAsk(ep, "not-a-jwt")}))
		add(ep+": an assertion for another client_id", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil), "client_id", "codeonly")}}
		})
		add(ep+": an assertion with a bad signature", "", nil, func(g *golden) []goldenRequest {
			a := g.assertion(signed, nil)
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, a[:len(a)-4]+"AAAA")}}
		})
		add(ep+": an assertion of an unknown client", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion("nobody", nil))}}
		})
		add(ep+": an expired assertion", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, map[string]any{"exp": goldenNow.Add(-time.Hour).Unix()}))}}
		})
		add(ep+": an assertion for another audience", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, map[string]any{"aud": "https://elsewhere.example"}))}}
		})
		add(ep+": an assertion without jti", "", nil, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, map[string]any{"jti": nil}))}}
		})
		add(ep+": an assertion replayed", "", nil, func(g *golden) []goldenRequest {
			r := goldenRequest{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil))}
			return []goldenRequest{r, r}
		})
		add(ep+": an assertion with the budget spent", `,"limits":{"failedAttemptsPerClient":1}`, nil, func(g *golden) []goldenRequest {
			return []goldenRequest{
				{endpoint: ep, body: assertionAsk(ep, "bad-1")},
				{endpoint: ep, body: assertionAsk(ep, "bad-2")},
			}
		})
		add(ep+": an assertion whose jti the store has no room for", "", func() []issuer.Option {
			return []issuer.Option{issuer.WithLimiterStore(cannotRemember{&limit.Memory{MaxBytes: 64 << 10}, &limit.Refusal{Limit: limit.Replays, RetryAfter: 90 * time.Second}})}
		}, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil))}}
		})
		add(ep+": an assertion whose jti the store cannot remember", "", func() []issuer.Option {
			return []issuer.Option{issuer.WithLimiterStore(cannotRemember{&limit.Memory{MaxBytes: 64 << 10}, fmt.Errorf("%w: down for the test", limit.ErrUnavailable)})}
		}, func(g *golden) []goldenRequest {
			return []goldenRequest{{endpoint: ep, body: assertionAsk(ep, g.assertion(signed, nil))}}
		})
	}

	// The token endpoint's own.
	auth := []string{"Authorization", basic("admin", goldenSecret)}
	tok := func(body string, header ...string) func(*golden) []goldenRequest {
		return one(goldenRequest{endpoint: "token", body: body, header: header})
	}
	longScope := strings.Repeat("s", 301)
	add("token: grant_type missing", "", nil, tok(form("scope", "pd_AdminWebApi"), auth...))
	add("token: grant_type missing and no credentials", "", nil, tok(form("scope", "pd_AdminWebApi")))
	add("token: grant_type empty", "", nil, tok(form("grant_type", "", "scope", "pd_AdminWebApi"), auth...))
	add("token: another grant", "", nil, tok(form("grant_type", "password", "scope", "pd_AdminWebApi"), auth...))
	add("token: another grant, no credentials", "", nil, tok(form("grant_type", "password")))
	add("token: a scope too long", "", nil, tok(tokenAsk("scope", longScope), auth...))
	add("token: a scope too long and no credentials", "", nil, tok(form("grant_type", "client_credentials", "scope", longScope)))
	add("token: a scope too long and Basic that is not base64", "", nil, tok(form("grant_type", "client_credentials", "scope", longScope), "Authorization", "Basic !!!"))
	add("token: a scope too long and a wrong secret", "", nil, tok(form("grant_type", "client_credentials", "scope", longScope), "Authorization", basic("admin", "wrong")))
	add("token: a scope too long and an assertion", "", nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: form("grant_type", "client_credentials", "scope", longScope, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion", g.assertion("signer", nil))}}
	})
	add("token: a scope too long and an assertion type alone", "", nil, tok(form("grant_type", "client_credentials", "scope", longScope, "client_assertion_type", "urn:other")))
	add("token: a client without client_credentials", "", nil, tok(tokenAsk(), "Authorization", basic("codeonly", goldenSecret)))
	add("token: a client without client_credentials asking a scope it lacks", "", nil, tok(form("grant_type", "client_credentials", "scope", "pd_ConnectWebApi"), "Authorization", basic("codeonly", goldenSecret)))
	add("token: a scope not allowed", "", nil, tok(form("grant_type", "client_credentials", "scope", "pd_ConnectWebApi"), auth...))
	add("token: a scope unknown", "", nil, tok(form("grant_type", "client_credentials", "scope", "openid"), auth...))
	add("token: one scope allowed, one not", "", nil, tok(form("grant_type", "client_credentials", "scope", "pd_AdminWebApi offline_access"), auth...))
	add("token: scope omitted", "", nil, tok(form("grant_type", "client_credentials"), auth...))
	add("token: scope omitted, a resource not allowed", "", nil, tok(form("grant_type", "client_credentials", "resource", "https://elsewhere.example"), auth...))
	add("token: a relative resource", "", nil, tok(tokenAsk("resource", "/orders"), auth...))
	add("token: a resource with a fragment", "", nil, tok(tokenAsk("resource", "https://api.example/orders#x"), auth...))
	add("token: a resource not allowed", "", nil, tok(tokenAsk("resource", "https://elsewhere.example"), auth...))
	add("token: two resources", "", nil, tok(tokenAsk("resource", "https://api.example/orders", "resource", "urn:example:billing"), auth...))
	add("token: two resources, one not allowed", "", nil, tok(tokenAsk("resource", "https://api.example/orders", "resource", "https://elsewhere.example"), auth...))
	add("token: DPoP required, no proof", "", nil, tok(tokenAsk(), "Authorization", basic("bound", goldenSecret)))
	add("token: DPoP required, a wrong scope", "", nil, tok(form("grant_type", "client_credentials", "scope", "pd_ConnectWebApi"), "Authorization", basic("bound", goldenSecret)))
	add("token: two DPoP headers", "", nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, ""), "DPoP", g.proof("POST", goldenNow, ""))}}
	})
	add("token: DPoP required, two DPoP headers", "", nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: []string{"Authorization", basic("bound", goldenSecret), "DPoP", "a", "DPoP", "b"}}}
	})
	add("token: a DPoP proof that is no JWT", "", nil, tok(tokenAsk(), append(auth, "DPoP", "not-a-proof")...))
	add("token: a DPoP proof for GET", "", nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("GET", goldenNow, ""))}}
	})
	add("token: a DPoP proof an hour old", "", nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow.Add(-time.Hour), ""))}}
	})
	add("token: a DPoP proof replayed", "", nil, func(g *golden) []goldenRequest {
		r := goldenRequest{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, ""))}
		return []goldenRequest{r, r}
	})
	add("token: a DPoP proof without the nonce", `,"dpop":{"requireNonce":true}`, nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, ""))}}
	})
	add("token: a DPoP proof with a made-up nonce", `,"dpop":{"requireNonce":true}`, nil, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, "made-up"))}}
	})
	add("token: a DPoP proof whose jti the store cannot remember", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithLimiterStore(cannotRemember{&limit.Memory{MaxBytes: 64 << 10}, fmt.Errorf("%w: down for the test", limit.ErrUnavailable)})}
	}, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, ""))}}
	})
	add("token: a DPoP proof whose jti the store has no room for", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithLimiterStore(cannotRemember{&limit.Memory{MaxBytes: 64 << 10}, &limit.Refusal{Limit: limit.Replays, RetryAfter: 30 * time.Second}})}
	}, func(g *golden) []goldenRequest {
		return []goldenRequest{{endpoint: "token", body: tokenAsk(), header: append(auth, "DPoP", g.proof("POST", goldenNow, ""))}}
	})
	add("token: a reference token the store cannot keep", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithTokenStore(failingTokens{})}
	}, tok(tokenAsk(), "Authorization", basic("ref", goldenSecret)))
	add("token: a reference token the store has no room for", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithTokenStore(&tokenstore.Memory{MaxBytes: 1})}
	}, tok(tokenAsk(), "Authorization", basic("ref", goldenSecret)))

	// Mutual TLS (RFC 8705), the certificates forwarded as from a proxy.
	add("token: a certificate-bound client without a certificate", "", nil, tok(tokenAsk(), "Authorization", basic("certbound", goldenSecret)))
	add("token: tls_client_auth without a certificate", "", nil, one(goldenRequest{endpoint: "token", body: tokenAsk("client_id", "pki")}))
	add("token: tls_client_auth with a certificate of no CA", "", nil, func(g *golden) []goldenRequest {
		c := certtest.SelfSigned(g.t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki"}, NotBefore: goldenNow.Add(-time.Hour), NotAfter: goldenNow.Add(time.Hour)})
		return []goldenRequest{{endpoint: "token", body: tokenAsk("client_id", "pki"), header: g.forwarded(c)}}
	})
	add("token: tls_client_auth with an expired certificate", "", nil, func(g *golden) []goldenRequest {
		c := g.ca.Issue(g.t, certtest.Leaf{Subject: pkix.Name{CommonName: "pki"}, NotBefore: goldenNow.Add(-2 * time.Hour), NotAfter: goldenNow.Add(-time.Hour)})
		return []goldenRequest{{endpoint: "token", body: tokenAsk("client_id", "pki"), header: g.forwarded(c)}}
	})
	add("token: tls_client_auth with another subject's certificate", "", nil, func(g *golden) []goldenRequest {
		c := g.ca.Issue(g.t, certtest.Leaf{Subject: pkix.Name{CommonName: "other"}, NotBefore: goldenNow.Add(-time.Hour), NotAfter: goldenNow.Add(time.Hour)})
		return []goldenRequest{{endpoint: "token", body: tokenAsk("client_id", "pki"), header: g.forwarded(c)}}
	})

	// Introspection's and revocation's own.
	add("introspect: token missing", "", nil, one(goldenRequest{endpoint: "introspect", body: form("token_type_hint", "access_token"), header: []string{"Authorization", basic("admin-api", goldenAPISecret)}}))
	add("introspect: token missing, wrong secret", "", nil, one(goldenRequest{endpoint: "introspect", body: form("token_type_hint", "access_token"), header: []string{"Authorization", basic("admin-api", "wrong")}}))
	add("introspect: a client is no API resource", "", nil, one(goldenRequest{endpoint: "introspect", body: ask("introspect"), header: []string{"Authorization", basic("admin", goldenSecret)}}))
	add("introspect: the token store down", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithTokenStore(failingTokens{})}
	}, one(goldenRequest{endpoint: "introspect", body: ask("introspect"), header: []string{"Authorization", basic("admin-api", goldenAPISecret)}}))
	add("revocation: token missing", "", nil, one(goldenRequest{endpoint: "revocation", body: form("token_type_hint", "access_token"), header: auth}))
	add("revocation: token missing, wrong secret", "", nil, one(goldenRequest{endpoint: "revocation", body: form("token_type_hint", "access_token"), header: []string{"Authorization", basic("admin", "wrong")}}))
	add("revocation: an API resource is no client", "", nil, one(goldenRequest{endpoint: "revocation", body: ask("revocation"), header: []string{"Authorization", basic("admin-api", goldenAPISecret)}}))
	add("revocation: the token store down", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithTokenStore(failingTokens{})}
	}, one(goldenRequest{endpoint: "revocation", body: ask("revocation"), header: auth}))
	add("revocation: a JWT, the token store down", "", func() []issuer.Option {
		return []issuer.Option{issuer.WithTokenStore(failingTokens{})}
	}, one(goldenRequest{endpoint: "revocation", body: form("token", "a.b.c"), header: auth}))
	return cases
}

// assertionAsk is a private_key_jwt request's form at endpoint, kv added.
func assertionAsk(endpoint, assertion string, kv ...string) string {
	return ask(endpoint, append([]string{"client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion", assertion}, kv...)...)
}
