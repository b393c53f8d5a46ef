package issuer_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// The red-team pass over issue 32, item 1: what a reload takes from a
// client must be gone from every introspection answer. These tests try
// the ways around it, each a regression guard; those named for a finding
// (F1, F2) failed before it was fixed.

const inactiveAnswer = `{"active":false}` + "\n"

// tokenFor asks for a token with Basic credentials and the form kv, and
// returns its access_token, failing the test on anything but 200.
func tokenFor(t *testing.T, s *server, id, pass string, kv ...string) string {
	t.Helper()
	a := post(t, s.tokenURL(), formType, form(append([]string{"grant_type", "client_credentials"}, kv...)...), "Authorization", basic(id, pass))
	tok, _ := a.body["access_token"].(string)
	if a.status != 200 || tok == "" {
		t.Fatalf("token for %q: %d %s", id, a.status, a.raw)
	}
	return tok
}

// reload applies edit to a fresh configuration of s (withTwoScopeAPIs
// first) and reloads it.
func reload(t *testing.T, s *server, edit func(*issuer.Config)) {
	t.Helper()
	cfg := testConfig(s.issuerURL())
	withTwoScopeAPIs(cfg)
	if edit != nil {
		edit(cfg)
	}
	if err := s.iss.Reload(cfg); err != nil {
		t.Fatal(err)
	}
}

// TestRedTeamClientIDVariantsDoNotInherit: a client removed while one
// whose ID differs from it only in case, or only in its Unicode form
// (NFC "Café" against NFD "Cafe\u0301"), is added with the same secret
// and scopes, leaves its tokens ended: the grant names the client byte
// for byte, and no variant picks them up, reference tokens and JWTs
// alike, at every API.
func TestRedTeamClientIDVariantsDoNotInherit(t *testing.T) {
	const nfc, nfd, upper = "Caf\u00e9", "Cafe\u0301", "CAF\u00c9"
	both := []string{scope.ConnectWebAPI, scope.AdminWebAPI}
	client := func(id, kind string) issuer.ClientConfig {
		return issuer.ClientConfig{ClientID: id, SecretHashes: []string{secret.HashSHA256(refSecret).String()}, Scopes: both, AccessTokenType: kind}
	}
	for _, kind := range []string{"reference", "jwt"} {
		t.Run(kind, func(t *testing.T) {
			s := newServer(t, func(c *issuer.Config) { withTwoScopeAPIs(c); c.Clients = append(c.Clients, client(nfc, kind)) })
			tok := tokenFor(t, s, nfc, refSecret, "scope", strings.Join(both, " "))
			if a := introspect(t, s, "both-api", bothAPISec, tok); a.body["active"] != true || a.body["client_id"] != nfc {
				t.Fatalf("before the reload: %s", a.raw)
			}
			reload(t, s, func(c *issuer.Config) { c.Clients = append(c.Clients, client(nfd, kind), client(upper, kind)) })
			for api, pass := range apiSecrets {
				if a := introspect(t, s, api, pass, tok); a.raw != inactiveAnswer {
					t.Errorf("%s, after %q was removed and %q and %q added: %s", api, nfc, nfd, upper, a.raw)
				}
			}
		})
	}
}

