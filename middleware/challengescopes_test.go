package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idsauth/idsauth/idsauthtest"
	"github.com/idsauth/idsauth/middleware"
	"github.com/idsauth/idsauth/scope"
)

// An MCP client chooses the scopes of its token request from the 401's
// scope attribute (MCP authorization, scope selection): every 401
// names BearerConfig.ChallengeScopes, a 403 the route's own.
func TestChallengeScopes(t *testing.T) {
	ids := idsauthtest.NewIssuer(t)
	protect := middleware.RequireBearerWithConfig(ids.Validator(), middleware.BearerConfig{
		ChallengeScopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI},
		DPoP:            newDPoP(t, middleware.DPoPConfig{PublicURL: "http://127.0.0.1"}),
	})
	api := httptest.NewServer(protect(middleware.RequireScope(scope.ConnectWebAPI)(http.NotFoundHandler())))
	defer api.Close()
	both := `scope="pd_AdminWebApi pd_ConnectWebApi"`
	for _, c := range []struct {
		name, authz string
		status      int
		want        []string
	}{
		{"no token", "", 401, []string{`Bearer realm="idsauth", ` + both, `DPoP realm="idsauth", algs="ES256 RS256 PS256 EdDSA Ed25519", ` + both}},
		{"a bad token", "Bearer x.y.z", 401, []string{`Bearer realm="idsauth", error="invalid_token", error_description="token is malformed", ` + both}},
		{"two tokens", "Bearer a b", 400, []string{`Bearer realm="idsauth", error="invalid_request", error_description="bearer token contains a space", ` + both}},
		{"the other scope", "Bearer " + ids.Token(t, scope.AdminWebAPI), 403, []string{`Bearer realm="idsauth", error="insufficient_scope", error_description="token lacks the scope this API requires", scope="pd_ConnectWebApi"`}},
	} {
		r := dcall(t, api.URL+"/x", c.authz)
		if r.status != c.status || len(r.challenge) != len(c.want) {
			t.Fatalf("%s: %d %q", c.name, r.status, r.challenge)
		}
		for i := range c.want {
			if r.challenge[i] != c.want[i] {
				t.Errorf("%s: challenge %d\n got %s\nwant %s", c.name, i, r.challenge[i], c.want[i])
			}
		}
	}
}
