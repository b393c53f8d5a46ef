package conformance

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/oauth2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/idsauth/idsauth/client"
	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/internal/clientauth"
	"github.com/idsauth/idsauth/internal/clientcert"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

// seamClient is the client a case registers, the same whatever its
// source, and what it holds.
type seamClient struct {
	id     string
	cc     issuer.ClientConfig // as the file holds it
	secret string              // client_secret_*
	key    *ecdsa.PrivateKey   // private_key_jwt
	cert   *tls.Certificate    // presented: its credential, or the certificate its tokens are bound to
	dpop   *ecdsa.PrivateKey   // its tokens are bound to this key
	// workload is its workload's issuer and token (seams_workload_test.go)
	workload *seamWorkload
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newClient makes the client of c: every scope, the kind of token, the
// credential of its way to authenticate, the binding.
func (f *fleet) newClient(t *testing.T, c seamCase) *seamClient {
	f.mu.Lock()
	f.n++
	cl := &seamClient{id: fmt.Sprintf("Seam/%03d", f.n)} // a path must escape it
	f.mu.Unlock()
	cl.cc = issuer.ClientConfig{ClientID: cl.id, Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}}
	if c.kind == referenceToken {
		cl.cc.AccessTokenType = "reference"
	}
	if c.event == tokenExpired {
		cl.cc.AccessTokenLifetime = 3 * time.Second
	}
	switch c.authn {
	case secretBasic, secretPost:
		cl.secret = rand.Text()
		cl.cc.SecretHashes = []string{secret.HashSHA256(cl.secret).String()}
	case keyJWT:
		cl.key = newKey(t)
		j, err := keys.PublicJWKOf(cl.key.Public())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(j)
		cl.cc.PublicKeys = []issuer.ClientKeyConfig{{JWK: b}}
	case tlsAuth:
		uri := "spiffe://seams.test/" + strings.ToLower(cl.id)
		cert := f.ca.Issue(t, certtest.Leaf{URIs: []string{uri}})
		cl.cert, cl.cc.TLSClientAuth = &cert, issuer.TLSClientAuth{SANURI: uri}
	case selfSigned:
		cert := certtest.SelfSigned(t, certtest.Leaf{})
		cl.cert, cl.cc.CertificateThumbprints = &cert, []string{clientcert.Thumbprint(cert.Leaf.Raw)}
	case workloadToken:
		f.newWorkload(t, cl, c.svid())
	}
	switch c.binding {
	case dpopBound:
		cl.dpop = newKey(t)
	case certBound:
		if cl.cert == nil {
			cert := certtest.SelfSigned(t, certtest.Leaf{})
			cl.cert, cl.cc.CertificateBoundTokens = &cert, true
		}
	}
	return cl
}

// registration is cl as the administration API takes it: the file's JSON
// of one client.
func (cl *seamClient) registration(withSecrets bool) []byte {
	cc := cl.cc
	m := map[string]any{"clientId": cc.ClientID, "scopes": cc.Scopes}
	if cc.AccessTokenType != "" {
		m["accessTokenType"] = cc.AccessTokenType
	}
	if cc.AccessTokenLifetime != 0 {
		m["accessTokenLifetime"] = int(cc.AccessTokenLifetime / time.Second)
	}
	if len(cc.SecretHashes) > 0 && withSecrets {
		m["secretHashes"] = cc.SecretHashes
	}
	if len(cc.PublicKeys) > 0 {
		m["publicKeys"] = []map[string]json.RawMessage{{"jwk": cc.PublicKeys[0].JWK}}
	}
	if cc.TLSClientAuth.SANURI != "" {
		m["tlsClientAuth"] = map[string]string{"sanUri": cc.TLSClientAuth.SANURI}
	}
	if len(cc.CertificateThumbprints) > 0 {
		m["certificateThumbprints"] = cc.CertificateThumbprints
	}
	if cc.CertificateBoundTokens {
		m["certificateBoundTokens"] = true
	}
	if len(cc.FederatedCredentials) > 0 {
		m["federatedCredentials"] = federatedJSON(cc)
	}
	b, _ := json.Marshal(m)
	return b
}