// TestRedTeamIdentityServerProfileEndsRemovedClients: under the
// identityserver profile (scope an array, no sub, aud the API resources'
// names), a removed client's JWTs and reference tokens are inactive, and
// a scope taken leaves only the other in the answer.
func TestRedTeamIdentityServerProfileEndsRemovedClients(t *testing.T) {
	both := []string{scope.ConnectWebAPI, scope.AdminWebAPI}
	for _, c := range []struct {
		name, client string
		edit         func(*issuer.ClientConfig) // nil removes the client
		want         string                     // both-api's scope after; "" inactive
	}{
		{"removed, JWT", "connect", nil, ""},
		{"removed, reference", "ref-both", nil, ""},
		{"a scope taken, JWT", "connect", func(cc *issuer.ClientConfig) { cc.Scopes = []string{scope.AdminWebAPI} }, scope.AdminWebAPI},
		{"a scope taken, reference", "ref-both", func(cc *issuer.ClientConfig) { cc.Scopes = []string{scope.ConnectWebAPI} }, scope.ConnectWebAPI},
	} {
		t.Run(c.name, func(t *testing.T) {
			profile := func(cfg *issuer.Config) { withTwoScopeAPIs(cfg); cfg.Profile = "identityserver" }
			s := newServer(t, profile)
			pass := map[string]string{"connect": connectSecret, "ref-both": refSecret}[c.client]
			tok := tokenFor(t, s, c.client, pass, "scope", strings.Join(both, " "))
			if a := introspect(t, s, "both-api", bothAPISec, tok); a.body["active"] != true || !sameScopes(a.body["scope"], strings.Join(both, " ")) {
				t.Fatalf("before: %s", a.raw)
			}
			reload(t, s, func(cfg *issuer.Config) {
				cfg.Profile = "identityserver"
				i := slices.IndexFunc(cfg.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == c.client })
				if c.edit == nil {
					cfg.Clients = slices.Delete(cfg.Clients, i, i+1)
				} else {
					c.edit(&cfg.Clients[i])
				}
			})
			a := introspect(t, s, "both-api", bothAPISec, tok)
			switch {
			case c.want == "" && a.raw != inactiveAnswer:
				t.Errorf("after: %s, want exactly inactive", a.raw)
			case c.want != "" && (a.body["active"] != true || a.body["scope"] != c.want):
				t.Errorf("after: %s, want active with %q alone", a.raw, c.want)
			}
		})
	}
}

// TestRedTeamKeyRemovedAtTheSameReload: a JWT signed by a key the reload
// removes is inactive even though its client stays; one signed by a key
// the reload keeps is inactive once its client is removed; the same
// reload doing both leaves nothing active.
func TestRedTeamKeyRemovedAtTheSameReload(t *testing.T) {
	k1, k2 := generate("ES256"), generate("ES256")
	withKeys := func(ks ...issuer.KeyConfig) func(*issuer.Config) {
		return func(c *issuer.Config) { c.EphemeralKey, c.Keys = false, ks }
	}
	for _, c := range []struct {
		name         string
		keys         []issuer.KeyConfig
		removeClient bool
	}{
		{"signing key removed, client kept", []issuer.KeyConfig{{Key: k2.Private}}, false},
		{"signing key kept (no longer first), client removed", []issuer.KeyConfig{{Key: k2.Private}, {Key: k1.Private}}, true},
		{"both at once", []issuer.KeyConfig{{Key: k2.Private}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, func(cfg *issuer.Config) { withTwoScopeAPIs(cfg); withKeys(issuer.KeyConfig{Key: k1.Private})(cfg) })
			tok := tokenFor(t, s, "connect", connectSecret, "scope", scope.AdminWebAPI)
			reload(t, s, func(cfg *issuer.Config) {
				withKeys(c.keys...)(cfg)
				if c.removeClient {
					cfg.Clients = slices.DeleteFunc(cfg.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == "connect" })
				}
			})
			if a := introspect(t, s, "both-api", bothAPISec, tok); a.raw != inactiveAnswer {
				t.Errorf("%s", a.raw)
			}
		})
	}
}

