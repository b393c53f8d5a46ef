package conformance

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/accesstoken"
	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
)

// TestSeams' values of workload identities (issue 42): a client
// authenticated by a workload's token, an OIDC issuer's or a JWT-SVID of
// a SPIFFE trust domain (by a bundle file; for the cases of reference
// tokens, so that both kinds meet every other value but the kind); what
// may happen to that issuer after the token was issued: its key rotated,
// its token reused, the issuer down; and a place that checks JWTs by the
// issuer's JWKS URL, over HTTPS, by the fetching rules the issuer's
// federation shares. Each case has a workload issuer of its own, trusted
// by the file while the case runs, so that one case's rotation or outage
// touches no other. (One authentication value for both kinds: an event
// of the registry alone has one case per place, and so room for as many
// authentications as there are places.)

const (
	workloadToken authn = "a workload's token"
	atJWKSAPI     place = "an API checking JWTs by the JWKS URL"

	workloadKeyRotated event = "its workload issuer's key rotated"
	workloadReused     event = "its workload token reused"
	workloadDown       event = "its workload issuer down"
)

// workload reports whether a client authenticates with a workload's token.
func (a authn) workload() bool { return a == workloadToken }

// svid reports whether c's workload token is a JWT-SVID (else an OIDC
// issuer's).
func (c seamCase) svid() bool { return c.kind == referenceToken }

// workload reports whether e happens to a client's workload issuer.
func (e event) workload() bool {
	return e == workloadKeyRotated || e == workloadReused || e == workloadDown
}

// seamWorkload is a case's workload issuer and the token it gave.
type seamWorkload struct {
	svid    bool
	oidc    *jwktest.JWKS // the OIDC issuer's discovery and JWKS
	bundle  string        // the trust domain's bundle file
	td      string
	subject string
	key     *keys.Key
	tok     string // the token the workload holds, reused until renewed
	trusted issuer.TrustedIssuerConfig
}

// newWorkload gives cl a workload issuer of its own and the federated
// credential that names its workload.
func (f *fleet) newWorkload(t *testing.T, cl *seamClient, svid bool) {
	w := &seamWorkload{svid: svid, key: jwktest.NewKey(t, "ES256")}
	name := strings.ToLower(strings.ReplaceAll(cl.id, "/", "-"))
	if svid {
		w.td = name + ".seams.test"
		w.subject = "spiffe://" + w.td + "/ns/seams/" + name
		w.bundle = filepath.Join(t.TempDir(), "bundle.json")
		w.publish(t)
		w.trusted = issuer.TrustedIssuerConfig{Kind: "spiffe", TrustDomain: w.td, BundleFile: w.bundle}
		cl.cc.FederatedCredentials = []issuer.FederatedCredential{{Subject: "spiffe://" + w.td + "/ns/seams/*"}}
	} else {
		w.oidc = jwktest.NewJWKS(t, w.key)
		w.subject = "repo:seams/" + name + ":ref:refs/heads/main"
		w.trusted = issuer.TrustedIssuerConfig{Issuer: w.oidc.Issuer(), Kind: "oidc"}
		cl.cc.FederatedCredentials = []issuer.FederatedCredential{{Issuer: w.oidc.Issuer(), Subject: w.subject}}
	}
	cl.workload = w
}

// publish publishes w's key: in the JWKS, or in the bundle file.
func (w *seamWorkload) publish(t *testing.T) {
	t.Helper()
	if !w.svid {
		w.oidc.SetKeys(w.key)
		return
	}
	j := w.key.PublicJWK()
	b, _ := json.Marshal(map[string]any{"spiffe_sequence": 1, "keys": []any{map[string]any{"kty": j.Kty, "crv": j.Crv, "x": j.X, "y": j.Y, "kid": j.Kid, "use": "jwt-svid"}}})
	if err := os.WriteFile(w.bundle, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// assertion is the token the workload holds: minted once and reused, as
// a projected token or an SVID is, until renew.
func (w *seamWorkload) assertion(t *testing.T) string {
	if w.tok == "" {
		now := time.Now()
		c := map[string]any{"sub": w.subject, "aud": []string{seamIssuer + "/connect/token"}, "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
		if !w.svid {
			c["iss"], c["jti"] = w.oidc.Issuer(), rand.Text()
		}
		w.tok = jwktest.Sign(t, w.key, map[string]any{"typ": "JWT"}, c)
	}
	return w.tok
}

// happenToWorkload makes a workload event happen to cl's issuer.
func (f *fleet) happenToWorkload(t *testing.T, c seamCase, cl *seamClient) {
	w := cl.workload
	switch c.event {
	case workloadKeyRotated:
		w.key, w.tok = jwktest.NewKey(t, "ES256"), "" // the next token is signed by the new key alone
		w.publish(t)
	case workloadReused:
		// The token of the first request is the one the next sends.
	case workloadDown:
		if w.svid {
			if err := os.Remove(w.bundle); err != nil {
				t.Fatal(err)
			}
		} else {
			w.oidc.SetDown(true)
		}
	default:
		t.Fatalf("no workload event %q", c.event)
	}
}

// trustedIssuers are the workload issuers of the cases under way.
func (f *fleet) trustedIssuers() []issuer.TrustedIssuerConfig {
	var out []issuer.TrustedIssuerConfig
	for _, ti := range f.trusted {
		out = append(out, ti)
	}
	return out
}

// federatedJSON is cl's federated credentials as the file writes them.
func federatedJSON(cc issuer.ClientConfig) []map[string]string {
	var out []map[string]string
	for _, fc := range cc.FederatedCredentials {
		m := map[string]string{"subject": fc.Subject}
		if fc.Issuer != "" {
			m["issuer"] = fc.Issuer
		}
		out = append(out, m)
	}
	return out
}

// byJWKSURL is a validator that fetches the issuer's JWKS from replica
// 0's JWKS URL over HTTPS (accesstoken.NewJWKS).
func (f *fleet) byJWKSURL(t *testing.T) *accesstoken.Validator {
	t.Helper()
	keys, err := accesstoken.NewJWKS(t.Context(), accesstoken.JWKSConfig{URL: seamIssuer + "/.well-known/openid-configuration/jwks",
		HTTPClient: &http.Client{Transport: f.transport(0, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := accesstoken.New(t.Context(), accesstoken.Config{Issuer: seamIssuer, Audience: []string{seamIssuer + "/resources"}, Keys: keys, Leeway: -1})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