// issuing and checking are the replicas that issue and check c's token.
func (c seamCase) issuing() int {
	if c.store == memoryStore {
		return 2
	}
	return 0
}

func (c seamCase) checking() int {
	switch c.store {
	case memoryStore:
		return 2
	case redisOther:
		return 1
	}
	return 0
}

// run runs one case.
func (f *fleet) run(t *testing.T, c seamCase) {
	cl := f.newClient(t, c)
	f.register(t, c, cl)
	defer f.unregister(t, c, cl)
	tok := f.token(t, c, cl)
	if got, want := f.check(t, c, cl, tok), expect(c, false); got != want {
		t.Errorf("before the event: %s, want %s", got, want)
	}
	f.happen(t, c, cl, tok)
	if got, want := f.check(t, c, cl, tok), expect(c, true); got != want {
		t.Errorf("after %q: %s, want %s", c.event, got, want)
	}
	if fresh(c) {
		if got := f.check(t, c, cl, f.token(t, c, cl)); got != ok {
			t.Errorf("a token issued after %q: %s, want %s", c.event, got, ok)
		}
	}
}

// register registers cl where c says. A registration of its credentials
// gets no secret it did not ask for; the same ID in other capitals is
// refused 409, whoever holds it, and with a line end 400.
func (f *fleet) register(t *testing.T, c seamCase, cl *seamClient) {
	t.Helper()
	if cl.workload != nil {
		f.reload(t, func() { f.trusted[cl.id] = cl.workload.trusted })
	}
	if c.source == fromFile {
		f.reload(t, func() { f.file[cl.id] = cl.cc })
	} else if a := f.admin(t, http.MethodPost, "/clients", cl.registration(true), http.StatusCreated); a["secret"] != nil {
		t.Errorf("a client registered with its credential (%s) got a secret too", c.authn)
	}
	other := *cl
	other.cc.ClientID = strings.ToLower(cl.id)
	f.admin(t, http.MethodPost, "/clients", other.registration(true), http.StatusConflict)
	if c.source == fromRegistry {
		other.cc.ClientID = cl.id + "\n"
		f.admin(t, http.MethodPost, "/clients", other.registration(true), http.StatusBadRequest)
	}
}

func (f *fleet) unregister(t *testing.T, c seamCase, cl *seamClient) {
	if c.event == adminRemoved {
		f.reload(t, func() { f.operator = true })
	}
	if c.source == fromFile {
		f.reload(t, func() { delete(f.file, cl.id); delete(f.trusted, cl.id) })
		return
	}
	if c.event != removed {
		f.admin(t, http.MethodDelete, "/clients/"+url.PathEscape(cl.id), nil, http.StatusNoContent)
	}
	if cl.workload != nil {
		f.reload(t, func() { delete(f.trusted, cl.id) })
	}
}