// TestRedTeamOtherAPIsLearnNothing: a token of a client, asked about by an
// API resource that owns none of its scopes, is exactly inactive before
// and after a reload; one that shares a scope is told of that scope
// alone, and of nothing after the client lost it.
func TestRedTeamOtherAPIsLearnNothing(t *testing.T) {
	s := newServer(t, withTwoScopeAPIs)
	for _, tok := range []string{
		tokenFor(t, s, "ref", refSecret, "scope", scope.AdminWebAPI),
		tokenFor(t, s, "admin", adminSecret, "scope", scope.AdminWebAPI),
	} {
		if a := introspect(t, s, "connect-api", connectAPISec, tok); a.raw != inactiveAnswer {
			t.Errorf("connect-api about a token of %s alone: %s", scope.AdminWebAPI, a.raw)
		}
	}
	tok := tokenFor(t, s, "ref-both", refSecret, "scope", scope.ConnectWebAPI+" "+scope.AdminWebAPI)
	if a := introspect(t, s, "connect-api", connectAPISec, tok); a.body["scope"] != scope.ConnectWebAPI {
		t.Errorf("connect-api: %s, want %s alone", a.raw, scope.ConnectWebAPI)
	}
	reload(t, s, func(c *issuer.Config) {
		i := slices.IndexFunc(c.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == "ref-both" })
		c.Clients[i].Scopes = []string{scope.AdminWebAPI}
	})
	if a := introspect(t, s, "connect-api", connectAPISec, tok); a.raw != inactiveAnswer {
		t.Errorf("connect-api after the client lost %s: %s", scope.ConnectWebAPI, a.raw)
	}
}

// TestRedTeamReloadUnderIntrospectionLoad: while workers introspect a
// removed-to-be client's reference token and JWT in a loop, a reload
// removes it; every introspection that starts once the reload has
// returned (and each worker has finished the one it was in) answers
// exactly inactive, however many there are.
func TestRedTeamReloadUnderIntrospectionLoad(t *testing.T) {
	s := newServer(t, withTwoScopeAPIs)
	ref := tokenFor(t, s, "ref-both", refSecret, "scope", scope.AdminWebAPI)
	jwt := tokenFor(t, s, "connect", connectSecret, "scope", scope.AdminWebAPI)
	var after atomic.Bool
	var checked, active atomic.Int64
	var mu sync.Mutex
	var seen []string
	l := startLoad(4, func() {
		counting := after.Load()
		for _, tok := range []string{ref, jwt} {
			raw, err := s.iss.IntrospectToken(context.Background(), "both-api", tok)
			if err != nil {
				t.Error(err)
				return
			}
			if counting {
				checked.Add(1)
				if string(raw) != inactiveAnswer {
					active.Add(1)
					mu.Lock()
					seen = append(seen, string(raw))
					mu.Unlock()
				}
			}
		}
	})
	l.settle()
	reload(t, s, func(c *issuer.Config) {
		c.Clients = slices.DeleteFunc(c.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == "ref-both" || cc.ClientID == "connect" })
	})
	l.settle() // every worker finished the introspection it was in
	after.Store(true)
	l.settle()
	l.settle()
	l.end()
	if checked.Load() == 0 || active.Load() != 0 {
		t.Fatalf("%d of %d introspections after the reload answered active: %v", active.Load(), checked.Load(), seen)
	}
}

