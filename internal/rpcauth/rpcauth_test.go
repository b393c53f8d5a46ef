package rpcauth_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/idsauth/idsauth/internal/rpcauth"
	"github.com/idsauth/idsauth/scope"
)

// TestNewPolicyRefusesBadSettings: a setting that could never do what it
// says fails at construction, naming the field.
func TestNewPolicyRefusesBadSettings(t *testing.T) {
	admin := []string{scope.AdminWebAPI}
	cases := []struct {
		name string
		cfg  rpcauth.Config
		want string
	}{
		{"a name without a slash", rpcauth.Config{Scopes: map[string][]string{"pkg.Service/Method": admin}}, "not a full method name"},
		{"a method with two slashes", rpcauth.Config{Scopes: map[string][]string{"/pkg.Service/a/b": admin}}, "not a full method name"},
		{"an empty service", rpcauth.Config{Scopes: map[string][]string{"//Method": admin}}, "not a full method name"},
		{"a method without scopes", rpcauth.Config{Scopes: map[string][]string{"/pkg.Service/Method": {}}}, "no scope"},
		{"empty default scopes", rpcauth.Config{DefaultScopes: []string{}}, "DefaultScopes: no scope"},
		{"a scope misspelt in case", rpcauth.Config{Scopes: map[string][]string{"/pkg.Service/Method": {"pd_AdminWebAPI"}}}, "only in case"},
		{"a scope with a space", rpcauth.Config{DefaultScopes: []string{"a b"}}, "not a scope name"},
		{"a scope with a quote", rpcauth.Config{DefaultScopes: []string{`a"b`}}, "not a scope name"},
		{"a scope with a backslash", rpcauth.Config{DefaultScopes: []string{`a\b`}}, "not a scope name"},
		{"a method both public and scoped", rpcauth.Config{Public: []string{"/pkg.Service/Method"}, Scopes: map[string][]string{"/pkg.Service/Method": admin}}, "named twice"},
		{"health public twice", rpcauth.Config{PublicHealth: true, Public: []string{rpcauth.HealthService}}, "named twice"},
	}
	for _, c := range cases {
		_, err := rpcauth.NewPolicy("x.Config", c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.Config.") {
			t.Errorf("%s: %v, want an error of x.Config holding %q", c.name, err, c.want)
		}
	}
}

// scopesOnly is a Validator whose "token" is its space-separated scopes:
// the policy's own logic, apart from any token format (the modules' tests
// run it with real tokens).
type scopesOnly struct{}

func (scopesOnly) Validate(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	return ctx, scope.Parse(strings.ReplaceAll(token, ",", " ")), time.Time{}, nil
}
func (scopesOnly) Reason(err error) string { return "reason" }

