package issuer_test

import (
	"slices"
	"testing"

	"github.com/idsauth/idsauth/issuer"
	"github.com/idsauth/idsauth/scope"
	"github.com/idsauth/idsauth/secret"
	"github.com/idsauth/idsauth/tokenstore"
)

// activeAt reports whether introspection by admin-api at s answers tok
// active.
func activeAt(t *testing.T, s *server, tok string) bool {
	t.Helper()
	a := introspect(t, s, "admin-api", adminAPISec, tok)
	if a.status != 200 {
		t.Fatalf("introspection: %d %s", a.status, a.raw)
	}
	return a.body["active"] == true
}

// tokensOf returns a JWT of "ep" and a reference token of "ep-ref", each
// with pass.
func tokensOf(t *testing.T, s *server, pass string) []string {
	t.Helper()
	return []string{referenceToken(t, s, "ep", pass, scope.AdminWebAPI), referenceToken(t, s, "ep-ref", pass, scope.AdminWebAPI)}
}

func epochClients(pass string, epoch uint64) []issuer.ClientConfig {
	hash := []string{secret.HashSHA256(pass).String()}
	return []issuer.ClientConfig{
		{ClientID: "ep", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}, Epoch: epoch},
		{ClientID: "ep-ref", SecretHashes: hash, Scopes: []string{scope.AdminWebAPI}, AccessTokenType: "reference", Epoch: epoch},
	}
}

// TestRegisteredTokensStayDead: a registered client disabled (left out
// of the set) and served again under a new Epoch, or removed and
// registered again, is a new client for the tokens issued before: they
// never answer active again, JWT or reference, while a token issued
// after, in the same second, is active; the same set given again (a
// rotation that keeps the previous secret, another client's change)
// ends nothing.
func TestRegisteredTokensStayDead(t *testing.T) {
	s := newServer(t, withReference)
	set := func(clients []issuer.ClientConfig) {
		t.Helper()
		if err := s.iss.SetRegistered(clients, nil); err != nil {
			t.Fatal(err)
		}
	}
	set(epochClients("first", 7))
	before := tokensOf(t, s, "first")
	set(append(epochClients("first", 7), registeredClient("another", false)))
	for _, tok := range before {
		if !activeAt(t, s, tok) {
			t.Fatalf("a change of another client ended %.12s...", tok)
		}
	}
	set(nil) // disabled
	for _, tok := range before {
		if activeAt(t, s, tok) {
			t.Errorf("the token of a disabled client is active: %.12s...", tok)
		}
	}
	set(epochClients("second", 8)) // enabled again, its secret dropped
	for _, tok := range before {
		if activeAt(t, s, tok) {
			t.Errorf("a token issued before the disable is active again: %.12s...", tok)
		}
	}
	for _, tok := range tokensOf(t, s, "second") {
		if !activeAt(t, s, tok) {
			t.Errorf("a token issued after the enable is inactive: %.12s...", tok)
		}
	}
}

