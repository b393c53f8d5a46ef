package conformance

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/idsauth/idsauth/internal/certtest"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// Workload tokens in the exact shapes their issuers give them, minted by
// go-jose (another JOSE library than the issuer's) behind an HTTPS
// discovery server of the test's own. Where each shape is specified:
//
//   - Kubernetes projected service-account tokens: the TokenRequest API
//     (kubernetes.io/docs, "Service account token volume projection"),
//     claims as k8s.io/kubernetes pkg/serviceaccount/claims.go writes them:
//     RS256 with kid, aud an array, sub system:serviceaccount:NS:NAME, the
//     "kubernetes.io" object (namespace, node, pod, serviceaccount), jti
//     and nbf; its JWKS at /openid/v1/jwks.
//   - AWS STS GetWebIdentityToken (outbound identity federation, the STS
//     API reference): ES384 (or RS256), sub a role's ARN, aud a string,
//     the claims of AWS under "https://sts.amazonaws.com/", jti; its JWKS
//     at /.well-known/jwks.json of an issuer of the account's own.
//   - GitHub Actions OIDC tokens (docs.github.com, "About security
//     hardening with OpenID Connect"): RS256 with x5t beside kid, sub
//     repo:OWNER/REPO:ref:REF, aud a string, numeric IDs as strings; its
//     JWKS at /.well-known/jwks.
//
// FOREIGN-FACTS.md (shared/) records these shapes as found.

// foreignIssuer is one issuer of workload tokens: its discovery document
// and JWKS over TLS, a signing key a test may rotate.
type foreignIssuer struct {
	srv      *httptest.Server
	path     string // the issuer URL's path
	jwksPath string
	alg      jose.SignatureAlgorithm

	mu  sync.Mutex
	key crypto.Signer
	kid string
	x5t bool // the header carries x5t (GitHub's)
}

func newForeignIssuer(t *testing.T, ca *certtest.CA, path, jwksPath string, alg jose.SignatureAlgorithm, x5t bool) *foreignIssuer {
	t.Helper()
	f := &foreignIssuer{path: path, jwksPath: jwksPath, alg: alg, x5t: x5t}
	f.rotate(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path+"/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": f.issuer(), "jwks_uri": f.srv.URL + jwksPath,
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{string(alg)}})
	})
	mux.HandleFunc("GET "+jwksPath, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: f.key.Public(), KeyID: f.kid, Algorithm: string(alg), Use: "sig"}}}
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

func (f *foreignIssuer) issuer() string { return f.srv.URL + f.path }