// happen makes c's event happen to cl, whose token is tok.
func (f *fleet) happen(t *testing.T, c seamCase, cl *seamClient, tok *oauth2.Token) {
	t.Helper()
	one := "/clients/" + url.PathEscape(cl.id)
	registry := c.source == fromRegistry
	switch c.event {
	case disabled:
		f.admin(t, http.MethodPost, one+"/disable", nil, http.StatusOK)
	case enabledAgain:
		f.admin(t, http.MethodPost, one+"/disable", nil, http.StatusOK)
		f.admin(t, http.MethodPost, one+"/enable", nil, http.StatusOK)
	case removed:
		if registry {
			f.admin(t, http.MethodDelete, one, nil, http.StatusNoContent)
		} else {
			f.reload(t, func() { delete(f.file, cl.id) })
		}
	case reRegistered: // the same registration again, its secret too
		if registry {
			f.admin(t, http.MethodDelete, one, nil, http.StatusNoContent)
			f.admin(t, http.MethodPost, "/clients", cl.registration(true), http.StatusCreated)
		} else {
			f.reload(t, func() { delete(f.file, cl.id) })
			f.reload(t, func() { f.file[cl.id] = cl.cc })
		}
	case secretDropped:
		if registry {
			a := f.admin(t, http.MethodPost, one+"/rotate-secret", []byte(`{"keepPrevious": false}`), http.StatusOK)
			cl.secret, _ = a["secret"].(string)
		} else {
			cl.secret = rand.Text()
			cl.cc.SecretHashes = []string{secret.HashSHA256(cl.secret).String()}
			f.reload(t, func() { f.file[cl.id] = cl.cc })
		}
	case scopeTaken:
		cl.cc.Scopes = []string{scope.AdminWebAPI}
		if registry {
			f.admin(t, http.MethodPut, one, cl.registration(false), http.StatusOK)
		} else {
			f.reload(t, func() { f.file[cl.id] = cl.cc })
		}
	case fileReloaded:
		f.reload(t, func() {})
	case workloadKeyRotated, workloadReused, workloadDown:
		f.happenToWorkload(t, c, cl)
	case adminRemoved:
		op := f.operatorToken(t)
		// An API resource that would be told of the administrator's
		// tokens is refused.
		f.admin(t, http.MethodPost, "/apiresources", []byte(`{"name": "seams-admin-api", "secretHashes": ["`+secret.HashSHA256("x").String()+`"], "scopes": ["idsauth_admin"]}`), http.StatusBadRequest)
		f.reload(t, func() { f.operator = false })
		if st := f.adminWith(t, op, http.MethodGet, "/clients", nil); st != http.StatusUnauthorized {
			t.Errorf("the removed administrator's token at the administration API: %d, want 401", st)
		}
	case tokenExpired:
		var ended <-chan streamEnd
		if expect(c, false) == ok && (c.place == atGRPC || c.place == atConnect) {
			ended = f.openStream(t, c, cl, tok)
		}
		time.Sleep(time.Until(tok.Expiry) + time.Second)
		if ended == nil {
			return
		}
		// A stream opened before its token expired ends at the expiry,
		// Unauthenticated (issue 39: it was served on).
		select {
		case e := <-ended:
			if e.code != codes.Unauthenticated || e.at.Before(tok.Expiry.Add(-1500*time.Millisecond)) {
				t.Errorf("a stream opened before its token expired ended %v at %v, want Unauthenticated at the expiry, about %v", e.code, e.at.Format(time.StampMilli), tok.Expiry.Format(time.StampMilli))
			}
		case <-time.After(2 * time.Second):
			t.Errorf("a stream opened before its token expired (at about %v) is still served", tok.Expiry.Format(time.StampMilli))
		}
	}
}

// streamEnd is how and when a stream ended.
type streamEnd struct {
	code codes.Code
	at   time.Time
}

// openStream opens a stream at c's place (gRPC or Connect) with tok,
// reads its first message, and reports, once, how it ends.
func (f *fleet) openStream(t *testing.T, c seamCase, cl *seamClient, tok *oauth2.Token) <-chan streamEnd {
	t.Helper()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok.AccessToken), 30*time.Second)
	t.Cleanup(cancel)
	ended := make(chan streamEnd, 1)
	i := c.checking()
	if c.place == atGRPC {
		conn := f.grpcConn(t, i, cl)
		w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		if err != nil {
			t.Fatalf("the stream's first message: %v", err)
		}
		go func() {
			for err == nil {
				_, err = w.Recv()
			}
			ended <- streamEnd{status.Code(err), time.Now()}
		}()
		return ended
	}
	rc := connect.NewClient[emptypb.Empty, emptypb.Empty](&http.Client{Transport: f.transport(0, cl.cert)}, fmt.Sprintf("%s/r%d%s", f.connect.URL, i, watchProc))
	req := connect.NewRequest(&emptypb.Empty{})
	req.Header().Set("Authorization", "Bearer "+tok.AccessToken)
	s, err := rc.CallServerStream(ctx, req)
	if err != nil || !s.Receive() {
		t.Fatalf("the stream's first message: %v %v", err, s.Err())
	}
	go func() {
		for s.Receive() {
		}
		ended <- streamEnd{codes.Code(connect.CodeOf(s.Err())), time.Now()}
	}()
	return ended
}