// TestRedTeamAudienceTakenFromAClient (finding F1): a reload that takes
// an audience from a client (it may no longer ask for resource
// https://api.example/orders) ends its reference tokens and JWTs that
// name that resource at introspection, also one asked for two resources
// of which it keeps the other. They stayed active, aud and all, for up
// to their lifetime (a day at most): scopes were filtered by the
// client's current registration, audiences were not. Under the
// identityserver profile a client without an audience of its own has
// the API resources of its scopes as audience, so a scope taken takes
// its API resource from the answer's aud with the scope (the token lives
// on for its other scope), and an audience of its own given to it ends
// its tokens for the API resources.
func TestRedTeamAudienceTakenFromAClient(t *testing.T) {
	both := []string{scope.ConnectWebAPI, scope.AdminWebAPI}
	for _, c := range []struct {
		name    string
		profile string
		before  issuer.ClientConfig // the client "multi", without ID, secret and kind
		ask     []string            // the token request's parameters
		edit    func(*issuer.ClientConfig)
		want    []string // both-api's answer's aud after the reload; nil: inactive
	}{
		{"the resource asked for taken", "rfc",
			issuer.ClientConfig{Scopes: []string{scope.AdminWebAPI}, Audience: []string{ordersAPI, billingAPI}},
			[]string{"scope", scope.AdminWebAPI, "resource", ordersAPI},
			func(cc *issuer.ClientConfig) { cc.Audience = []string{billingAPI} }, nil},
		{"one of the two resources asked for taken", "rfc",
			issuer.ClientConfig{Scopes: []string{scope.AdminWebAPI}, Audience: []string{ordersAPI, billingAPI}},
			[]string{"scope", scope.AdminWebAPI, "resource", ordersAPI, "resource", billingAPI},
			func(cc *issuer.ClientConfig) { cc.Audience = []string{billingAPI} }, nil},
		{"the audience kept", "rfc",
			issuer.ClientConfig{Scopes: []string{scope.AdminWebAPI}, Audience: []string{ordersAPI, billingAPI}},
			[]string{"scope", scope.AdminWebAPI, "resource", ordersAPI},
			func(cc *issuer.ClientConfig) { cc.Audience = []string{billingAPI, ordersAPI} }, []string{ordersAPI}},
		{"identityserver, a scope taken takes its API resource", "identityserver",
			issuer.ClientConfig{Scopes: both}, []string{"scope", strings.Join(both, " ")},
			func(cc *issuer.ClientConfig) { cc.Scopes = []string{scope.AdminWebAPI} }, []string{"admin-api", "both-api"}},
		{"identityserver, an audience of its own given", "identityserver",
			issuer.ClientConfig{Scopes: both}, []string{"scope", strings.Join(both, " ")},
			func(cc *issuer.ClientConfig) { cc.Audience = []string{ordersAPI} }, nil},
	} {
		for _, kind := range []string{"reference", "jwt"} {
			t.Run(c.name+", "+kind, func(t *testing.T) {
				with := func(cfg *issuer.Config, cc issuer.ClientConfig) {
					withTwoScopeAPIs(cfg)
					cfg.Profile = c.profile
					cc.ClientID, cc.SecretHashes, cc.AccessTokenType = "multi", []string{secret.HashSHA256("multi-secret").String()}, kind
					cfg.Clients = append(cfg.Clients, cc)
				}
				s := newServer(t, func(cfg *issuer.Config) { with(cfg, c.before) })
				tok := tokenFor(t, s, "multi", "multi-secret", c.ask...)
				if a := introspect(t, s, "both-api", bothAPISec, tok); a.body["active"] != true {
					t.Fatalf("before: %s", a.raw)
				}
				cfg := testConfig(s.issuerURL())
				after := c.before
				after.Scopes, after.Audience = slices.Clone(after.Scopes), slices.Clone(after.Audience)
				c.edit(&after)
				with(cfg, after)
				if err := s.iss.Reload(cfg); err != nil {
					t.Fatal(err)
				}
				a := introspect(t, s, "both-api", bothAPISec, tok)
				var aud []string
				for _, v := range asSlice(a.body["aud"]) {
					aud = append(aud, v.(string))
				}
				switch {
				case c.want == nil && a.raw != inactiveAnswer:
					t.Errorf("after the reload: %s, want exactly inactive", a.raw)
				case c.want != nil && (a.body["active"] != true || !slices.Equal(aud, c.want)):
					t.Errorf("after the reload: %s, want active with aud %q", a.raw, c.want)
				}
			})
		}
	}
}

// asSlice is a JSON value as a slice: an array's elements, or a string
// alone.
func asSlice(v any) []any {
	switch v := v.(type) {
	case []any:
		return v
	case nil:
		return nil
	}
	return []any{v}
}

