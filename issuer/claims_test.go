package issuer_test

import (
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/idsauth/idsauth/internal/jwktest"
	"github.com/idsauth/idsauth/internal/keys"
	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
)

// signRaw signs payload, a JSON text written as it is, with k: a token no
// JSON encoder would write (a member twice, say).
func signRaw(t *testing.T, k *keys.Key, payload string) string {
	t.Helper()
	input := jwktest.Segment(map[string]string{"alg": k.Alg, "kid": k.KID}) + "." + jwktest.Segment(payload)
	sig, err := jwt.GetSigningMethod(k.Alg).Sign(input, k.Private)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + jwktest.Segment(string(sig))
}

// TestAssertionClaimsAreReadExactly: a client assertion's claims are read
// by the one claims reader: names matched exactly, a member named twice
// refuses the assertion (the reader that took the first and the one that
// took the last would disagree), and null is absent.
func TestAssertionClaimsAreReadExactly(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { withMachineClients(c) })
	now := time.Now().Unix()
	payload := func(extra string) string {
		return fmt.Sprintf(`{"iss":"signer","aud":%q,"iat":%d,"exp":%d,"jti":%q%s}`, s.tokenURL(), now, now+60, rand.Text(), extra)
	}
	cases := []struct {
		name   string
		claims string
		status int
	}{
		{"every claim once", payload(`,"sub":"signer"`), 200},
		{"a null nbf is no nbf", payload(`,"sub":"signer","nbf":null`), 200},
		{"sub twice, the last the client", payload(`,"sub":"other","sub":"signer"`), 401},
		{"sub twice, the first the client", payload(`,"sub":"signer","sub":"other"`), 401},
		{"sub twice, one of them escaped", payload(`,"sub":"signer","\u0073ub":"signer"`), 401},
		{"SUB is not sub", payload(`,"SUB":"signer"`), 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := post(t, s.tokenURL(), formType, assertionForm(signRaw(t, signerKey(), tc.claims), "scope", scope.AdminWebAPI))
			if a.status != tc.status {
				t.Fatalf("%d %s, want %d", a.status, a.raw, tc.status)
			}
		})
	}
}

// TestAssertionAlgorithmsAreWhatDiscoveryLists: every name discovery lists
// in token_endpoint_auth_signing_alg_values_supported is accepted in an
// assertion's header, RFC 9864's Ed25519 beside EdDSA, and discovery
// lists every name the check takes.
func TestAssertionAlgorithmsAreWhatDiscoveryLists(t *testing.T) {
	s := newServer(t, func(c *issuer.Config) { withMachineClients(c) })
	d := do(t, mustRequest(t, "GET", s.issuerURL()+"/.well-known/openid-configuration"))
	listed, _ := d.body["token_endpoint_auth_signing_alg_values_supported"].([]any)
	byAlg := map[string]struct {
		key    *keys.Key
		client string
	}{"ES256": {signerKey(), "signer"}, "EdDSA": {edKey(), "ed"}, "Ed25519": {edKey(), "ed"}, "PS256": {pssKey(), "pss"}}
	var names []string
	for _, v := range listed {
		alg, _ := v.(string)
		names = append(names, alg)
		c, ok := byAlg[alg]
		if !ok {
			continue // RS256: no client of the test holds an RSA key for it
		}
		sc := scope.AdminWebAPI
		if c.client == "pss" {
			sc = scope.ConnectWebAPI
		}
		a := post(t, s.tokenURL(), formType, assertionForm(assertionFor(t, c.key, c.client, s.tokenURL(), nil, map[string]any{"alg": alg}), "scope", sc))
		if a.status != 200 {
			t.Errorf("an assertion signed as %s, which discovery lists: %d %s", alg, a.status, a.raw)
		}
	}
	if !slices.Contains(names, "Ed25519") || !slices.Contains(names, "EdDSA") {
		t.Fatalf("discovery lists %v: both names of EdDSA are accepted", names)
	}
}