// token asks the issuing replica for a token of cl.
func (f *fleet) token(t *testing.T, c seamCase, cl *seamClient) *oauth2.Token {
	t.Helper()
	cfg := client.Config{ClientID: cl.id, TokenURL: seamIssuer + "/connect/token", Scopes: cl.cc.Scopes,
		HTTPClient: &http.Client{Transport: f.transport(c.issuing(), nil)}}
	switch c.authn {
	case secretBasic:
		cfg.ClientSecret = cl.secret
	case secretPost:
		cfg.ClientSecret, cfg.AuthStyle = cl.secret, oauth2.AuthStyleInParams
	case keyJWT:
		cfg.Key = cl.key
	case workloadToken:
		cfg.AssertionFunc = func(context.Context) (string, error) { return cl.workload.assertion(t), nil }
		if c.svid() {
			cfg.AssertionType = client.AssertionJWTSPIFFE
		}
	}
	cfg.Certificate = cl.cert
	if cl.dpop != nil {
		cfg.DPoPKey = cl.dpop
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tok, err := cfg.TokenSource(ctx).Token()
	if err != nil {
		t.Fatalf("token of %s: %v", cl.id, err)
	}
	return tok
}

// check presents tok at c's place, as its client does, and says what the
// place answers.
func (f *fleet) check(t *testing.T, c seamCase, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	i := c.checking()
	switch c.place {
	case atIssuer:
		return f.introspect(t, i, tok.AccessToken)
	case atLocalAPI:
		return f.callAPI(t, "/local", cl, tok)
	case atJWKSAPI:
		return f.callAPI(t, "/jwks", cl, tok)
	case atIntrospector:
		return f.callAPI(t, fmt.Sprintf("/intro/%d", i), cl, tok)
	case atGRPC:
		return f.callGRPC(t, i, cl, tok)
	case atMCP:
		return f.callMCP(t, i, cl, tok)
	case atGate:
		return f.callGate(t, i, cl, tok)
	}
	return f.callConnect(t, i, cl, tok)
}

func (f *fleet) introspect(t *testing.T, i int, token string) outcome {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.replicas[i].srv.URL+"/ids/connect/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("seams-api", seamAPISecret)
	var a struct {
		Active bool   `json:"active"`
		Scope  string `json:"scope"`
	}
	if st := f.do(t, &http.Client{Transport: f.transport(i, nil)}, req, &a); st != http.StatusOK {
		t.Fatalf("introspection at replica %d: %d", i, st)
	}
	switch {
	case !a.Active:
		return dead
	case !slices.Contains(strings.Fields(a.Scope), scope.ConnectWebAPI):
		return noScope
	}
	return ok
}

// authorize gives req cl's token tok as cl sends it: a DPoP-bound one
// with a proof of req's method and URL, any other as a bearer token.
func (cl *seamClient) authorize(t *testing.T, req *http.Request, tok *oauth2.Token) {
	t.Helper()
	if cl.dpop == nil || !strings.EqualFold(tok.TokenType, "DPoP") {
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return
	}
	s, err := clientauth.NewSigner(cl.dpop, "", "")
	if err != nil {
		t.Fatal(err)
	}
	proof, err := s.Proof(req.Method, req.URL.String(), tok.AccessToken, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	req.Header.Set("DPoP", proof)
}

// callAPI calls the API at path with tok, a DPoP proof for a DPoP-bound
// one, over a connection that presents the client's certificate.
func (f *fleet) callAPI(t *testing.T, path string, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, seamAPI+path, nil)
	cl.authorize(t, req, tok)
	switch st := f.do(t, &http.Client{Transport: f.transport(0, cl.cert)}, req, nil); st {
	case http.StatusOK:
		return ok
	case http.StatusUnauthorized:
		return dead
	case http.StatusForbidden:
		return noScope
	default:
		t.Fatalf("GET %s: %d", path, st)
		return ""
	}
}

// grpcConn is a connection to the gRPC server of replica i, presenting
// the client's certificate, closed with the test.
func (f *fleet) grpcConn(t *testing.T, i int, cl *seamClient) *grpc.ClientConn {
	t.Helper()
	tc := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "grpc.seams.test"}
	if cl.cert != nil {
		tc.Certificates = []tls.Certificate{*cl.cert}
	}
	conn, err := grpc.NewClient(f.grpc[i], grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func (f *fleet) callGRPC(t *testing.T, i int, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	conn := f.grpcConn(t, i, cl)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok.AccessToken), 10*time.Second)
	defer cancel()
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return rpcOutcome(t, status.Code(err), codes.Unauthenticated, codes.PermissionDenied, err)
}