// rotate gives the issuer a new signing key, under a new kid.
func (f *foreignIssuer) rotate(t *testing.T) {
	t.Helper()
	var key crypto.Signer
	var err error
	switch f.alg {
	case jose.ES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	default:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key, f.kid = key, rand.Text()[:16]
}

// mint signs claims with go-jose, in the issuer's header shape.
func (f *foreignIssuer) mint(t *testing.T, claims map[string]any) string {
	t.Helper()
	f.mu.Lock()
	key, kid := f.key, f.kid
	f.mu.Unlock()
	opts := (&jose.SignerOptions{}).WithHeader("kid", kid)
	if f.x5t {
		sum := sha1.Sum([]byte(kid)) // GitHub's x5t names its certificate; the value is never read here
		opts = opts.WithType("JWT").WithHeader("x5t", base64.RawURLEncoding.EncodeToString(sum[:]))
	} else if f.alg == jose.ES384 {
		opts = opts.WithType("JWT")
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: f.alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := josejwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestWorkloadTokenShapes: a Kubernetes projected token, an AWS STS web
// identity token and a GitHub Actions token, each in its exact shape,
// authenticate the client whose federated credential names them, at an
// issuer that fetches each one's keys by discovery over TLS; the GitHub
// one also by the JWT bearer grant; each issuer's key rotated is taken
// without a reload; each token at another client, or another audience,
// is refused.
func TestWorkloadTokenShapes(t *testing.T) {
	ca := certtest.NewCA(t, "foreign")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certtest.PEM(ca.Cert.Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	k8s := newForeignIssuer(t, ca, "/k8s", "/openid/v1/jwks", jose.RS256, false)
	aws := newForeignIssuer(t, ca, "/aws", "/aws/.well-known/jwks.json", jose.ES384, false)
	gh := newForeignIssuer(t, ca, "/gh", "/gh/.well-known/jwks", jose.RS256, true)
	mux := http.NewServeMux()
	ids := httptest.NewServer(mux)
	t.Cleanup(ids.Close)
	tokenURL := ids.URL + "/ids/connect/token"
	const (
		saSub   = "system:serviceaccount:payments:ledger"
		roleARN = "arn:aws:iam::123456789012:role/reporting"
		repoSub = "repo:octo-org/octo-repo:ref:refs/heads/main"
		ghAud   = "https://github.com/octo-org"
	)
	cfg := &issuer.Config{
		Issuer: ids.URL + "/ids", EphemeralKey: true, ScopeWhenOmitted: "all",
		TrustedIssuers: []issuer.TrustedIssuerConfig{
			{Issuer: k8s.issuer(), Kind: "kubernetes", CAFile: caFile, MaxTokenLifetime: time.Hour},
			{Issuer: aws.issuer(), Kind: "oidc", CAFile: caFile, Audience: []string{"https://ids.example/aws"}},
			{Issuer: gh.issuer(), Kind: "oidc", CAFile: caFile, Audience: []string{ghAud}, JWTBearerGrant: true, Scopes: []string{scope.ConnectWebAPI}},
		},
		Clients: []issuer.ClientConfig{
			{ClientID: "ledger", Scopes: []string{scope.AdminWebAPI}, FederatedCredentials: []issuer.FederatedCredential{{Issuer: k8s.issuer(), Subject: saSub}}},
			{ClientID: "reporting", Scopes: []string{scope.AdminWebAPI}, FederatedCredentials: []issuer.FederatedCredential{{Issuer: aws.issuer(), Subject: roleARN}}},
			{ClientID: "deploy", Scopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}, GrantTypes: []string{"client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
				FederatedCredentials: []issuer.FederatedCredential{{Issuer: gh.issuer(), Subject: repoSub}}},
		},
	}
	iss, err := issuer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/ids/", iss)

	tokens := map[string]func() string{
		"ledger": func() string {
			now := time.Now()
			return k8s.mint(t, map[string]any{
				"aud": []string{tokenURL}, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Unix(),
				"iss": k8s.issuer(), "jti": rand.Text(), "sub": saSub,
				"kubernetes.io": map[string]any{"namespace": "payments",
					"node":           map[string]any{"name": "node-1", "uid": "6f5b1a9e-0000-4000-8000-000000000001"},
					"pod":            map[string]any{"name": "ledger-7d4b9c", "uid": "6f5b1a9e-0000-4000-8000-000000000002"},
					"serviceaccount": map[string]any{"name": "ledger", "uid": "6f5b1a9e-0000-4000-8000-000000000003"}},
			})
		},
		"reporting": func() string {
			now := time.Now()
			return aws.mint(t, map[string]any{
				"aud": "https://ids.example/aws", "sub": roleARN, "iss": aws.issuer(), "iat": now.Unix(), "exp": now.Add(15 * time.Minute).Unix(),
				"jti": rand.Text(),
				"https://sts.amazonaws.com/": map[string]any{"aws_account": "123456789012", "source_region": "eu-west-1",
					"org_id": "o-aa111bb222", "principal_id": "arn:aws:iam::123456789012:role/reporting"},
			})
		},
		"deploy": func() string {
			now := time.Now()
			return gh.mint(t, map[string]any{
				"jti": rand.Text(), "sub": repoSub, "aud": ghAud, "ref": "refs/heads/main", "sha": "d6e4f1c0a1b2c3d4e5f60718293a4b5c6d7e8f90",
				"repository": "octo-org/octo-repo", "repository_owner": "octo-org", "repository_owner_id": "65",
				"run_id": "8901234567", "run_number": "42", "run_attempt": "1", "repository_visibility": "private",
				"repository_id": "74", "actor_id": "12", "actor": "octocat", "workflow": "deploy", "head_ref": "", "base_ref": "",
				"event_name": "push", "ref_protected": "true", "ref_type": "branch",
				"workflow_ref":       "octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main",
				"job_workflow_ref":   "octo-org/octo-repo/.github/workflows/deploy.yml@refs/heads/main",
				"runner_environment": "github-hosted", "iss": gh.issuer(),
				"nbf": now.Add(-5 * time.Second).Unix(), "exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(),
			})
		},
	}
	ask := func(client, assertion string) (int, string) {
		v := url.Values{"grant_type": {"client_credentials"}, "client_id": {client},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}
		return postToken(t, tokenURL, v)
	}
	for _, client := range []string{"ledger", "reporting", "deploy"} {
		if st, body := ask(client, tokens[client]()); st != 200 {
			t.Errorf("%s's token: %d %s", client, st, body)
		}
	}
	for client, other := range map[string]string{"ledger": "reporting", "reporting": "deploy", "deploy": "ledger"} {
		if st, _ := ask(other, tokens[client]()); st != 401 {
			t.Errorf("%s's token for %s: %d, want 401", client, other, st)
		}
	}
	// Another audience: the AWS token minted for another relying party.
	now := time.Now()
	elsewhere := aws.mint(t, map[string]any{"aud": "https://other.example", "sub": roleARN, "iss": aws.issuer(), "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": rand.Text()})
	if st, _ := ask("reporting", elsewhere); st != 401 {
		t.Errorf("an AWS token for another audience: %d, want 401", st)
	}
	// The JWT bearer grant, with the GitHub token as the grant.
	st, body := postToken(t, tokenURL, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {tokens["deploy"]()}})
	if st != 200 || !strings.Contains(body, `"scope":"`+scope.ConnectWebAPI+`"`) {
		t.Errorf("the jwt-bearer grant: %d %s, want pd_ConnectWebApi alone", st, body)
	}
	// Each issuer rotates its key: the next token is taken, no reload.
	for _, f := range []*foreignIssuer{k8s, aws, gh} {
		f.rotate(t)
	}
	for _, client := range []string{"ledger", "reporting", "deploy"} {
		if st, body := ask(client, tokens[client]()); st != 200 {
			t.Errorf("%s's token after its issuer's rotation: %d %s", client, st, body)
		}
	}
}

// postToken posts v to u and returns the status and the body.
func postToken(t *testing.T, u string, v url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