// TestAdmitOrder: a public method passes without a token; an exact
// method's rule comes before its service's, and a service's before the
// default; a method named nowhere is refused with a valid token when
// there is no default (fail closed), and takes the default otherwise.
func TestAdmitOrder(t *testing.T) {
	closed, err := rpcauth.NewPolicy("x", rpcauth.Config{
		Scopes: map[string][]string{
			"/pkg.Admin/":        {scope.AdminWebAPI},
			"/pkg.Admin/Connect": {scope.ConnectWebAPI},
		},
		Public:           []string{"/pkg.Open/Hello"},
		PublicHealth:     true,
		PublicReflection: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	open, err := rpcauth.NewPolicy("x", rpcauth.Config{DefaultScopes: []string{scope.ConnectWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(tok string) []string { return []string{"Bearer " + tok} }
	cases := []struct {
		p      *rpcauth.Policy
		method string
		authz  []string
		want   string // "" admitted, else the message
	}{
		{closed, "/pkg.Open/Hello", nil, ""},
		{closed, "/pkg.Open/Other", bearer(scope.AdminWebAPI), rpcauth.NotConfiguredMessage},
		{closed, "/grpc.health.v1.Health/Check", nil, ""},
		{closed, "/grpc.health.v1.Health/Watch", nil, ""},
		{closed, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", nil, ""},
		{closed, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", nil, ""},
		{closed, "/pkg.Admin/Users", nil, rpcauth.NoTokenMessage},
		{closed, "/pkg.Admin/Users", bearer(scope.AdminWebAPI), ""},
		{closed, "/pkg.Admin/Users", bearer(scope.ConnectWebAPI), "insufficient_scope: pd_AdminWebApi"},
		{closed, "/pkg.Admin/Connect", bearer(scope.ConnectWebAPI), ""},
		{closed, "/pkg.Admin/Connect", bearer(scope.AdminWebAPI), "insufficient_scope: pd_ConnectWebApi"},
		{closed, "/pkg.Admin/Users", []string{"Bearer a", "Bearer a"}, "invalid_request: reason"},
		{closed, "/pkg.Admin/Users", []string{"Bearer a b"}, "invalid_request: reason"},
		{closed, "/pkg.Admin/Users", []string{"Basic a"}, rpcauth.NoTokenMessage},
		{open, "/any.Service/Method", bearer(scope.ConnectWebAPI), ""},
		{open, "/any.Service/Method", bearer(scope.AdminWebAPI), "insufficient_scope: pd_ConnectWebApi"},
		{open, "/grpc.health.v1.Health/Check", nil, rpcauth.NoTokenMessage},
	}
	for _, c := range cases {
		_, ref := c.p.Admit(context.Background(), c.method, c.authz, scopesOnly{})
		got := ""
		if ref != nil {
			got = ref.Message
		}
		if got != c.want {
			t.Errorf("%s with %q: %q, want %q", c.method, c.authz, got, c.want)
		}
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:50051": true, "127.1.2.3": true, "[::1]:443": true, "::1": true, "localhost:8080": true, "LOCALHOST": true,
		"10.0.0.1:50051": false, "example.com:443": false, "localhost.example.com": false, "": false, "[::]:1": false, "0.0.0.0:1": false,
	} {
		if got := rpcauth.Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %t, want %t", host, got, want)
		}
	}
}

// TestIsInvalidToken: a client retries on the ErrorInfo of an invalid
// token, this module's alone; not on no token, nor a scope's refusal.
func TestIsInvalidToken(t *testing.T) {
	p, err := rpcauth.NewPolicy("x", rpcauth.Config{DefaultScopes: []string{scope.ConnectWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	metadataOf := func(authz ...string) map[string]string {
		_, ref := p.Admit(context.Background(), "/a.B/C", authz, scopesOnly{})
		_, metadata := ref.Info()
		return metadata
	}
	_, expired := rpcauth.Expired().Info()
	for _, tc := range []struct {
		name     string
		domain   string
		metadata map[string]string
		want     bool
	}{
		{"expired", rpcauth.Domain, expired, true},
		{"another domain's", "example.com", expired, false},
		{"no token", rpcauth.Domain, metadataOf(), false},
		{"insufficient scope", rpcauth.Domain, metadataOf("Bearer " + scope.AdminWebAPI), false},
		{"a malformed header", rpcauth.Domain, metadataOf("Bearer a b"), false},
	} {
		if got := rpcauth.IsInvalidToken(tc.domain, tc.metadata); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestChallenge: the WWW-Authenticate of each refusal, as RFC 6750 §3
// writes it: bare for no token.
func TestChallenge(t *testing.T) {
	p, err := rpcauth.NewPolicy("x", rpcauth.Config{DefaultScopes: []string{scope.AdminWebAPI, scope.ConnectWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	for authz, want := range map[string]string{
		"":           `Bearer realm="r"`,
		"Bearer a b": `Bearer realm="r", error="invalid_request", error_description="reason"`,
		"Bearer x,y": `Bearer realm="r", error="insufficient_scope", scope="pd_AdminWebApi pd_ConnectWebApi"`,
	} {
		var values []string
		if authz != "" {
			values = []string{authz}
		}
		_, ref := p.Admit(context.Background(), "/a.B/C", values, scopesOnly{})
		if ref == nil || ref.Challenge("r") != want {
			t.Errorf("%q: %+v, want the challenge %s", authz, ref, want)
		}
	}
}

// TestInfo: the ErrorInfo of each refusal holds the challenge's
// parameters (none for no token) and the reason in upper snake case.
func TestInfo(t *testing.T) {
	p, err := rpcauth.NewPolicy("x", rpcauth.Config{DefaultScopes: []string{scope.AdminWebAPI}})
	if err != nil {
		t.Fatal(err)
	}
	for authz, want := range map[string]struct {
		reason   string
		metadata map[string]string
	}{
		"":           {"NO_TOKEN", nil},
		"Bearer a b": {"REASON", map[string]string{"error": "invalid_request", "error_description": "reason"}},
		"Bearer x":   {"INSUFFICIENT_SCOPE", map[string]string{"error": "insufficient_scope", "scope": "pd_AdminWebApi"}},
	} {
		var values []string
		if authz != "" {
			values = []string{authz}
		}
		_, ref := p.Admit(context.Background(), "/a.B/C", values, scopesOnly{})
		reason, metadata := ref.Info()
		if reason != want.reason || !maps.Equal(metadata, want.metadata) {
			t.Errorf("%q: %s %v, want %s %v", authz, reason, metadata, want.reason, want.metadata)
		}
	}
}

// expiring is scopesOnly whose tokens expire at exp.
type expiring struct {
	scopesOnly
	exp time.Time
}

func (e expiring) Validate(ctx context.Context, token string) (context.Context, scope.Set, time.Time, error) {
	ctx, scopes, _, err := e.scopesOnly.Validate(ctx, token)
	return ctx, scopes, e.exp, err
}

// TestAdmitUntil: the admission holds until the token's expiry; never
// for a public method, a refusal, or a token without one.
func TestAdmitUntil(t *testing.T) {
	p, err := rpcauth.NewPolicy("x", rpcauth.Config{DefaultScopes: []string{scope.AdminWebAPI}, Public: []string{"/a.B/Open"}})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Minute)
	admin := []string{"Bearer " + scope.AdminWebAPI}
	for _, c := range []struct {
		name   string
		method string
		authz  []string
		v      rpcauth.Validator
		want   time.Time
	}{
		{"admitted", "/a.B/C", admin, expiring{exp: exp}, exp},
		{"a token without expiry", "/a.B/C", admin, scopesOnly{}, time.Time{}},
		{"public", "/a.B/Open", nil, expiring{exp: exp}, time.Time{}},
		{"refused", "/a.B/C", []string{"Bearer " + scope.ConnectWebAPI}, expiring{exp: exp}, time.Time{}},
	} {
		if _, until, _ := p.AdmitUntil(context.Background(), c.method, c.authz, c.v); !until.Equal(c.want) {
			t.Errorf("%s: until %v, want %v", c.name, until, c.want)
		}
	}
	if r := rpcauth.Expired(); r.Kind != rpcauth.InvalidToken || r.Message != "invalid_token: expired" {
		t.Errorf("Expired: %+v", r)
	}
}