func (f *fleet) callConnect(t *testing.T, i int, cl *seamClient, tok *oauth2.Token) outcome {
	t.Helper()
	hc := &http.Client{Transport: f.transport(0, cl.cert)}
	rc := connect.NewClient[emptypb.Empty, emptypb.Empty](hc, fmt.Sprintf("%s/r%d%s", f.connect.URL, i, checkProc))
	req := connect.NewRequest(&emptypb.Empty{})
	req.Header().Set("Authorization", "Bearer "+tok.AccessToken)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := rc.CallUnary(ctx, req)
	code := codes.OK
	if err != nil {
		code = codes.Code(connect.CodeOf(err))
	}
	return rpcOutcome(t, code, codes.Unauthenticated, codes.PermissionDenied, err)
}

// rpcOutcome reads an RPC's code as a check's outcome.
func rpcOutcome(t *testing.T, code, unauthenticated, denied codes.Code, err error) outcome {
	t.Helper()
	switch code {
	case codes.OK:
		return ok
	case unauthenticated:
		return dead
	case denied:
		return noScope
	}
	t.Fatalf("the call: %v", err)
	return ""
}

// operatorToken is a token of the administrator, from replica 0.
func (f *fleet) operatorToken(t *testing.T) string {
	t.Helper()
	cfg := client.Config{ClientID: "operator", ClientSecret: seamOperator, TokenURL: seamIssuer + "/connect/token",
		Scopes: []string{"idsauth_admin"}, Resources: []string{seamIssuer + "/admin"}, HTTPClient: &http.Client{Transport: f.transport(0, nil)}}
	tok, err := cfg.TokenSource(t.Context()).Token()
	if err != nil {
		t.Fatalf("the administrator's token: %v", err)
	}
	return tok.AccessToken
}

// admin makes a change through replica 0's administration API, expecting
// want, and waits until every replica has loaded it; it returns the
// answer.
func (f *fleet) admin(t *testing.T, method, path string, body []byte, want int) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, f.replicas[0].srv.URL+"/ids/admin"+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.operatorToken(t))
	req.Header.Set("Content-Type", "application/json")
	var a map[string]any
	if st := f.do(t, &http.Client{Transport: f.transport(0, nil)}, req, &a); st != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, st, a, want)
	}
	gen := f.replicas[0].reg.Status().Generation
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		behind := false
		for _, r := range f.replicas {
			behind = behind || r.reg.Status().Generation < gen
		}
		if !behind {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("a replica has not loaded generation %d", gen)
		}
	}
}

// adminWith calls the administration API with the token tok and returns
// the status.
func (f *fleet) adminWith(t *testing.T, tok, method, path string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(method, f.replicas[0].srv.URL+"/ids/admin"+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	return f.do(t, &http.Client{Transport: f.transport(0, nil)}, req, nil)
}

// do sends req and decodes a JSON answer into v (nil: none).
func (f *fleet) do(t *testing.T, hc *http.Client, req *http.Request, v any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := hc.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && len(b) > 0 {
		_ = json.Unmarshal(b, v)
	}
	return resp.StatusCode
}