// TestFileTokensStayDead: a client of the configuration file removed by a
// reload, or stripped of every secret, ends its tokens for good: put back,
// it is a new client for them, on this replica and on one that shares the
// token store, started after (it reads the record of epochs there); a
// secret added beside the old ends nothing.
func TestFileTokensStayDead(t *testing.T) {
	store := &tokenstore.Memory{}
	key := generate("ES256")
	edit := func(with []issuer.ClientConfig) func(*issuer.Config) {
		return func(c *issuer.Config) {
			c.EphemeralKey = false
			c.Keys = []issuer.KeyConfig{{Key: key.Private}}
			withReference(c)
			c.Clients = append(c.Clients, with...)
		}
	}
	s := newServer(t, edit(epochClients("first", 0)), issuer.WithTokenStore(store))
	reload := func(with []issuer.ClientConfig) {
		t.Helper()
		cfg := testConfig(s.issuerURL())
		edit(with)(cfg)
		if err := s.iss.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	before := tokensOf(t, s, "first")
	reload(epochClients("first", 0))
	for _, tok := range before {
		if !activeAt(t, s, tok) {
			t.Fatalf("a reload that changes nothing ended %.12s...", tok)
		}
	}
	reload(nil)
	reload(epochClients("first", 0)) // put back as it was
	for _, tok := range before {
		if activeAt(t, s, tok) {
			t.Errorf("a token of a client removed and put back is active: %.12s...", tok)
		}
	}
	after := tokensOf(t, s, "first")
	for _, tok := range after {
		if !activeAt(t, s, tok) {
			t.Errorf("a token issued after the client came back is inactive: %.12s...", tok)
		}
	}
	// A replica of the same issuer URL sharing the store, started now,
	// knows the client ended.
	r := newServer(t, func(c *issuer.Config) {
		c.Issuer = s.issuerURL()
		edit(epochClients("first", 0))(c)
	}, issuer.WithTokenStore(store))
	for _, tok := range before {
		if activeAt(t, r, tok) {
			t.Errorf("another replica answers active a token of before the removal: %.12s...", tok)
		}
	}
	for _, tok := range after {
		if !activeAt(t, r, tok) {
			t.Errorf("another replica answers inactive a token of after: %.12s...", tok)
		}
	}
	// A secret added beside the old ends nothing; every secret replaced
	// ends the tokens obtained before.
	both := epochClients("first", 0)
	for i := range both {
		both[i].SecretHashes = append(both[i].SecretHashes, secret.HashSHA256("second").String())
	}
	reload(both)
	for _, tok := range after {
		if !activeAt(t, s, tok) {
			t.Errorf("a secret added beside ended %.12s...", tok)
		}
	}
	reload(epochClients("second", 0)) // the rotation done: first dropped, second kept
	for _, tok := range after {
		if !activeAt(t, s, tok) {
			t.Errorf("the previous secret dropped, the one kept, and %.12s... is inactive", tok)
		}
	}
	second := tokensOf(t, s, "second")
	reload(epochClients("third", 0))
	for _, tok := range slices.Concat(after, second) {
		if activeAt(t, s, tok) {
			t.Errorf("every secret replaced, and %.12s... is active", tok)
		}
	}
	for _, tok := range tokensOf(t, s, "third") {
		if !activeAt(t, s, tok) {
			t.Errorf("a token of the new secret is inactive: %.12s...", tok)
		}
	}
}

// TestReplicaThatSkippedARemovalAgrees: replica A reloads without a file
// client and then with it again; replica B, sharing the token store,
// reloads only the file of after. B takes the epoch A recorded: the
// tokens of before are inactive at both, and each answers the other's new
// tokens active. (The red team of issue 39: B answered A's new tokens
// inactive and the old ones active until it restarted.)
func TestReplicaThatSkippedARemovalAgrees(t *testing.T) {
	store := &tokenstore.Memory{}
	key := generate("ES256")
	edit := func(with []issuer.ClientConfig, url string) func(*issuer.Config) {
		return func(c *issuer.Config) {
			if url != "" {
				c.Issuer = url
			}
			c.EphemeralKey = false
			c.Keys = []issuer.KeyConfig{{Key: key.Private}}
			withReference(c)
			c.Clients = append(c.Clients, with...)
		}
	}
	a := newServer(t, edit(epochClients("first", 0), ""), issuer.WithTokenStore(store))
	b := newServer(t, edit(epochClients("first", 0), a.issuerURL()), issuer.WithTokenStore(store))
	reload := func(s *server, with []issuer.ClientConfig) {
		t.Helper()
		cfg := testConfig(a.issuerURL())
		edit(with, a.issuerURL())(cfg)
		if err := s.iss.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	before := tokensOf(t, a, "first")
	reload(a, nil)
	reload(a, epochClients("first", 0))
	reload(b, epochClients("first", 0)) // the file of after alone
	for _, s := range []*server{a, b} {
		for _, tok := range before {
			if activeAt(t, s, tok) {
				t.Errorf("a token of before the removal is active: %.12s...", tok)
			}
		}
	}
	for _, from := range []*server{a, b} {
		for _, tok := range tokensOf(t, from, "first") {
			for _, at := range []*server{a, b} {
				if !activeAt(t, at, tok) {
					t.Errorf("a new token is inactive at the other replica: %.12s...", tok)
				}
			}
		}
	}
}