// gatedStore is a tokenstore.Memory whose Get, once armed, tells the test
// it was entered and waits for the test to let it answer: a store that
// answers slowly (Redis within its 150 ms bound), at a moment the test
// chooses.
type gatedStore struct {
	*tokenstore.Memory
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Get(ctx context.Context, k tokenstore.Key, now time.Time) (tokenstore.Grant, bool, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Memory.Get(ctx, k, now)
}

// TestRedTeamIntrospectionInFlightAcrossAReload (finding F2,
// informational): an introspection that authenticated before a reload
// that removes the client, and whose store look-up answers after the
// reload returned, answers exactly inactive: it decides by the
// configuration current once the grant is found, not the one it started
// with; so does one whose API resource the reload removed. It answered
// active with the removed client's scopes, for a window of one request (a
// store call, at most 150 ms with Redis, plus the API's authentication,
// which a bcrypt hash and the failure floor can make long), which an
// Introspector may then cache for CacheMaxAge; SECURITY.md says a token
// ends "once that replica has reloaded".
func TestRedTeamIntrospectionInFlightAcrossAReload(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*issuer.Config)
	}{
		{"the client removed", func(c *issuer.Config) {
			c.Clients = slices.DeleteFunc(c.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == "ref-both" })
		}},
		{"the API removed", func(c *issuer.Config) {
			c.APIResources = slices.DeleteFunc(c.APIResources, func(ac issuer.APIResourceConfig) bool { return ac.Name == "both-api" })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &gatedStore{Memory: &tokenstore.Memory{}, entered: make(chan struct{}), release: make(chan struct{})}
			s := newServer(t, withTwoScopeAPIs, issuer.WithTokenStore(g))
			tok := tokenFor(t, s, "ref-both", refSecret, "scope", scope.AdminWebAPI)
			g.armed.Store(true)
			done := make(chan answer, 1)
			go func() { done <- introspect(t, s, "both-api", bothAPISec, tok) }()
			<-g.entered
			reload(t, s, c.edit)
			close(g.release) // the reload has returned: the answer comes after it
			if a := <-done; a.raw != inactiveAnswer {
				t.Fatalf("an introspection answered after the reload: %s", a.raw)
			}
		})
	}
}

// TestRedTeamRequireDPoPTurnedOn (finding F1, the same gap): a reload
// that turns requireDPoP on for a client (its bearer tokens leaked, say)
// ends the bearer tokens it was issued before at introspection, as one of
// the wrong kind is. They stayed active, token_type Bearer, until their
// exp: stillIssued asked whether the client would still be issued a token
// of that kind (reference or JWT), not whether it would still be issued
// one unbound. A token of the client bound to a key stays active.
func TestRedTeamRequireDPoPTurnedOn(t *testing.T) {
	s := newServer(t, withTwoScopeAPIs)
	for _, c := range []struct{ client, pass string }{{"ref-both", refSecret}, {"connect", connectSecret}} {
		tok := tokenFor(t, s, c.client, c.pass, "scope", scope.AdminWebAPI)
		b := dpopToken(t, s, c.client, c.pass, proofFor(t, dpopKey(t), s.tokenURL(), ""))
		bound, _ := b.body["access_token"].(string)
		if b.status != 200 || b.body["token_type"] != "DPoP" {
			t.Fatalf("%s with a proof: %d %s", c.client, b.status, b.raw)
		}
		reload(t, s, func(cfg *issuer.Config) {
			i := slices.IndexFunc(cfg.Clients, func(cc issuer.ClientConfig) bool { return cc.ClientID == c.client })
			cfg.Clients[i].RequireDPoP = true
		})
		if a := introspect(t, s, "both-api", bothAPISec, tok); a.raw != inactiveAnswer {
			t.Errorf("%s's bearer token, after requireDPoP was turned on: %s", c.client, a.raw)
		}
		if a := introspect(t, s, "both-api", bothAPISec, bound); a.body["active"] != true || a.body["token_type"] != "DPoP" {
			t.Errorf("%s's bound token, after requireDPoP was turned on: %s", c.client, a.raw)
		}
		reload(t, s, nil)
	}
}
