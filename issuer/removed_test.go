package issuer_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
)

const bothAPISec = "both-api-secret"

// withTwoScopeAPIs is withReference, and a reference client "ref-both"
// with both scopes, and an API resource "both-api" with both scopes: an
// introspection answer that shows which of a token's scopes remain.
func withTwoScopeAPIs(c *issuer.Config) {
	withReference(c)
	c.Clients = append(c.Clients, issuer.ClientConfig{ClientID: "ref-both", SecretHashes: []string{secret.HashSHA256(refSecret).String()},
		Scopes: []string{scope.ConnectWebAPI, scope.AdminWebAPI}, AccessTokenType: "reference"})
	c.APIResources = append(c.APIResources, issuer.APIResourceConfig{Name: "both-api", SecretHashes: []string{secret.HashSHA256(bothAPISec).String()},
		Scopes: []string{scope.ConnectWebAPI, scope.AdminWebAPI}})
}

// apiSecrets are the secrets of withTwoScopeAPIs' API resources.
var apiSecrets = map[string]string{"admin-api": adminAPISec, "connect-api": connectAPISec, "both-api": bothAPISec}

// TestReloadEndsWhatTheClientNoLongerHolds: after a reload that removes
// a client, takes client_credentials or a scope from it, or changes the
// kind of its tokens, introspection answers exactly {"active":false} for
// its tokens, reference tokens and this issuer's JWTs alike, and never a
// scope the client no longer holds, in the answer of the endpoint and of
// IntrospectToken; they stayed active, with every scope, until their exp.
// A reload that leaves the client as it was changes nothing.
func TestReloadEndsWhatTheClientNoLongerHolds(t *testing.T) {
	both := []string{scope.ConnectWebAPI, scope.AdminWebAPI}
	for _, c := range []struct {
		name   string
		client string
		pass   string
		scopes []string
		// edit changes the client in the new configuration; nil removes it.
		edit func(*issuer.ClientConfig)
		// want is each API's answer's scope after the reload; "" is inactive.
		want map[string]string
	}{
		{"removed, a reference token", "ref-both", refSecret, both, nil,
			map[string]string{"both-api": "", "admin-api": "", "connect-api": ""}},
		{"removed, a JWT", "connect", connectSecret, both, nil,
			map[string]string{"both-api": "", "admin-api": "", "connect-api": ""}},
		{"a scope taken, a reference token", "ref-both", refSecret, both, func(cc *issuer.ClientConfig) { cc.Scopes = []string{scope.ConnectWebAPI} },
			map[string]string{"both-api": scope.ConnectWebAPI, "admin-api": "", "connect-api": scope.ConnectWebAPI}},
		{"a scope taken, a JWT", "connect", connectSecret, both, func(cc *issuer.ClientConfig) { cc.Scopes = []string{scope.AdminWebAPI} },
			map[string]string{"both-api": scope.AdminWebAPI, "admin-api": scope.AdminWebAPI, "connect-api": ""}},
		{"reference turned jwt", "ref-both", refSecret, both, func(cc *issuer.ClientConfig) { cc.AccessTokenType = "jwt" },
			map[string]string{"both-api": "", "admin-api": "", "connect-api": ""}},
		{"jwt turned reference", "connect", connectSecret, both, func(cc *issuer.ClientConfig) { cc.AccessTokenType = "reference" },
			map[string]string{"both-api": "", "admin-api": "", "connect-api": ""}},
		{"client_credentials taken", "admin", adminSecret, []string{scope.AdminWebAPI}, func(cc *issuer.ClientConfig) { cc.GrantTypes = []string{"authorization_code"} },
			map[string]string{"both-api": "", "admin-api": ""}},
		{"unchanged (a new secret added)", "ref-both", refSecret, both, func(cc *issuer.ClientConfig) {
			cc.SecretHashes = append(cc.SecretHashes, secret.HashSHA256("next-secret").String())
		}, map[string]string{"both-api": strings.Join(both, " "), "admin-api": scope.AdminWebAPI, "connect-api": scope.ConnectWebAPI}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, withTwoScopeAPIs)
			tok := referenceToken(t, s, c.client, c.pass, c.scopes...)
			if a := introspect(t, s, "both-api", bothAPISec, tok); a.body["active"] != true || !sameScopes(a.body["scope"], strings.Join(c.scopes, " ")) {
				t.Fatalf("before the reload: %s", a.raw)
			}
			cfg := testConfig(s.issuerURL())
			withTwoScopeAPIs(cfg)
			i := slices.IndexFunc(cfg.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == c.client })
			if c.edit == nil {
				cfg.Clients = slices.Delete(cfg.Clients, i, i+1)
			} else {
				c.edit(&cfg.Clients[i])
			}
			if err := s.iss.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			for api, want := range c.want {
				a := introspect(t, s, api, apiSecrets[api], tok)
				local, err := s.iss.IntrospectToken(context.Background(), api, tok)
				if err != nil || string(local) != a.raw {
					t.Errorf("%s: IntrospectToken answers %s (%v), the endpoint %s", api, local, err, a.raw)
				}
				switch {
				case want == "" && a.raw != `{"active":false}`+"\n":
					t.Errorf("%s: %d %s, want exactly inactive", api, a.status, a.raw)
				case want != "" && (a.body["active"] != true || !sameScopes(a.body["scope"], want) || a.body["client_id"] != c.client):
					t.Errorf("%s: %d %s, want active with scope %q", api, a.status, a.raw, want)
				}
			}
		})
	}
}

// sameScopes reports whether the answer's scope holds the scopes of want,
// in any order (a JWT's in the client's, a reference token's as asked).
func sameScopes(got any, want string) bool {
	s, _ := got.(string)
	a, b := strings.Fields(s), strings.Fields(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
